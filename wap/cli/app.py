"""`wap`: run the Write-Audit-Publish flow locally, or operate a deployed stack.

This module is the Typer app: its global options and its commands, registered in the order
`wap --help` lists them. The commands live in wap/cli/commands/ by what they do; each
parses its options, calls `wap.ops` and renders with rich through one skeleton
(wap/cli/command.py). Bad input ends with one line on stderr and exit code 1, before
anything changed; a command line that cannot be parsed, with one line and exit code 2
(wap/cli/usage.py).
"""

from __future__ import annotations

from typing import Annotated

import typer

from wap.cli.commands import (
    deciding,
    doctor,
    ingesting,
    maintenance,
    reading,
    replaying,
    serving,
    signing_in,
    suggesting,
)
from wap.cli.usage import OneLineUsageErrors
from wap.ops.backends import DEFAULT_STACK, Target
from wap.runtime.command_log import LOGS_DIR, CommandLog
from wap.runtime.home import WapHome

app = typer.Typer(
    cls=OneLineUsageErrors,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Write-Audit-Publish ingestion: local mode (no AWS account) and "
    "operations on a deployed stack.",
)


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


# In `wap --help` order: what reads, what serves, what decides, what proposes a table config,
# then what changes the lake.
for command in (
    reading.runs,
    reading.branches,
    reading.show,
    reading.lineage,
    reading.query,
    serving.serve,
    deciding.publish,
    deciding.discard,
    doctor.doctor,
    serving.dashboard,
    suggesting.suggest,
    ingesting.ingest,
):
    app.command()(command)
app.command("ingest-dataset")(ingesting.ingest_dataset)
app.command()(ingesting.demo)
app.command()(replaying.replay)
app.command()(maintenance.maintain)
app.command()(maintenance.gc)
app.command()(signing_in.login)


def main() -> None:
    """Console-script entry point."""
    app()
