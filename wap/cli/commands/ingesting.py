"""Dropping files through the flow: `wap ingest`, `wap ingest-dataset` and `wap demo`."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from wap.cli import command as cmd
from wap.cli import outcomes, render
from wap.cli.command import console
from wap.ops import operations as ops
from wap.ops.backends import open_backend
from wap.runtime.embedded_stack import tables_dir_from_env, unread_config_note
from wap.runtime.home import HomeError, WapHome

INGEST_TIMEOUT_SECONDS = 900


def ingest(
    ctx: typer.Context,
    files: Annotated[
        list[Path],
        typer.Argument(
            help="data files: .parquet, .csv, .jsonl or .ndjson (text ones also .gz), or any "
            "name when the table config sets format:",
            show_default=False,
        ),
    ],
    table: Annotated[str, typer.Option("--table", "-t", help="target ns.table")],
    wait: Annotated[bool, typer.Option(help="wait for the outcome")] = True,
    timeout: Annotated[int, typer.Option(help="seconds to wait")] = INGEST_TIMEOUT_SECONDS,
    as_json: cmd.JsonFlag = False,
    create: Annotated[
        bool,
        typer.Option(
            "--create",
            help="create the table if it has no config and is not on main "
            "(local stack only; otherwise such an upload is refused)",
        ),
    ] = False,
) -> None:
    """Drop local data files through the flow (local stack, or the deployed source bucket).

    Each file is read as its table config's `format:` (locally: tables/<ns>.<table>.yaml),
    else as its extension says (tables/README.md). A table with neither a config (tables/)
    nor a table on main is refused, naming the closest known tables, unless --create (on
    AWS: the deploy's createTablesFromUploads)."""
    target = cmd.target(ctx)

    def work() -> None:
        ops.parse_table(table)  # bad input fails before anything starts
        # The local stack reads this config; on AWS the deployed one is not read here, so
        # the extension decides and the trigger checks again with the deployed config.
        config = tables_dir_from_env() / f"{table}.yaml"
        configured = None if target.is_aws else ops.configured_format(config)
        beside = Path("tables") / config.name  # e.g. written by `wap suggest -o tables/...`
        if not target.is_aws and beside.is_file() and not config.is_file():
            note = unread_config_note(beside)
            if note:
                typer.echo(note, err=True)
        for path in files:
            ops.check_source_file(path, configured)
        starting = (
            f"Reading the outputs of stack {target.stack}…"
            if target.is_aws
            else "Starting the local stack (Nessie, moto, Spark)…"
        )
        with ExitStack() as resources:
            if as_json:  # stdout is the JSON document's alone: progress goes to stderr
                resources.enter_context(cmd.console_on_stderr())
            with cmd.status(starting):
                backend = resources.enter_context(
                    open_backend(
                        target, run_ingests=wait, mutates=True, create=True, create_tables=create
                    )
                )
            dropped = ops.drop_files(backend, files, table, configured)
            for d in dropped:
                console.print(
                    f"dropped {d.path} -> s3://{backend.source_bucket}/{d.key}  "
                    f"(ingest {d.ingest_id})",
                    soft_wrap=True,
                )
            if not wait:
                outcomes.not_waited(backend, dropped, as_json)
                return
            records = outcomes.wait(backend, dropped, timeout)
            alerts = list(getattr(backend, "slack_messages", []))
            ui_base = backend.nessie_ui_url
        outcomes.print_waited(dropped, records, target, as_json, alerts=alerts, ui_base=ui_base)

    if not target.is_aws and not wait:
        raise cmd.fail("--no-wait is only for --aws: local ingests run inside this command")
    if target.is_aws and create:
        raise cmd.fail(
            "--create is for the local stack: on AWS, uploads create tables only "
            "when the stack is deployed with -c createTablesFromUploads=true"
        )
    cmd.run(work)


def ingest_dataset(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="the dataset: tables/datasets/<name>.yaml")],
    folder: Annotated[
        Path,
        typer.Argument(
            help="the drop: a _manifest.json with its files, or one subfolder per table named "
            "<namespace>.<table>",
            show_default=False,
        ),
    ],
    wait: Annotated[bool, typer.Option(help="wait for the outcome")] = True,
    timeout: Annotated[int, typer.Option(help="seconds to wait")] = INGEST_TIMEOUT_SECONDS,
    as_json: cmd.JsonFlag = False,
) -> None:
    """Drop a multi-table dataset: every table written on one branch, audited (each table's
    checks and the dataset's checks between tables), and published by one merge, or not
    at all (docs/datasets.md). Exit code 3 when it was not published."""
    from wap.ops import datasets

    target = cmd.target(ctx)

    def work() -> None:
        drop = datasets.read_drop(name, folder, None if target.is_aws else tables_dir_from_env())
        with ExitStack() as resources:
            if as_json:
                resources.enter_context(cmd.console_on_stderr())
            with cmd.status(
                "Starting the local stack (Nessie, moto, Spark)…"
                if not target.is_aws
                else f"Reading the outputs of stack {target.stack}…"
            ):
                backend = resources.enter_context(
                    open_backend(target, run_ingests=wait, mutates=True, create=True)
                )
            dropped = datasets.drop_dataset(backend, drop)
            console.print(
                f"dropped {sum(map(len, drop.files.values()))} file(s) for "
                f"{', '.join(drop.files)} and s3://{backend.source_bucket}/"
                f"{dropped.key}  (dataset ingest {dropped.ingest_id})",
                soft_wrap=True,
            )
            if not wait:
                outcomes.not_waited(backend, [dropped], as_json)
                return
            records = outcomes.wait(backend, [dropped], timeout)
            alerts = list(getattr(backend, "slack_messages", []))
            ui_base = backend.nessie_ui_url
            # Each table's rows, for the text output only (the JSON has no counts).
            rows = None if as_json else render.rows_part(ops.show(backend, dropped.ingest_id))
        outcomes.print_waited(
            [dropped],
            records,
            target,
            as_json,
            alerts=alerts,
            ui_base=ui_base,
            details=() if rows is None else (rows,),
        )

    if not target.is_aws and not wait:
        raise cmd.fail("--no-wait is only for --aws: local ingests run inside this command")
    cmd.run(work)


