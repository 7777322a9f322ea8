"""A person's decision on a failed ingest: `wap publish` and `wap discard`."""

from __future__ import annotations

from typing import Annotated

import typer

from ingestion.ledger import Record
from wap.cli import command as cmd
from wap.cli.command import console
from wap.ops import operations as ops


def publish(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name or ingest id")],
    reason: Annotated[str, typer.Option(help="why this data may go to main anyway")],
    by: Annotated[str | None, typer.Option(help="reviewer (default: your user)")] = None,
) -> None:
    """Publish a failed branch after human review (ledger + Nessie merge message)."""

    def print_done(done: ops.Published) -> None:
        console.print(
            f"[green]PUBLISHED[/] ingest {done.ingest_id}: {done.branch} merged into "
            f"main at {done.main_hash[:12]}; branch deleted."
        )
        console.print(f"Merge message: {done.message}", soft_wrap=True)

    cmd.run_command(
        ctx,
        lambda backend: ops.publish(backend, target, reason=reason, actor=cmd.user(by)),
        print_done,
        mutates=True,
    )


def discard(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="branch name or ingest id")],
    reason: Annotated[str | None, typer.Option(help="why (kept in the ledger)")] = None,
    by: Annotated[str | None, typer.Option(help="who (default: your user)")] = None,
) -> None:
    """Delete a failed ingest's branch; the ledger marks it DISCARDED."""

    def print_done(record: Record) -> None:
        console.print(
            f"[dim]DISCARDED[/] ingest {record.ingest_id}"
            + (f": branch {record.branch} deleted." if record.branch else ".")
        )

    cmd.run_command(
        ctx,
        lambda backend: ops.discard(backend, target, actor=cmd.user(by), reason=reason),
        print_done,
        mutates=True,
    )
