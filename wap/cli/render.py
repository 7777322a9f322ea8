"""How `wap` shows things: rich tables and one-line summaries, no logic."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from contracts.lifecycle import Status
from contracts.report import FAILED, AuditReport
from contracts.table_config import quarantine_table_name
from ingestion.arrivals import SubjectFreshness
from ingestion.ledger import QueueStat, Record
from ingestion.ledger.records import record_attributes, tables_of
from ingestion.time_split import time_split, upload_to_outcome_seconds
from lakeview.check_sql import first_rows_query, violation_query
from wap.ops.operations import BatchRow, BranchRow, IngestView, Progress, RunRow, discarded_by
from wap.ops.report_view import CheckLine, ReportView, rows_written_of
from wap.text import age_text

STATUS_STYLES = {
    Status.PUBLISHED: "green",
    Status.AUDIT_FAILED: "red",
    Status.REJECTED: "red",
    Status.JOB_FAILED: "red",
    Status.PUBLISH_FAILED: "red",
    Status.DISCARDED: "dim",
    Status.RUNNING: "yellow",
    Status.QUEUED: "yellow",
    Status.RECEIVED: "yellow",
}


def make_console() -> Console:
    """A console that does not wrap ids and branch names when output is not a terminal."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console(highlight=False)
    return Console(width=200, highlight=False)


def status_text(status: str | None) -> Text:
    return Text(status or "-", style=STATUS_STYLES.get(status or "", ""))


_NO_WRAP = frozenset({"ingest id", "branch", "outcome"})  # ids and statuses stay whole


