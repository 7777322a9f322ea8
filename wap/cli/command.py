"""What every `wap` command shares: the console, the one-line error, and the skeleton of a
command (open the backend, do the work, print `--json` or render, map errors to exit codes).

Bad input ends with one line on stderr and exit code 1, before anything changed.
"""

from __future__ import annotations

import getpass
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import typer

from ingestion.exceptions import WapError
from ingestion.maintenance.gc import GcError
from lakeview.exceptions import TableReadError
from wap.cli import render
from wap.exceptions import OpsError
from wap.ops.backend import Backend
from wap.ops.backends import NoLocalState, Target, open_backend
from wap.runtime import command_log
from wap.runtime.embedded_stack import StackStartError
from wap.runtime.home import HomeError

T = TypeVar("T")

console = render.make_console()

# The `--json` flag of the commands whose document docs/cli.md describes.
JsonFlag = Annotated[bool, typer.Option("--json", help="one JSON document on stdout (docs/cli.md)")]


def fail(message: str) -> typer.Exit:
    """One line on stderr, naming the command's log when something was written to it."""
    log = command_log.active()
    where = f" (log: {log.path})" if log is not None and log.opened else ""
    if where:
        log.announced = True
    typer.echo(f"error: {' '.join(message.split())}{where}", err=True)
    return typer.Exit(1)


def target(ctx: typer.Context) -> Target:
    """What the global options chose: a local home or a deployed stack."""
    return ctx.obj


def user(given: str | None) -> str:
    """The person behind a decision: `--by`, else the login name."""
    if given:
        return given
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "unknown"


def home_flag(chosen: Target) -> str:
    """The global options to repeat in next-step hints (`--home X`, `--profile P`, ...)."""
    flags = chosen.cli_flags()
    return f" {shlex.join(flags)}" if flags else ""


def run(fn: Callable[[], T]) -> T:
    """Call `fn`, turning expected errors into one line on stderr and exit code 1."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return fn()
    # WapError: Nessie's; TableReadError: an Iceberg table that cannot be read; GcError: a
    # garbage collection that could not mark everything (it deleted nothing)
    except (OpsError, TableReadError, GcError, WapError, HomeError, StackStartError) as exc:
        raise fail(str(exc)) from None
    except (BotoCoreError, ClientError) as exc:  # e.g. AccessDenied on the deployed stack
        raise fail(f"AWS: {exc}") from None


def run_command(
    ctx: typer.Context,
    read: Callable[[Backend], T],
    show: Callable[[T], None],
    *,
    as_json: bool = False,
    document: Callable[[T], Any] | None = None,
    nothing_yet: tuple[T, str] | None = None,
    exit_code: Callable[[T], int] | None = None,
    run_ingests: bool = False,
    mutates: bool = False,
    create: bool = False,
) -> None:
    """The skeleton of a command: `read` what it needs while the backend is open, then
    print `document(result)` as JSON (`--json`) or `show(result)`; errors become one line
    and exit code 1 (`run`), and `exit_code(result)`, when not 0, ends the command.

    `nothing_yet`: (the result, "No ingests yet") for a local home with no state yet, which
    such a command reports as empty (`No ingests yet (<why>).`) instead of failing.
    """

    def work() -> T | None:
        try:
            with open_backend(
                target(ctx), run_ingests=run_ingests, mutates=mutates, create=create
            ) as backend:
                result = read(backend)
        except NoLocalState as exc:
            if nothing_yet is None:
                raise
            result, nothing = nothing_yet
            if not as_json:
                console.print(f"{nothing} ({exc}).")
                return None
        if as_json and document is not None:
            typer.echo(render.to_json(document(result)))
        else:
            show(result)
        return result

    result = run(work)
    code = exit_code(result) if exit_code is not None and result is not None else 0
    if code:
        raise typer.Exit(code)


@contextmanager
def console_on_stderr() -> Iterator[None]:
    """Progress and status lines on stderr while stdout carries a JSON document."""
    console.file = sys.stderr
    try:
        yield
    finally:
        console.file = None  # type: ignore[assignment]  # back to the current sys.stdout


@contextmanager
def status(text: str) -> Iterator[None]:
    """A rich spinner while something slow starts (a plain line when not on a terminal)."""
    if not console.is_terminal:
        console.print(text)
        yield
        return
    with console.status(text):
        yield
