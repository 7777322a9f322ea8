"""How `wap` shows things: rich tables and one-line summaries, no logic."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from local.ops.operations import BranchRow, IngestView, Progress, RunRow

STATUS_STYLES = {
    "PUBLISHED": "green",
    "AUDIT_FAILED": "red",
    "REJECTED": "red",
    "JOB_FAILED": "red",
    "PUBLISH_FAILED": "red",
    "DISCARDED": "dim",
    "RUNNING": "yellow",
    "QUEUED": "yellow",
    "RECEIVED": "yellow",
}


def make_console() -> Console:
    """A console that does not wrap ids and branch names when output is not a terminal."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console(highlight=False)
    return Console(width=200, highlight=False)


def status_text(status: str | None) -> Text:
    return Text(status or "-", style=STATUS_STYLES.get(status or "", ""))


def age_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{int(seconds)}s"
    if minutes < 120:
        return f"{minutes}m"
    hours = minutes // 60
    return f"{hours}h" if hours < 48 else f"{hours // 24}d"


def runs_table(rows: Sequence[RunRow]) -> Table:
    table = Table(title="Ingests (newest first)", title_justify="left")
    for name in ("ingest id", "table", "source", "outcome", "branch", "when"):
        table.add_column(name, no_wrap=name in ("ingest id", "branch", "outcome"))
    for r in rows:
        table.add_row(
            r.ingest_id,
            r.table or "-",
            r.source or "-",
            status_text(r.status),
            r.branch or "-",
            r.when or "-",
        )
    return table


def branches_table(rows: Sequence[BranchRow]) -> Table:
    table = Table(title="Open WAP branches", title_justify="left")
    for name in ("branch", "table", "ingest id", "outcome", "age", "reason"):
        table.add_column(name, no_wrap=name in ("branch", "ingest id", "outcome"))
    for r in rows:
        table.add_row(
            r.name,
            r.table or "-",
            r.ingest_id or "-",
            status_text(r.status or "no ledger record"),
            age_text(r.age_seconds),
            r.reason or "-",
        )
    return table


# What the state machine's states (statemachine/ingest.asl.json) mean to someone waiting.
STEP_TEXT = {
    "Configure": "starting",
    "WaitForJob": "Spark job writing + auditing",
    "CheckJob": "Spark job writing + auditing",
    "JobDone?": "reading the report",
    "Publish": "merging into main",
    "Published?": "merging into main",
    "AdoptRebasedRun": "main moved: re-running on a fresh branch",
    "Alert?": "alerting",
    "Alert": "alerting Slack",
    "Finish": "recording the outcome",
}


def progress_view(items: Sequence[Progress], elapsed: float) -> Group:
    lines = [Text(f"Running {len(items)} ingest(s)… {elapsed:.0f}s")]
    for p in items:
        line = Text(f"  {p.key.rsplit('/', 1)[-1]}  ")
        line.append_text(status_text(p.status))
        if p.step:
            line.append(f"  · {STEP_TEXT.get(p.step, p.step)}", style="dim")
        lines.append(line)
    return Group(*lines)


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return str(value)


def show_view(view: IngestView) -> list[Any]:
    """Renderables for `wap show`: summary, counts, checks, violating samples."""
    r, report = view.record, view.report or {}
    out: list[Any] = []
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    branch = r.get("branch") or "-"
    if r.get("branch"):
        branch += "  (open)" if view.branch_open else "  (deleted)"
    for label, value in (
        ("ingest", r["ingest_id"]),
        ("table", r.get("table") or "-"),
        ("source", r.get("source_uri") or "-"),
        ("outcome", status_text(r.get("status"))),
        ("reason", r.get("error") or "-"),
        ("branch", branch),
        ("rows written", _cell(r.get("rows_written", report.get("rows_written")))),
        ("finished", r.get("finished_at") or "-"),
    ):
        summary.add_row(label, value)
    if r.get("published_by"):
        summary.add_row("published by", f"{r['published_by']}: {r.get('publish_reason')}")
    if r.get("discard_reason"):
        summary.add_row("discarded", r["discard_reason"])
    out.append(summary)

    counts = Text("\nrows  main: ")
    counts.append("-" if view.main_rows is None else str(view.main_rows), style="bold")
    if view.branch_open:
        counts.append("   branch: ")
        counts.append("-" if view.branch_rows is None else str(view.branch_rows), style="bold")
    out.append(counts)

    if view.branch_open and view.branch_rows is not None and report.get("rows_written"):
        counts.append(f"   ({report['rows_written']} written by this ingest)")
    changes = report.get("schema_changes") or []
    created = [ch for ch in changes if ch.get("change") == "create_table"]
    if created:
        out.append(Text(f"table created by this ingest ({len(created)} columns)"))
    for change in changes:
        if change.get("change") != "create_table":
            out.append(Text(f"schema change: {_cell(change)}"))
    checks = report.get("checks") or []
    if checks:
        table = Table(title="Audit checks", title_justify="left")
        for name in ("check", "kind", "columns", "severity", "status", "violations", "observed"):
            table.add_column(name)
        for ch in checks:
            table.add_row(
                ch.get("name", "-"),
                ch.get("kind", "-"),
                ", ".join(ch.get("columns") or []) or "-",
                ch.get("severity", "-"),
                Text(
                    ch.get("status", "-"), style="green" if ch.get("status") == "passed" else "red"
                ),
                _cell(ch.get("violations")),
                _cell(ch.get("observed")),
            )
        out.append(table)
    elif view.report is None:
        out.append(Text("no audit report (the ingest stopped before the job wrote one)"))
    for ch in view.failed_checks:
        samples = ch.get("samples") or []
        if not samples:
            continue
        table = Table(title=f"Sample violating rows: {ch.get('name')}", title_justify="left")
        columns = list(dict.fromkeys(k for row in samples for k in row))
        for name in columns:
            table.add_column(name)
        for row in samples:
            table.add_row(*[_cell(row.get(k)) for k in columns])
        out.append(table)
    return out