def demo(
    ctx: typer.Context,
    fresh: Annotated[bool, typer.Option(help="delete the local state first")] = False,
) -> None:
    """Zero configuration: the whole Write-Audit-Publish loop on this machine."""
    from wap.runtime.sample_data import DEMO_TABLE, NEGATIVE_AMOUNT_ROWS, write_demo_files

    target = cmd.target(ctx)
    if target.is_aws:
        raise cmd.fail("the demo runs locally; use `wap ingest --aws` against a deployed stack")
    started = time.monotonic()

    def work() -> None:
        config = tables_dir_from_env() / f"{DEMO_TABLE}.yaml"
        if not config.is_file():
            raise HomeError(
                f"the demo needs the table config {config} (set WAP_TABLES_DIR "
                "to the repository's tables/ folder)"
            )
        home = WapHome.resolve(target.home)
        if fresh:
            home.wipe()
        home.create()
        files = write_demo_files(home.samples)
        console.print(f"[bold]WAP demo[/] - local stack in {home.root}")
        with ExitStack() as resources:
            with cmd.status(
                "Starting Nessie (SQLite), moto (S3, DynamoDB, Step Functions, EMR "
                "Serverless API) and Spark - the JVM takes a little while…"
            ):
                backend = resources.enter_context(
                    open_backend(target, run_ingests=True, mutates=True, create=True)
                )
            dropped = ops.drop_files(backend, [files.clean, files.broken], files.table)
            console.print(
                f"Dropped 2 files for [bold]{files.table}[/] into "
                f"s3://{backend.source_bucket}/{files.table.replace('.', '/')}/: "
                f"{files.clean.name} (clean), {files.broken.name} "
                f"({NEGATIVE_AMOUNT_ROWS} negative amounts)",
                soft_wrap=True,
            )
            records = outcomes.wait(backend, dropped, INGEST_TIMEOUT_SECONDS)
            views = [ops.show(backend, r.ingest_id) for r in records]
            alerts = list(getattr(backend, "slack_messages", []))
            ui_base = backend.nessie_ui_url
        outcomes.print_outcomes(records, target, views=views, ui_base=ui_base)
        outcomes.print_alerts(alerts)
        console.print(
            f"\nDone in {time.monotonic() - started:.0f}s. State kept in {home.root}; "
            "run the demo again to add history, --fresh to start over."
        )

    cmd.run(work)
