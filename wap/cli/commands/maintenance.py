"""Keeping the tables healthy: `wap maintain` (compaction) and `wap gc` (garbage
collection across every Nessie reference)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from contracts.lifecycle import Status
from wap.cli import command as cmd
from wap.cli.command import console
from wap.text import size_text


def gc_table(rows: list, deleted: bool) -> Table:
    """One row per table: live files, what is reclaimable and (with --delete) reclaimed."""
    table = Table(title="Garbage collection across Nessie references", title_justify="left")
    for name in (
        "table",
        "data files on main",
        "average file",
        "live files",
        "live bytes",
        "reclaimable files",
        "reclaimable bytes",
        *(("deleted files", "deleted bytes") if deleted else ()),
    ):
        table.add_column(name, overflow="fold")
    for r in rows:
        average = size_text(r.average_file_bytes) if r.average_file_bytes is not None else "-"
        table.add_row(
            r.table,
            str(r.data_files),
            average,
            str(r.live_files),
            size_text(r.live_bytes),
            str(r.garbage_files),
            size_text(r.garbage_bytes),
            *((str(r.deleted_files), size_text(r.deleted_bytes)) if deleted else ()),
        )
    return table


def maintain(
    ctx: typer.Context,
    table: Annotated[
        str | None, typer.Argument(help="ns.table (default: every table on main)")
    ] = None,
    as_json: cmd.JsonFlag = False,
) -> None:
    """Compact small data files as Write-Audit-Publish: rewrite them on a branch, audit
    that the table's rows are unchanged (count and digest), merge into main only then.
    Holds the table like an ingest; ingests that arrive meanwhile queue. With --aws the
    stack's maintenance Lambda runs it on EMR Serverless (lambda:InvokeFunction on it).
    Exit code 3 when a compaction was not published."""
    from wap.ops import compaction

    def read(backend: Any) -> list[dict[str, Any]]:
        tables = [table] if table else sorted(backend.nessie.iceberg_tables("main"))
        return [compaction.maintain(backend, name) for name in tables]

    def print_runs(runs: list[dict[str, Any]]) -> None:
        for run in runs:
            console.print(compaction.line_of(run), soft_wrap=True, markup=False)

    cmd.run_command(
        ctx,
        read,
        print_runs,
        as_json=as_json,
        document=lambda runs: {"runs": runs},
        exit_code=lambda runs: 0 if all(run["status"] == Status.PUBLISHED for run in runs) else 3,
        run_ingests=True,
        mutates=True,
    )


def gc(
    ctx: typer.Context,
    delete: Annotated[
        bool, typer.Option("--delete", help="delete the garbage (default: only report it)")
    ] = False,
    retention_days: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="days of history kept live, for every table (default: "
            "each table's maintenance.retention, else 7)",
        ),
    ] = None,
    grace_hours: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="unmarked files younger than this are kept, in every "
            "table (default: each table's maintenance.grace, else 24)",
        ),
    ] = None,
    as_json: cmd.JsonFlag = False,
) -> None:
    """Garbage collection across every Nessie reference: mark the files each branch, tag
    and recent commit of main reaches, then report (or, with --delete, delete) the
    warehouse's unmarked files older than the grace period."""
    from botocore.exceptions import ClientError

    from wap.ops import maintenance

    options = cmd.run(
        lambda: maintenance.gc_options(
            delete=delete, retention_days=retention_days, grace_hours=grace_hours
        )
    )

    def read(backend: Any) -> tuple[Any, Any, str | None]:
        # Holds the home (mutates): the run's summary is saved with its state (local mode).
        chosen = maintenance.gc_options(
            delete=delete,
            retention_days=retention_days,
            grace_hours=grace_hours,
            tables=maintenance.table_maintenance(backend),
        )
        report = maintenance.collect_garbage(backend, chosen)
        try:
            maintenance.record_gc(backend, report)
        except (ClientError, ValueError) as exc:  # e.g. no s3:PutObject on AWS
            return report, chosen, f"the summary for the dashboard was not kept: {exc}"
        return report, chosen, None

    def print_report(found: tuple[Any, Any, str | None]) -> None:
        report, _, recorded = found
        console.print(gc_table(maintenance.gc_rows(report), report.deleted))
        verb = "Deleted" if report.deleted else "Reclaimable"
        console.print(
            f"{verb}: {len(report.garbage)} file(s), {size_text(report.garbage_bytes)} "
            f"(unmarked, modified before {report.cutoff:%Y-%m-%d %H:%M:%S} UTC); "
            f"{report.references} reference(s), {report.live_commits} live commit(s), "
            f"{report.marked_files} file(s) marked."
        )
        if report.missing:
            console.print(
                f"[red]{len(report.missing)} marked file(s) are missing from the "
                f"warehouse[/], e.g. {report.missing[0]}",
                soft_wrap=True,
            )
        if not report.deleted and report.garbage:
            console.print("Nothing was deleted: run with --delete to reclaim it.")
        if recorded:
            console.print(f"[yellow]Note:[/] {recorded}", soft_wrap=True)

    cmd.run_command(
        ctx,
        read,
        print_report,
        as_json=as_json,
        document=lambda found: maintenance.gc_json(found[0], found[1]),
        nothing_yet=((None, options, None), "Nothing to collect"),
        mutates=True,
    )
