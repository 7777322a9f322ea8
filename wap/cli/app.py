"""`wap`: run the Write-Audit-Publish flow locally, or operate a deployed stack.

Commands are thin: parse options, call `wap.ops.operations`, render with rich.
Bad input ends with one line on stderr and exit code 1, before anything changed.
"""

from __future__ import annotations

import getpass
import shlex
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from contracts.catalog_ui import branch_diff_url, branch_url
from ingestion import constants as c
from ingestion.exceptions import WapError
from ingestion.ledger import IngestRecord, Record
from ingestion.maintenance.gc import GcError
from ingestion.naming import BRANCH_PREFIX
from lakeview.exceptions import TableReadError
from wap.cli import maintenance as maintenance_commands
from wap.cli import render
from wap.exceptions import OpsError
from wap.ops import operations as ops
from wap.ops import query as query_ops
from wap.ops.backends import DEFAULT_STACK, NoLocalState, Target, open_backend
from wap.runtime import command_log
from wap.runtime.catalog_server import ENV_CATALOG_PORT, catalog_port, start_catalog
from wap.runtime.command_log import LOGS_DIR, CommandLog
from wap.runtime.embedded_stack import StackStartError, tables_dir_from_env
from wap.runtime.home import HomeError, WapHome

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Write-Audit-Publish ingestion: local mode (no AWS account) and "
    "operations on a deployed stack.",
)
console = render.make_console()
INGEST_TIMEOUT_SECONDS = 900
# What a reviewer fills in: the hints never suggest a reason of their own.
REASON_PLACEHOLDER = "<why this data may go to main>"


def _fail(message: str) -> typer.Exit:
    """One line on stderr, naming the command's log when something was written to it."""
    log = command_log.active()
    where = f" (log: {log.path})" if log is not None and log.opened else ""
    if where:
        log.announced = True
    typer.echo(f"error: {' '.join(message.split())}{where}", err=True)
    return typer.Exit(1)


def _target(ctx: typer.Context) -> Target:
    return ctx.obj


def _user(given: str | None) -> str:
    if given:
        return given
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "unknown"


def _home_flag(target: Target) -> str:
    """The global options to repeat in next-step hints (`--home X`, `--profile P`, ...)."""
    flags = target.cli_flags()
    return f" {shlex.join(flags)}" if flags else ""


@app.callback()
def _options(
    ctx: typer.Context,
    home: Annotated[
        str | None, typer.Option(help="local state directory (default .wap; env WAP_HOME)")
    ] = None,
    aws: Annotated[
        bool, typer.Option("--aws", help="operate the deployed stack (default AWS credentials)")
    ] = False,
    profile: Annotated[str | None, typer.Option(help="AWS profile (implies --aws)")] = None,
    region: Annotated[str | None, typer.Option(help="AWS region of the stack")] = None,
    stack: Annotated[
        str, typer.Option(envvar="WAP_STACK", help="CloudFormation stack name")
    ] = DEFAULT_STACK,
    nessie_url: Annotated[
        str | None,
        typer.Option(
            envvar="WAP_NESSIE_URL",
            help="Nessie API URL to use instead of the stack's NessieApiUrl (e.g. a tunnel)",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="stream Lambda logs, Spark/JVM output and warnings to stderr too "
            "(they always go to <home>/logs/<time>-<command>.log)",
        ),
    ] = False,
) -> None:
    ctx.obj = Target(
        home=home, aws=aws, profile=profile, region=region, stack=stack, nessie_url=nessie_url
    )
    _log_to_file(ctx, home, verbose)


def _log_to_file(ctx: typer.Context, home: str | None, verbose: bool) -> None:
    """stdout carries progress and results only: the command's diagnostics (Lambda logs,
    the JVM's output, Python logging and warnings) go to a log file under the home, whose
    path is the last line on stderr when the command wrote to it."""
    command = ctx.invoked_subcommand or "wap"
    if command in ("dashboard",):  # Streamlit runs in a process of its own, logging there
        return
    try:
        logs = WapHome.resolve(home).root / LOGS_DIR
    except OSError:
        return
    log = CommandLog(logs, command, verbose=verbose).install()

    def close() -> None:
        path = log.close()
        if path is not None and not log.announced:
            typer.echo(f"log: {path}", err=True)

    ctx.call_on_close(close)


