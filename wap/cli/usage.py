"""Usage errors (an unknown command or option, a missing or invalid argument) as one line
on stderr with click's exit code 2, as docs/cli.md promises for every error, instead of
Typer's boxed panel with the usage text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

# Typer 0.29 carries its own copy of click: its parser raises these, not `click`'s.
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

USAGE_EXIT_CODE = 2  # click's, for a command line it cannot parse


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except NoArgsIsHelpError:
        raise  # `wap` (or a group) alone: its help, as asked
    except UsageError as exc:
        path = exc.ctx.command_path if exc.ctx is not None else "wap"
        message = " ".join(exc.format_message().split())
        typer.echo(f"error: {message} (see `{path} --help`)", err=True)
        raise typer.Exit(USAGE_EXIT_CODE) from None


class OneLineUsageErrors(TyperGroup):
    """The app's group: its own and its commands' command lines are parsed in
    `make_context` and `invoke`, where a usage error becomes one line."""

    def make_context(self, *args: Any, **kwargs: Any) -> typer.Context:
        with _one_line():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: typer.Context) -> Any:
        with _one_line():
            return super().invoke(ctx)
