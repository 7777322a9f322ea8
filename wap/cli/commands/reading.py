"""The read-only commands: `wap runs`, `branches`, `show`, `lineage` and `query`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ingestion import constants as c
from wap.cli import command as cmd
from wap.cli import render
from wap.cli.command import JsonFlag, console
from wap.cli.next_steps import next_step
from wap.ops import arrivals as arrival_ops
from wap.ops import operations as ops
from wap.ops import query as query_ops


def runs(
    ctx: typer.Context,
    table: Annotated[str | None, typer.Option(help="only this ns.table")] = None,
    limit: Annotated[int, typer.Option(min=1, help="at most this many")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """The ledger: ingest id, table, source, outcome, batch, branch, when; the batches (runs
    over several files); each table's queue; and the tables that expect drops (late
    first)."""

    def print_found(found: tuple[list[Any], list[Any], list[Any], list[Any]]) -> None:
        rows, batches, queues, freshness = found
        if freshness:  # first: a late table is what nothing else on this page shows
            console.print(render.freshness_table(freshness))
            for line in render.late_lines(freshness):
                console.print(line)
        if not rows:
            console.print("No ingests yet.")
            return
        console.print(render.runs_table(rows))
        if batches:
            console.print(render.batches_table(batches))
        for line in render.queue_lines(queues):
            console.print(line)

    cmd.run_command(
        ctx,
        lambda backend: (
            ops.list_runs(backend, table=table, limit=limit),
            ops.list_batches(backend, table=table, limit=limit),
            ops.list_queues(backend, table=table),
            arrival_ops.list_freshness(
                backend, table=ops.parse_table(table).qualified if table else None
            ),
        ),
        print_found,
        as_json=as_json,
        document=lambda found: render.runs_json(*found),
        nothing_yet=(([], [], [], []), "No ingests yet"),
    )


def branches(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Open WAP branches with their outcome and age."""

    def print_found(rows: list[ops.BranchRow]) -> None:
        if not rows:
            console.print("No open WAP branches: every ingest was published or discarded.")
            return
        console.print(render.branches_table(rows))
        console.print(f"\nInspect one: wap{cmd.home_flag(cmd.target(ctx))} show BRANCH")

    cmd.run_command(
        ctx,
        ops.list_branches,
        print_found,
        as_json=as_json,
        document=render.branches_json,
        nothing_yet=([], "No branches yet"),
    )


def show(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name or ingest id")],
    as_json: JsonFlag = False,
) -> None:
    """The audit report, row counts main vs branch, and sample violating rows."""

    def read(backend: Any) -> tuple[ops.IngestView, str | None, bool]:
        return ops.show(backend, target), backend.nessie_ui_url, backend.kind == "local"

    def print_view(found: tuple[ops.IngestView, str | None, bool]) -> None:
        view, ui_base, local = found
        for part in render.show_view(view):
            console.print(part)
        wap = f"wap{cmd.home_flag(cmd.target(ctx))}"
        lines = render.inspect_lines(view, ui_base, wap=wap, local=local)
        if lines:
            console.print("\n" + "\n".join(lines), soft_wrap=True, markup=False)
        if view.branch_open and view.record.status in c.FAILED_STATUSES:
            console.print(
                "\n" + next_step(view.record, wap, view.publish_conflicts),
                markup=False,
                soft_wrap=True,
            )

    cmd.run_command(
        ctx, read, print_view, as_json=as_json, document=lambda found: render.show_json(found[0])
    )


def lineage(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="ingest id or branch name")],
    as_json: Annotated[
        bool, typer.Option("--json", help="the events as a JSON array (OpenLineage's JSON)")
    ] = False,
) -> None:
    """The OpenLineage events of an ingest's run (local mode: kept under the home)."""
    from wap.ops.lineage import LineageRun
    from wap.ops.lineage import lineage as read_lineage

    def print_found(found: LineageRun) -> None:
        console.print(f"ingest {found.ingest_id}: OpenLineage run {found.run_id}", markup=False)
        if not found.events:
            console.print("No events yet.")
        for event in found.events:
            console.print(render.lineage_line(event), markup=False, soft_wrap=True)

    cmd.run_command(
        ctx,
        lambda backend: read_lineage(backend, target),
        print_found,
        as_json=as_json,
        document=lambda found: found.events,
    )


def query(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name, ingest id or main")],
    sql: Annotated[str, typer.Argument(help="one SELECT statement (DuckDB SQL)")],
    table: Annotated[
        str | None,
        typer.Option(
            "--table", "-t", help="ns.t: the table its short name t means in the SQL (optional)"
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option(min=0, help="at most this many rows (0: all)")
    ] = query_ops.DEFAULT_LIMIT,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV on stdout")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="a JSON array on stdout")] = False,
    max_scan_mb: Annotated[
        int,
        typer.Option(min=1, help="refuse more MiB of data files than this in all (read in memory)"),
    ] = query_ops.DEFAULT_MAX_SCAN_MB,
) -> None:
    """SQL over the tables of a branch, an ingest or main (DuckDB over pyiceberg, no JVM).

    The SQL names the tables it reads, joins included: `sales.orders`, or by its name
    alone (`orders`) a table no other namespace of the ref shares a name with (or the
    --table or the ingest's table); only those are read. Only queries run: no writes,
    no files, no extensions.
    """
    if as_csv and as_json:
        raise cmd.fail("choose one of --csv and --json")

    def print_found(done: query_ops.QueryOutcome) -> None:
        rows, source = done.result.rows, done.source
        more = (
            f"first {rows.num_rows} rows shown; more exist (--limit N, 0 for all)"
            if done.result.truncated
            else None
        )
        if as_csv or as_json:
            typer.echo(render.query_csv(rows) if as_csv else render.query_json(rows), nl=as_json)
            if more:
                typer.echo(f"note: {more}", err=True)
            return
        console.print(source.describe(), soft_wrap=True, markup=False)
        console.print(render.query_table(rows))
        console.print(more or f"{rows.num_rows} row(s)", markup=False)

    # A refused statement fails before anything starts.
    cmd.run(lambda: query_ops.check_statement(sql))
    cmd.run_command(
        ctx,
        lambda backend: query_ops.run_query(
            backend, target, sql, table=table, limit=limit or None, max_scan_mb=max_scan_mb
        ),
        print_found,
    )