def _run(fn: Any) -> Any:
    """Call `fn`, turning expected errors into one line on stderr and exit code 1."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return fn()
    # WapError: Nessie's; TableReadError: an Iceberg table that cannot be read; GcError: a
    # garbage collection that could not mark everything (it deleted nothing)
    except (OpsError, TableReadError, GcError, WapError, HomeError, StackStartError) as exc:
        raise _fail(str(exc)) from None
    except (BotoCoreError, ClientError) as exc:  # e.g. AccessDenied on the deployed stack
        raise _fail(f"AWS: {exc}") from None


# ---- read-only ------------------------------------------------------------------------------


@app.command()
def runs(
    ctx: typer.Context,
    table: Annotated[str | None, typer.Option(help="only this ns.table")] = None,
    limit: Annotated[int, typer.Option(min=1, help="at most this many")] = 50,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON document on stdout (docs/cli.md)")
    ] = False,
) -> None:
    """The ledger: ingest id, table, source, outcome, batch, branch, when; the batches (runs
    over several files); and each table's queue."""

    def work() -> None:
        try:
            with open_backend(_target(ctx)) as backend:
                rows = ops.list_runs(backend, table=table, limit=limit)
                batches = ops.list_batches(backend, table=table, limit=limit)
                queues = ops.list_queues(backend, table=table)
        except NoLocalState as exc:
            if as_json:
                typer.echo(render.to_json(render.runs_json([], [], [])))
                return
            console.print(f"No ingests yet ({exc}).")
            return
        if as_json:
            typer.echo(render.to_json(render.runs_json(rows, batches, queues)))
            return
        if not rows:
            console.print("No ingests yet.")
            return
        console.print(render.runs_table(rows))
        if batches:
            console.print(render.batches_table(batches))
        for line in render.queue_lines(queues):
            console.print(line)

    _run(work)


@app.command()
def branches(
    ctx: typer.Context,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON document on stdout (docs/cli.md)")
    ] = False,
) -> None:
    """Open WAP branches with their outcome and age."""

    def work() -> None:
        try:
            with open_backend(_target(ctx)) as backend:
                rows = ops.list_branches(backend)
        except NoLocalState as exc:
            if as_json:
                typer.echo(render.to_json(render.branches_json([])))
                return
            console.print(f"No branches yet ({exc}).")
            return
        if as_json:
            typer.echo(render.to_json(render.branches_json(rows)))
            return
        if not rows:
            console.print("No open WAP branches: every ingest was published or discarded.")
            return
        console.print(render.branches_table(rows))
        hint = _home_flag(_target(ctx))
        console.print(f"\nInspect one: wap{hint} show BRANCH")

    _run(work)


@app.command()
def show(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name or ingest id")],
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON document on stdout (docs/cli.md)")
    ] = False,
) -> None:
    """The audit report, row counts main vs branch, and sample violating rows."""

    def work() -> None:
        with open_backend(_target(ctx)) as backend:
            view = ops.show(backend, target)
            ui_base, local = backend.nessie_ui_url, backend.kind == "local"
        if as_json:
            typer.echo(render.to_json(render.show_json(view)))
            return
        for part in render.show_view(view):
            console.print(part)
        wap = f"wap{_home_flag(_target(ctx))}"
        lines = render.inspect_lines(view, ui_base, wap=wap, local=local)
        if lines:
            console.print("\n" + "\n".join(lines), soft_wrap=True, markup=False)
        if view.branch_open and view.record.status in c.FAILED_STATUSES:
            console.print("\n" + _next_step(view.record, wap), markup=False, soft_wrap=True)

    _run(work)


@app.command()
def lineage(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="ingest id or branch name")],
    as_json: Annotated[
        bool, typer.Option("--json", help="the events as a JSON array (OpenLineage's JSON)")
    ] = False,
) -> None:
    """The OpenLineage events of an ingest's run (local mode: kept under the home)."""
    from wap.ops.lineage import lineage as read_lineage

    def work() -> None:
        with open_backend(_target(ctx)) as backend:
            run = read_lineage(backend, target)
        if as_json:
            typer.echo(render.to_json(run.events))
            return
        console.print(f"ingest {run.ingest_id}: OpenLineage run {run.run_id}", markup=False)
        if not run.events:
            console.print("No events yet.")
        for event in run.events:
            console.print(render.lineage_line(event), markup=False, soft_wrap=True)

    _run(work)


