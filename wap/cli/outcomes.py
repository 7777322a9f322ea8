"""What the files dropped by `wap ingest`, `ingest-dataset` and `demo` became: waiting for
their outcome with progress, then the outcome table (or JSON), the open branches' next
steps and the alerts sent."""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.table import Table

from contracts.job_tables import is_job_table
from ingestion import constants as c
from ingestion.ledger import IngestRecord, Record
from wap.cli import render
from wap.cli.command import console, home_flag
from wap.cli.next_steps import branch_open, decisions
from wap.ops import operations as ops
from wap.ops.backends import Target
from wap.ops.report_view import CheckLine, ReportView


def not_waited(backend: Any, dropped: list[ops.Dropped], as_json: bool) -> None:
    """`--no-wait`: the drops are left running; under --json, what each drop became so far."""
    backend.changed()
    if as_json:
        typer.echo(render.to_json(render.ingest_json([outcome_json(d, None) for d in dropped])))


def print_waited(
    dropped: list[ops.Dropped],
    records: list[Record],
    target: Target,
    as_json: bool,
    *,
    alerts: list[Any],
    ui_base: str | None,
    details: tuple[Any, ...] = (),
) -> None:
    """The outcome of the drops waited for: one JSON document, or the outcome table, the
    `details` (renderables) and the alerts sent. Exit 3 when any was not published."""
    if as_json:
        typer.echo(
            render.to_json(
                render.ingest_json(
                    [outcome_json(d, r) for d, r in zip(dropped, records, strict=True)]
                )
            )
        )
    else:
        print_outcomes(records, target, ui_base=ui_base)
        for renderable in details:
            console.print(renderable)
        print_alerts(alerts)
    if any(r.status != c.PUBLISHED for r in records):
        raise typer.Exit(3)


def outcome_json(dropped: ops.Dropped, record: Record | None) -> dict[str, Any]:
    """One file of `wap ingest --json`: what it became (docs/cli-schemas/ingest.json)."""
    return {
        "file": str(dropped.path),
        "key": dropped.key,
        "ingest_id": dropped.ingest_id,
        "status": record.status if record else None,
        "rows_written": record.rows_written if record else None,
        "quarantined_rows": getattr(record, "quarantined_rows", None) if record else None,
        "reason": (record.error or None) if record else None,
        "branch": record.branch if record else None,
        "branch_open": branch_open(record) if record else False,
    }


def wait(backend: Any, dropped: list[ops.Dropped], timeout: int) -> list[Record]:
    """The drops' final records, showing each one's progress meanwhile (a spinner on a
    terminal, else a line whenever something changed)."""
    begin = time.monotonic()
    last: list[tuple[str, str, str | None]] = []

    def on_progress(items: list[ops.Progress]) -> None:
        view = render.progress_view(items, time.monotonic() - begin)
        if spinner is not None:
            spinner.update(view)
            return
        state = [(p.key, p.status, render.STEP_TEXT.get(p.step or "", p.step)) for p in items]
        if state != last:  # not a terminal: print changes only
            last[:] = state
            console.print(view)

    spinner = console.status("Running…") if console.is_terminal else None
    try:
        if spinner is not None:
            spinner.start()
        return ops.wait_for_ingests(backend, dropped, timeout=timeout, on_progress=on_progress)
    finally:
        if spinner is not None:
            spinner.stop()
        backend.changed()


def print_outcomes(
    records: list[Record],
    target: Target,
    views: list[ops.IngestView] | None = None,
    ui_base: str | None = None,
) -> None:
    """One row per drop (with `views`, its failed checks), then what to do with each
    unknown table and each open branch."""
    table = Table(title="Outcome", title_justify="left")
    for name in ("file", "ingest id", "outcome", "rows", "what happened"):
        table.add_column(name, no_wrap=name in ("ingest id", "outcome"))
    open_branches = []
    for i, r in enumerate(records):
        status = r.status
        if status == c.PUBLISHED:
            passed = (
                ReportView.of(views[i].report).published_text if views is not None else "published"
            )
            detail = f"{passed}; merged into main, branch deleted"
            if getattr(r, "quarantined_rows", None):
                detail += f"; {r.quarantined_rows:,} row(s) quarantined (wap show {r.ingest_id})"
        else:
            detail = r.error or "-"
            if views is not None and views[i].failed_checks:
                detail = "; ".join(
                    f"check {ch.name} ({ch.kind}) {ch.status}: {ch.finding}"
                    for ch in map(CheckLine.of, views[i].failed_checks)
                )
            if branch_open(r):
                open_branches.append(r)
            elif r.branch and status in c.FAILED_STATUSES:
                detail += "; branch deleted (nothing was written to it)"
        key = r.key if isinstance(r, IngestRecord) else None
        name = getattr(r, "dataset_name", None)
        table.add_row(
            f"dataset {name}" if name else (key or "?").rsplit("/", 1)[-1],
            r.ingest_id,
            render.status_text(status),
            str("-" if r.rows_written is None else r.rows_written),
            detail,
        )
    console.print(table)
    if views is not None:
        for v in views:
            if v.main_rows is not None:
                console.print(f"main now holds {v.main_rows} rows of {v.record.table}.")
                break
    hint = home_flag(target)
    # A table only the audits write is refused whatever --create says: its reason is all.
    unknown = sorted(
        {
            r.table
            for r in records
            if r.reason_code == c.UNKNOWN_TABLE and r.table and not is_job_table(r.table)
        }
    )
    for table_name in unknown:
        console.print(
            f"\n{table_name} is not a known table: check the name; to create the table, "
            "add its config to tables/ or "
            + (
                "deploy with -c createTablesFromUploads=true."
                if target.is_aws
                else "run the same `wap ingest` again with --create."
            ),
            soft_wrap=True,
            markup=False,
        )
    for r in open_branches:
        branch = r.branch
        console.print(f"\nOpen branch (main untouched): [bold]{branch}[/]", soft_wrap=True)
        if r.status != c.AUDIT_FAILED:
            console.print(
                f"Kept because the job wrote to it before the ingest ended {r.status}; "
                "it cannot be published: inspect it, then discard it.",
                soft_wrap=True,
                markup=False,
            )
        look = render.look_lines(
            branch, r.table, ui_base, wap=f"wap{hint}", local=not target.is_aws
        )
        console.print(
            "Next:\n"
            f"  wap{hint} show {branch}\n"
            + "".join(f"  {line}\n" for line in look)
            + "".join(f"  {line}\n" for line in decisions(r, f"wap{hint}"))
            + f"  wap{hint} runs    wap{hint} branches",
            soft_wrap=True,
            markup=False,
        )


def print_alerts(alerts: list[dict[str, Any]]) -> None:
    """The local Slack stand-in's messages: first line and the links in them."""
    for message in alerts:
        first = (message.get("text") or "").splitlines()[0] if message.get("text") else ""
        console.print(
            f"Slack alert posted to #{message.get('channel_name')} (local stand-in): {first}",
            soft_wrap=True,
            markup=False,
        )
        for url in render.alert_links(message):
            console.print(f"  link in the alert: {url}", soft_wrap=True, markup=False)