def _listing(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(name, no_wrap=name in _NO_WRAP)
    for row in rows:
        table.add_row(*[cell if isinstance(cell, Text) else (cell or "-") for cell in row])
    return table


def cost_text(usd: float | None) -> str | None:
    """'$0.0123' (to a hundredth of a cent: a small load costs fractions of a cent)."""
    return None if usd is None else f"${usd:.4f}"


def runs_table(rows: Sequence[RunRow]) -> Table:
    """The ingests; a batch column only when some ingest ran in a batch, a quarantined
    one only when some ingest set rows aside, a cost one when EMR billed some load (they
    cost width; `unknown` where the stack's region has no price)."""
    batched = any(r.batch_id for r in rows)
    quarantined = any(r.quarantined_rows for r in rows)
    costed = any(r.cost_usd is not None or r.cost_unknown for r in rows)
    columns = (
        "ingest id",
        "table",
        "source",
        "outcome",
        *(("quarantined",) if quarantined else ()),
        *(("cost",) if costed else ()),
        *(("batch",) if batched else ()),
        "branch",
        "when",
    )
    return _listing(
        "Ingests (newest first)",
        columns,
        [
            (
                r.ingest_id,
                r.table,
                r.source,
                status_text(r.status),
                *((str(r.quarantined_rows or 0),) if quarantined else ()),
                *(
                    (cost_text(r.cost_usd) or ("unknown" if r.cost_unknown else None),)
                    if costed
                    else ()
                ),
                *((r.batch_id,) if batched else ()),
                r.branch,
                r.when,
            )
            for r in rows
        ],
    )


def _run_cost(row: RunRow) -> str | None:
    return cost_text(row.cost_usd) or ("unknown" if row.cost_unknown else None)


def batches_table(rows: Sequence[BatchRow]) -> Table:
    """Runs over several files: SPLIT means their files went back to the queue, the good
    ones together and each failing one alone."""
    return _listing(
        "Batches (newest first)",
        ("batch", "table", "files", "outcome", "cost", "branch", "when", "reason"),
        [
            (
                r.batch_id,
                r.table,
                str(r.files),
                status_text(r.status),
                cost_text(r.cost_usd),
                r.branch,
                r.when,
                r.reason,
            )
            for r in rows
        ],
    )


def branches_table(rows: Sequence[BranchRow]) -> Table:
    return _listing(
        "Open WAP branches",
        ("branch", "table", "ingest id", "outcome", "age", "reason"),
        [
            (
                r.name,
                r.table,
                r.ingest_id,
                status_text(r.status or "no ledger record"),
                age_text(r.age_seconds),
                r.reason,
            )
            for r in rows
        ],
    )


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
    shown = _Shown.of(view)
    return [
        _summary(shown),
        rows_part(view, shown),
        *_schema_changes(shown.report.schema_changes),
        *_files(shown.report),
        *_checks(shown.report),
        *[_samples_table(check) for check in shown.report.sampled_checks],
    ]


@dataclass(frozen=True)
class _Shown:
    """One ingest as `wap show` prints it. The record may lack any field (an ingest can
    stop at any step), so its fallbacks are taken here, once: "-" for what it lacks or
    leaves empty. What the report says is its shared view (wap.ops.report_view)."""

    ingest_id: str
    table: str
    source: str
    status: str | None
    reason: str
    branch: str
    rows_written: str
    finished: str
    published_by: str | None
    discarded: str | None
    quarantined: str | None  # rows set aside in the quarantine table, and where
    cost: str | None  # what the load cost, and the resources EMR billed
    time: str | None  # where the time went, upload to outcome
    main_rows: str
    branch_rows: str | None  # None: the branch is gone, there is nothing to count
    written: Any  # the report's count, shown next to the branch's
    report: ReportView

    @classmethod
    def of(cls, view: IngestView) -> _Shown:
        r, report = view.record, ReportView.of(view.report)
        branch = r.branch
        if branch:
            branch += "  (open)" if view.branch_open else "  (deleted)"
        counted = view.branch_open and view.branch_rows is not None
        branch_rows = "-" if view.branch_rows is None else str(view.branch_rows)
        return cls(
            ingest_id=r.ingest_id,
            table=", ".join(tables_of(r)) or "-",
            source=r.source_uri or "-",
            status=r.status,
            reason=r.error or "-",
            branch=branch or "-",
            rows_written=_cell(rows_written_of(r, report)),
            finished=r.finished_at or "-",
            published_by=(f"{r.published_by}: {r.publish_reason}" if r.published_by else None),
            discarded=r.discard_reason or None,
            quarantined=_quarantined(r, view.report),
            cost=_cost(r),
            time=_time(r),
            main_rows="-" if view.main_rows is None else str(view.main_rows),
            branch_rows=branch_rows if view.branch_open else None,
            written=report.rows_written if counted else None,
            report=report,
        )


def _quarantined(record: Record, report: AuditReport | None) -> str | None:
    """'3 rows in ns.t__quarantine' when the ingest set rows aside, else None."""
    count = record.quarantined_rows
    if count is None and report is not None:
        count = report.quarantined_rows
    if not count:
        return None
    table = record.table or (report.table if report is not None else "")
    return f"{count} row{'s' if count != 1 else ''} in {quarantine_table_name(table)}"


def _cost(record: Record) -> str | None:
    """'$0.0123 (0.0400 vCPU-h, 0.1600 GB-h memory, 0.0000 GB-h storage; us-east-1
    prices)', a batch's file saying it is its share; 'unknown (...)' when EMR billed the
    run in a region without prices (contracts/pricing.py); None until EMR billed it."""
    if record.cost_usd is None and record.vcpu_hours is None:
        return None
    billed = (
        f"{record.vcpu_hours or 0:.4f} vCPU-h, {record.memory_gb_hours or 0:.4f} GB-h memory, "
        f"{record.storage_gb_hours or 0:.4f} GB-h storage"
    )
    if record.cost_usd is None:
        return f"unknown ({billed}; no prices for the stack's region: set -c emrPrices=...)"
    share = " its share by bytes of batch " + str(record.batch_id) if _in_batch(record) else ""
    return f"{cost_text(record.cost_usd)}{share} ({billed}; {record.price_region} prices)"


def _in_batch(record: Record) -> bool:
    return bool(getattr(record, "batch_id", None))


def _time(record: Record) -> str | None:
    """'to trigger 2 s · to job submitted 5 s · EMR start-up 65 s · job 50 s · to outcome
    31 s = 153 s from upload'; None before an outcome."""
    phases = time_split(record)
    if not phases:
        return None
    total = upload_to_outcome_seconds(record) or 0
    start = "upload" if record.uploaded_at else "record"
    parts = " · ".join(f"{phase.name} {phase.seconds:.0f} s" for phase in phases)
    return f"{parts} = {total:.0f} s from {start}"


def _summary(shown: _Shown) -> Table:
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    for label, value in (
        ("ingest", shown.ingest_id),
        ("table", shown.table),
        ("source", shown.source),
        ("outcome", status_text(shown.status)),
        ("reason", shown.reason),
        ("branch", shown.branch),
        ("rows written", shown.rows_written),
        ("finished", shown.finished),
    ):
        summary.add_row(label, value)
    if shown.quarantined is not None:
        summary.add_row("quarantined", shown.quarantined)
    if shown.cost is not None:
        summary.add_row("cost", shown.cost)
    if shown.time is not None:
        summary.add_row("time", shown.time)
    if shown.published_by is not None:
        summary.add_row("published by", shown.published_by)
    if shown.discarded is not None:
        summary.add_row("discarded", shown.discarded)
    return summary


def rows_part(view: IngestView, shown: _Shown | None = None) -> Any:
    """`wap show`'s rows: each table's of a multi-table dataset, else main's and the
    branch's."""
    return _dataset_tables(view) if view.tables else _row_counts(shown or _Shown.of(view))


def _row_counts(shown: _Shown) -> Text:
    counts = Text("\nrows  main: ")
    counts.append(shown.main_rows, style="bold")
    if shown.branch_rows is not None:
        counts.append("   branch: ")
        counts.append(shown.branch_rows, style="bold")
    if shown.written:
        counts.append(f"   ({shown.written} written by this ingest)")
    return counts


def _dataset_tables(view: IngestView) -> Table:
    """A multi-table dataset: each table's rows (what `_row_counts` says of one table)."""
    return _listing(
        f"Tables of this dataset ({len(view.tables)}, published together)",
        ("table", "written", "main rows", "branch rows"),
        [
            (
                t.table,
                *("-" if n is None else str(n) for n in (t.written, t.main_rows, t.branch_rows)),
            )
            for t in view.tables
        ],
    )


def _schema_changes(changes: Sequence[Any]) -> list[Text]:
    # A new table's columns are one line, not a "change" each.
    created = [ch for ch in changes if ch.get("change") == "create_table"]
    lines = [Text(f"table created by this ingest ({len(created)} columns)")] if created else []
    return lines + [
        Text(f"schema change: {_cell(ch)}") for ch in changes if ch.get("change") != "create_table"
    ]


def _files(report: ReportView) -> list[Any]:
    """A run over several files: each file that did not pass, and why (the rest passed)."""
    files = report.batch_files
    if not files:
        return []
    failing = [verdict for verdict in files if not verdict.passed]
    title = f"Files: {len(files)} in this run, {len(failing)} did not pass"
    if not failing:
        return [Text(title)]
    return [
        _listing(
            title,
            ("file", "verdict", "rows", "why"),
            [
                (verdict.uri, verdict.status, _cell(verdict.rows), verdict.why)
                for verdict in failing
            ],
        )
    ]


def _checks(report: ReportView) -> list[Any]:
    if report.checks:
        return [_checks_table(report.checks)]
    if not report.present:
        return [Text("no audit report (the ingest stopped before the job wrote one)")]
    return []


def _checks_table(checks: Sequence[CheckLine]) -> Table:
    table = Table(title="Audit checks", title_justify="left")
    # What a learned band or history bound expected, and from which drops.
    explained = any(ch.message for ch in checks)
    names = ("check", "kind", "columns", "severity", "status", "violations", "observed")
    for name in (*names, "expected") if explained else names:
        table.add_column(name)
    for ch in checks:
        status = ch.status or "-"
        cells = [
            ch.name or "-",
            ch.kind or "-",
            ", ".join(ch.columns) or "-",
            ch.severity or "-",
            Text(status, style="green" if ch.passed else "red"),
            _cell(ch.violations),
            _cell(ch.observed),
        ]
        table.add_row(*cells, *([ch.message or "-"] if explained else []))
    return table


def _samples_table(check: CheckLine) -> Table:
    table = Table(title=check.samples_title, title_justify="left")
    columns = check.sample_columns
    for name in columns:
        table.add_column(name)
    for row in check.samples:
        table.add_row(*[_cell(row.get(k)) for k in columns])
    return table


# ---- wap query --------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A query value as JSON/CSV take it: decimals as exact strings, times in ISO-8601."""
    import datetime as dt
    import math
    from decimal import Decimal

    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no NaN/Infinity
        return str(value)
    return value


def _records(rows: Any) -> list[list[Any]]:
    # By position: a query may name two columns alike, which a dict per row would merge.
    columns = [rows.column(i).to_pylist() for i in range(rows.num_columns)]
    return [list(values) for values in zip(*columns, strict=True)] if columns else []


def query_table(rows: Any) -> Table:
    """A query's Arrow rows as a rich table; values are never read as markup."""
    table = Table()
    for name in rows.column_names:
        table.add_column(Text(name))
    for row in _records(rows):
        table.add_row(
            *[Text("null", style="dim") if v is None else Text(_cell(_plain(v))) for v in row]
        )
    return table


def query_csv(rows: Any) -> str:
    """CSV with a header row; NULL is an empty field."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows.column_names)
    for row in _records(rows):
        writer.writerow(["" if v is None else _cell(_plain(v)) for v in row])
    return out.getvalue()


def query_json(rows: Any) -> str:
    """A JSON array with one object per row (decimals as strings, to stay exact); a name
    that repeats keeps its last value, as JSON objects do."""
    names = rows.column_names
    return json.dumps(
        [dict(zip(names, _plain(row), strict=True)) for row in _records(rows)],
        ensure_ascii=False,
        indent=1,
    )


def shell_sql(sql: str) -> str:
    """`sql` as one shell word: in double quotes when nothing in it is special there."""
    if not any(ch in sql for ch in '"$`\\!'):
        return f'"{sql}"'
    return shlex.quote(sql)


def look_lines(
    branch: str, table: str | None, ui_base: str | None, *, wap: str, local: bool
) -> list[str]:
    """Where to look at a failed branch's data: its table in the catalog UI, and SQL."""
    from ingestion.alerting.links import nessie_table_url

    lines = []
    sql = first_rows_query(table) if table else None
    if table and sql:
        lines.append(f"{wap} query {branch} {shell_sql(sql)}")
        url = nessie_table_url(ui_base, branch, table) if ui_base else None
        if url:
            lines.append(f"open {url}" + (f"   (while `{wap} serve` runs)" if local else ""))
    return lines


_SLACK_LINK = re.compile(r"<(https?://[^|>\s]+)\|")


def alert_links(message: dict[str, Any]) -> list[str]:
    """The http(s) links of a Slack message's blocks (`<url|label>`), unescaped, in order."""
    texts = []
    for block in message.get("blocks") or []:
        if isinstance(block.get("text"), dict):
            texts.append(str(block["text"].get("text", "")))
        for element in block.get("elements") or []:
            if isinstance(element, dict):
                texts.append(str(element.get("text", "")))
    urls = [
        url.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        for text in texts
        for url in _SLACK_LINK.findall(text)
    ]
    return list(dict.fromkeys(urls))


def inspect_lines(view: IngestView, ui_base: str | None, *, wap: str, local: bool) -> list[str]:
    """How to look at an open branch: its catalog UI pages, and a `wap query` per failed check."""
    from contracts.catalog_ui import branch_diff_url
    from ingestion.alerting.links import nessie_branch_url, nessie_table_url

    branch, table = view.record.branch, view.record.table
    if not branch or not view.branch_open:
        return []
    lines = []
    branch_url = nessie_branch_url(ui_base, branch) if ui_base else None
    if branch_url:
        lines.append(f"Catalog UI: {branch_url}")
        table_url = nessie_table_url(ui_base, branch, table) if table else None
        if table_url:
            lines.append(f"  {table} on the branch: {table_url}")
        if local:
            lines.append(f"  against main: {branch_diff_url(ui_base, branch)}")
            lines.append(f"  (open them while `{wap} serve` or `{wap} dashboard` runs)")
    queries = [
        (check.name, violation_query(check.to_dict(), table))
        for check in view.failed_checks
        if table and check.status == FAILED
    ]
    queries = [(name, sql) for name, sql in queries if sql]
    if queries:
        lines.append("Violating rows, with SQL on the branch:")
        for name, sql in queries:
            lines.append(f"  {name}: {wap} query {branch} {shell_sql(sql)}")
    return lines


def freshness_table(rows: Sequence[SubjectFreshness]) -> Table:
    """The tables whose config expects drops (`expect:`), late ones first: LATE with what
    was expected and the last publish, or on time."""
    return _listing(
        "Expected arrivals (late first)",
        ("table", "arrival", "expected", "last published", "ago"),
        [
            (
                r.subject,
                Text("LATE", style="bold red") if r.late else Text("on time", style="green"),
                r.expected,
                r.last_published_at or "never",
                age_text(r.age_seconds),
            )
            for r in rows
        ],
    )


def late_lines(rows: Sequence[SubjectFreshness]) -> list[str]:
    """One line per late table, as its alert says it, then what counts as an arrival."""
    late = [f"late: {r.reason}" for r in rows if r.late and r.reason]
    if late:
        late.append(
            "(only a published drop counts: a failed, rejected or held one does not; "
            "`expect:` in tables/README.md)"
        )
    return late


def queue_lines(queues: Sequence[QueueStat]) -> list[str]:
    """One line per table with files waiting for their turn."""
    return [
        f"queued for {q.table}: {q.depth} file{'s' if q.depth != 1 else ''}, "
        f"the oldest waiting {age_text(q.oldest_age_seconds)}"
        for q in queues
    ]


# ---- --json: one document on stdout, from the same records as the tables ----------------------
# Shapes: docs/cli.md, as JSON Schemas in docs/cli-schemas/<command>.json.


def to_json(document: Any) -> str:
    return json.dumps(_plain(document), ensure_ascii=False, indent=1, default=str)


def runs_json(
    rows: Sequence[RunRow],
    batches: Sequence[BatchRow],
    queues: Sequence[QueueStat],
    freshness: Sequence[SubjectFreshness] = (),
) -> dict[str, Any]:
    return {
        "ingests": [asdict(r) for r in rows],
        "batches": [asdict(b) for b in batches],
        "queues": [asdict(q) for q in queues],
        "freshness": [asdict(f) for f in freshness],
    }


def branches_json(rows: Sequence[BranchRow]) -> dict[str, Any]:
    from dataclasses import asdict

    return {"branches": [asdict(r) for r in rows]}


def show_json(view: IngestView) -> dict[str, Any]:
    return {
        "record": record_attributes(view.record),
        "time_split": [asdict(phase) for phase in time_split(view.record)],
        "report": view.report.to_dict() if view.report else None,
        "branch_open": view.branch_open,
        "publish_conflicts": view.publish_conflicts,
        "main_rows": view.main_rows,
        "branch_rows": view.branch_rows,
        "failed_checks": [check.to_dict() for check in view.failed_checks],
        **({"tables": [asdict(t) for t in view.tables]} if view.tables else {}),
    }


def ingest_json(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ingests": list(outcomes),
        "all_published": all(o["status"] == Status.PUBLISHED for o in outcomes),
    }


def doctor_json(checks: Sequence[Any], label: str) -> dict[str, Any]:
    from dataclasses import asdict

    return {"target": label, "ok": all(c.ok for c in checks), "checks": [asdict(c) for c in checks]}


def _review_text(reviewer: str, reason: str) -> str:
    """`by carol: <reason>`; a discard's reason as the ledger keeps it, which names the
    reviewer already (`discarded by bob: <reason>`), as it is."""
    if reason.startswith(discarded_by(reviewer)):
        return reason
    return f"by {reviewer}: {reason}".rstrip(": ")


def lineage_line(event: dict[str, Any]) -> str:
    """One OpenLineage event on a line: when, what, the outcome, and its checks' results."""
    wap = event.get("run", {}).get("facets", {}).get("wap_ingest", {})
    parts = [
        str(event.get("eventTime", "?")),
        f"{event.get('eventType', '?'):<8}",
        f"{event.get('job', {}).get('name', '?')}",
    ]
    if wap.get("status"):
        parts.append(wap["status"])
    for output in event.get("outputs", []):
        ref = output.get("facets", {}).get("wap_nessie", {}).get("reference")
        if ref:
            parts.append(f"ref {ref}")
    for source in event.get("inputs", []):
        assertions = (
            source.get("inputFacets", {}).get("dataQualityAssertions", {}).get("assertions", [])
        )
        if assertions:
            passed = sum(1 for a in assertions if a.get("success"))
            failed = [
                a.get("name") or a.get("assertion") for a in assertions if not a.get("success")
            ]
            parts.append(
                f"checks {passed}/{len(assertions)} passed"
                + (f" (failed: {', '.join(map(str, failed))})" if failed else "")
            )
    if wap.get("reviewer"):
        parts.append(_review_text(wap["reviewer"], wap.get("reviewReason") or ""))
    return "  ".join(parts)