@app.command()
def query(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name, ingest id or main")],
    sql: Annotated[str, typer.Argument(help="one SELECT statement (DuckDB SQL)")],
    table: Annotated[
        str | None,
        typer.Option(
            "--table", "-t", help="ns.table the SQL may name by its short name (optional)"
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
        raise _fail("choose one of --csv and --json")

    def work() -> None:
        query_ops.check_statement(sql)  # a refused statement fails before anything starts
        with open_backend(_target(ctx)) as backend:
            done = query_ops.run_query(
                backend, target, sql, table=table, limit=limit or None, max_scan_mb=max_scan_mb
            )
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

    _run(work)


@app.command()
def serve(
    ctx: typer.Context,
    port: Annotated[
        int | None,
        typer.Option(
            min=1, max=65535, help=f"port on 127.0.0.1 (default ${ENV_CATALOG_PORT} or 19120)"
        ),
    ] = None,
) -> None:
    """Serve the home's catalog (Nessie API + UI) until Ctrl-C: the links in alerts open here."""
    target = _target(ctx)
    if target.is_aws:
        raise _fail(
            "serve is for local mode: a deployed stack's Nessie serves its own UI "
            "(stack output NessieUiUrl)"
        )

    def work() -> None:
        home = WapHome.resolve(target.home)
        configured = catalog_port()
        server = start_catalog(home, port or configured)
        try:
            base = server.url
            console.print(
                f"Catalog of {home.root} on {base}: UI {branch_url(base, 'main')}, "
                f"Nessie API {base}/api/v2 (Ctrl-C to stop)",
                soft_wrap=True,
                markup=False,
            )
            if server.port != configured:
                console.print(
                    f"Links in alerts and `wap show` name port {configured}: run commands "
                    f"with {ENV_CATALOG_PORT}={server.port} to make them point here.",
                    markup=False,
                )
            for ref in server.store.list_refs():
                if ref.type == "BRANCH" and ref.name.startswith(BRANCH_PREFIX):
                    console.print(
                        f"  {ref.name}: {branch_url(base, ref.name)}   "
                        f"diff: {branch_diff_url(base, ref.name)}",
                        soft_wrap=True,
                        markup=False,
                    )
            while not server.wait(timeout=1):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()

    _run(work)


# ---- changes --------------------------------------------------------------------------------


@app.command()
def publish(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name or ingest id")],
    reason: Annotated[str, typer.Option(help="why this data may go to main anyway")],
    by: Annotated[str | None, typer.Option(help="reviewer (default: your user)")] = None,
) -> None:
    """Publish a failed branch after human review (ledger + Nessie merge message)."""

    def work() -> None:
        with open_backend(_target(ctx), mutates=True) as backend:
            done = ops.publish(backend, target, reason=reason, actor=_user(by))
        console.print(
            f"[green]PUBLISHED[/] ingest {done.ingest_id}: {done.branch} merged into "
            f"main at {done.main_hash[:12]}; branch deleted."
        )
        console.print(f"Merge message: {done.message}", soft_wrap=True)

    _run(work)


@app.command()
def discard(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name or ingest id")],
    reason: Annotated[str | None, typer.Option(help="why (kept in the ledger)")] = None,
    by: Annotated[str | None, typer.Option(help="who (default: your user)")] = None,
) -> None:
    """Delete a failed ingest's branch; the ledger marks it DISCARDED."""

    def work() -> None:
        with open_backend(_target(ctx), mutates=True) as backend:
            record = ops.discard(backend, target, actor=_user(by), reason=reason)
        console.print(
            f"[dim]DISCARDED[/] ingest {record.ingest_id}"
            + (f": branch {record.branch} deleted." if record.branch else ".")
        )

    _run(work)


@app.command()
def doctor(
    ctx: typer.Context,
    timeout: Annotated[int, typer.Option(help="seconds to wait for the smoke job")] = 900,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON document on stdout (docs/cli.md)")
    ] = False,
) -> None:
    """Check that the stack can ingest: outputs, Lambdas, Slack secret, Nessie from the
    VPC, and a smoke job on EMR Serverless. Run it right after `cdk deploy`."""
    from wap.ops.doctor import AwsDoctorTarget, LocalDoctorTarget, render, run_doctor

    cli_render = globals()["render"]  # this module's `render` (the doctor's is shadowing it)

    def work() -> bool:
        with open_backend(_target(ctx), run_ingests=True, mutates=True, create=True) as backend:
            if backend.kind == "aws":
                target = AwsDoctorTarget(backend.session, _target(ctx).stack, backend.outputs)
                checks = run_doctor(target, timeout=timeout)
            else:
                target = LocalDoctorTarget(backend.stack.aws)
                checks = run_doctor(target, timeout=timeout, poll_seconds=0.5)
        if as_json:
            typer.echo(cli_render.to_json(cli_render.doctor_json(checks, target.label)))
        else:
            typer.echo(render(checks, target.label))
        return all(check.ok for check in checks)

    if not _run(work):
        raise typer.Exit(1)


@app.command()
def dashboard(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="local port to serve on", min=1, max=65535)] = 8501,
    open_browser: Annotated[bool, typer.Option("--open", help="open a browser tab")] = False,
) -> None:
    """Serve the quality dashboard (Streamlit) on 127.0.0.1 until Ctrl-C."""
    from wap.dashboard import launch

    target = _target(ctx)
    console.print(f"Dashboard on http://127.0.0.1:{port}/ (Ctrl-C to stop)")
    raise typer.Exit(launch(target.home, aws=target.aws, profile=target.profile, port=port,
                            open_browser=open_browser, region=target.region,
                            stack=target.stack, nessie_url=target.nessie_url))


@app.command()
def ingest(
    ctx: typer.Context,
    files: Annotated[list[Path], typer.Argument(
        help="data files: .parquet, .csv, .jsonl or .ndjson (text ones also .gz), or any "
             "name when the table config sets format:", show_default=False)],
    table: Annotated[str, typer.Option("--table", "-t", help="target ns.table")],
    wait: Annotated[bool, typer.Option(help="wait for the outcome")] = True,
    timeout: Annotated[int, typer.Option(help="seconds to wait")] = INGEST_TIMEOUT_SECONDS,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON document on stdout (docs/cli.md)")
    ] = False,
    create: Annotated[bool, typer.Option(
        "--create", help="create the table if it has no config and is not on main "
                         "(local stack only; otherwise such an upload is refused)")] = False,
) -> None:
    """Drop local data files through the flow (local stack, or the deployed source bucket).

    Each file is read as its table config's `format:` (locally: tables/<ns>.<table>.yaml),
    else as its extension says (tables/README.md). A table with neither a config (tables/)
    nor a table on main is refused, naming the closest known tables, unless --create (on
    AWS: the deploy's createTablesFromUploads)."""
    target = _target(ctx)

    def work() -> None:
        ops.parse_table(table)  # bad input fails before anything starts
        # The local stack reads this config; on AWS the deployed one is not read here, so
        # the extension decides and the trigger checks again with the deployed config.
        configured = (None if target.is_aws
                      else ops.configured_format(tables_dir_from_env() / f"{table}.yaml"))
        for path in files:
            ops.check_source_file(path, configured)
        starting = (
            f"Reading the outputs of stack {target.stack}…"
            if target.is_aws
            else "Starting the local stack (Nessie, moto, Spark)…"
        )
        with ExitStack() as resources:
            if as_json:  # stdout is the JSON document's alone: progress goes to stderr
                resources.enter_context(_console_on_stderr())
            with _status(starting):
                backend = resources.enter_context(
                    open_backend(target, run_ingests=wait, mutates=True, create=True,
                                 create_tables=create)
                )
            dropped = ops.drop_files(backend, files, table, configured)
            for d in dropped:
                console.print(
                    f"dropped {d.path} -> s3://{backend.source_bucket}/{d.key}  "
                    f"(ingest {d.ingest_id})",
                    soft_wrap=True,
                )
            if not wait:
                _not_waited(backend, dropped, as_json)
                return
            records = _wait(backend, dropped, timeout)
            alerts = list(getattr(backend, "slack_messages", []))
            ui_base = backend.nessie_ui_url
        _print_waited(dropped, records, target, as_json, alerts=alerts, ui_base=ui_base)

    if not target.is_aws and not wait:
        raise _fail("--no-wait is only for --aws: local ingests run inside this command")
    if target.is_aws and create:
        raise _fail("--create is for the local stack: on AWS, uploads create tables only "
                    "when the stack is deployed with -c createTablesFromUploads=true")
    _run(work)


@app.command("ingest-dataset")
def ingest_dataset(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="the dataset: tables/datasets/<name>.yaml")],
    folder: Annotated[Path, typer.Argument(
        help="the drop: a _manifest.json with its files, or one subfolder per table named "
             "<namespace>.<table>", show_default=False)],
    wait: Annotated[bool, typer.Option(help="wait for the outcome")] = True,
    timeout: Annotated[int, typer.Option(help="seconds to wait")] = INGEST_TIMEOUT_SECONDS,
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON document on stdout (docs/cli.md)")
    ] = False,
) -> None:
    """Drop a multi-table dataset: every table written on one branch, audited (each table's
    checks and the dataset's checks between tables), and published by one merge, or not
    at all (docs/datasets.md). Exit code 3 when it was not published."""
    from wap.ops import datasets

    target = _target(ctx)

    def work() -> None:
        drop = datasets.read_drop(name, folder,
                                  None if target.is_aws else tables_dir_from_env())
        with ExitStack() as resources:
            if as_json:
                resources.enter_context(_console_on_stderr())
            with _status("Starting the local stack (Nessie, moto, Spark)…" if not target.is_aws
                         else f"Reading the outputs of stack {target.stack}…"):
                backend = resources.enter_context(
                    open_backend(target, run_ingests=wait, mutates=True, create=True))
            dropped = datasets.drop_dataset(backend, drop)
            console.print(f"dropped {sum(map(len, drop.files.values()))} file(s) for "
                          f"{', '.join(drop.files)} and s3://{backend.source_bucket}/"
                          f"{dropped.key}  (dataset ingest {dropped.ingest_id})",
                          soft_wrap=True)
            if not wait:
                _not_waited(backend, [dropped], as_json)
                return
            records = _wait(backend, [dropped], timeout)
            alerts = list(getattr(backend, "slack_messages", []))
            ui_base = backend.nessie_ui_url
            # Each table's rows, for the text output only (the JSON has no counts).
            rows = None if as_json else render.rows_part(ops.show(backend, dropped.ingest_id))
        _print_waited([dropped], records, target, as_json, alerts=alerts, ui_base=ui_base,
                      details=() if rows is None else (rows,))

    if not target.is_aws and not wait:
        raise _fail("--no-wait is only for --aws: local ingests run inside this command")
    _run(work)


@app.command()
def demo(
    ctx: typer.Context,
    fresh: Annotated[bool, typer.Option(help="delete the local state first")] = False,
) -> None:
    """Zero configuration: the whole Write-Audit-Publish loop on this machine."""
    from wap.runtime.sample_data import DEMO_TABLE, NEGATIVE_AMOUNT_ROWS, write_demo_files

    target = _target(ctx)
    if target.is_aws:
        raise _fail("the demo runs locally; use `wap ingest --aws` against a deployed stack")
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
            with _status(
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
            records = _wait(backend, dropped, INGEST_TIMEOUT_SECONDS)
            views = [ops.show(backend, r.ingest_id) for r in records]
            alerts = list(getattr(backend, "slack_messages", []))
            ui_base = backend.nessie_ui_url
        _print_outcomes(records, target, views=views, ui_base=ui_base)
        _print_alerts(alerts)
        console.print(
            f"\nDone in {time.monotonic() - started:.0f}s. State kept in {home.root}; "
            "run the demo again to add history, --fresh to start over."
        )

    _run(work)


# ---- helpers --------------------------------------------------------------------------------


@contextmanager
def _console_on_stderr() -> Iterator[None]:
    """Progress and status lines on stderr while stdout carries a JSON document."""
    import sys

    console.file = sys.stderr
    try:
        yield
    finally:
        console.file = None  # type: ignore[assignment]  # back to the current sys.stdout


def _branch_open(record: Record) -> bool:
    """Whether the ingest left its branch in Nessie (a failed one whose branch was kept)."""
    return bool(
        record.branch and record.status in c.FAILED_STATUSES and not record.branch_deleted_at
    )


def _decisions(record: Record, wap: str) -> list[str]:
    """The commands that decide a failed ingest's open branch: publish only where it would
    be accepted (an audited branch, AUDIT_FAILED), with a reason for the reviewer to fill."""
    branch = record.branch
    lines = [f'{wap} publish {branch} --reason "{REASON_PLACEHOLDER}"'] if (
        record.status in ops.PUBLISHABLE) else []
    return [*lines, f"{wap} discard {branch}"]


def _next_step(record: Record, wap: str) -> str:
    return "Next: " + "   or   ".join(_decisions(record, wap))


def _not_waited(backend: Any, dropped: list[ops.Dropped], as_json: bool) -> None:
    """`--no-wait`: the drops are left running; under --json, what each drop became so far."""
    backend.changed()
    if as_json:
        typer.echo(render.to_json(render.ingest_json([_outcome_json(d, None) for d in dropped])))


def _print_waited(dropped: list[ops.Dropped], records: list[Record], target: Target,
                  as_json: bool, *, alerts: list[Any], ui_base: str | None,
                  details: tuple[Any, ...] = ()) -> None:
    """The outcome of the drops waited for: one JSON document, or the outcome table, the
    `details` (renderables) and the alerts sent. Exit 3 when any was not published."""
    if as_json:
        typer.echo(render.to_json(render.ingest_json(
            [_outcome_json(d, r) for d, r in zip(dropped, records, strict=True)])))
    else:
        _print_outcomes(records, target, ui_base=ui_base)
        for renderable in details:
            console.print(renderable)
        _print_alerts(alerts)
    if any(r.status != c.PUBLISHED for r in records):
        raise typer.Exit(3)


def _outcome_json(dropped: ops.Dropped, record: Record | None) -> dict[str, Any]:
    """One file of `wap ingest --json`: what it became (docs/cli-schemas/ingest.json)."""
    return {
        "file": str(dropped.path),
        "key": dropped.key,
        "ingest_id": dropped.ingest_id,
        "status": record.status if record else None,
        "rows_written": record.rows_written if record else None,
        "reason": (record.error or None) if record else None,
        "branch": record.branch if record else None,
        "branch_open": _branch_open(record) if record else False,
    }


@contextmanager
def _status(text: str) -> Iterator[None]:
    """A rich spinner while something slow starts (a plain line when not on a terminal)."""
    if not console.is_terminal:
        console.print(text)
        yield
        return
    with console.status(text):
        yield


def _wait(backend: Any, dropped: list[ops.Dropped], timeout: int) -> list[Record]:
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


def _print_outcomes(
    records: list[Record],
    target: Target,
    views: list[ops.IngestView] | None = None,
    ui_base: str | None = None,
) -> None:
    from rich.table import Table

    table = Table(title="Outcome", title_justify="left")
    for name in ("file", "ingest id", "outcome", "rows", "what happened"):
        table.add_column(name, no_wrap=name in ("ingest id", "outcome"))
    open_branches = []
    for i, r in enumerate(records):
        status = r.status
        if status == c.PUBLISHED:
            detail = "passed every check; merged into main, branch deleted"
        else:
            detail = r.error or "-"
            if views is not None and views[i].failed_checks:
                detail = "; ".join(
                    f"check {ch.name} ({ch.kind}) failed: "
                    f"{ch.violations} row(s)"
                    for ch in views[i].failed_checks
                )
            if _branch_open(r):
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
    hint = _home_flag(target)
    unknown = sorted({r.table for r in records if r.reason_code == c.UNKNOWN_TABLE and r.table})
    for table_name in unknown:
        console.print(
            f"\n{table_name} is not a known table: check the name; to create the table, "
            "add its config to tables/ or "
            + ("deploy with -c createTablesFromUploads=true." if target.is_aws
               else "run the same `wap ingest` again with --create."),
            soft_wrap=True, markup=False)
    for r in open_branches:
        branch = r.branch
        console.print(f"\nOpen branch (main untouched): [bold]{branch}[/]", soft_wrap=True)
        if r.status != c.AUDIT_FAILED:
            console.print(
                f"Kept because the job wrote to it before the ingest ended {r.status}; "
                "it cannot be published: inspect it, then discard it.",
                soft_wrap=True, markup=False,
            )
        look = render.look_lines(
            branch, r.table, ui_base, wap=f"wap{hint}", local=not target.is_aws
        )
        console.print(
            "Next:\n"
            f"  wap{hint} show {branch}\n"
            + "".join(f"  {line}\n" for line in look)
            + "".join(f"  {line}\n" for line in _decisions(r, f"wap{hint}"))
            + f"  wap{hint} runs    wap{hint} branches",
            soft_wrap=True,
            markup=False,
        )


def _print_alerts(alerts: list[dict[str, Any]]) -> None:
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


maintenance_commands.register(app)  # wap gc


def main() -> None:
    """Console-script entry point."""
    app()
