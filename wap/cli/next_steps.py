"""The commands `wap` suggests after a failed ingest: how to decide its open branch."""

from __future__ import annotations

from collections.abc import Sequence

from ingestion import constants as c
from ingestion.ledger import Record
from wap.ops import operations as ops

# What a reviewer fills in: the hints never suggest a reason of their own.
REASON_PLACEHOLDER = "<why this data may go to main>"


def branch_open(record: Record) -> bool:
    """Whether the ingest left its branch in Nessie (a failed one whose branch was kept)."""
    return bool(
        record.branch and record.status in c.FAILED_STATUSES and not record.branch_deleted_at
    )


def decisions(record: Record, wap: str, conflicts: Sequence[str] = ()) -> list[str]:
    """The commands that decide a failed ingest's open branch: publish only where it would
    be accepted (an audited branch, AUDIT_FAILED, whose tables main has not changed since:
    `conflicts`), with a reason for the reviewer to fill."""
    branch = record.branch
    lines = (
        [f'{wap} publish {branch} --reason "{REASON_PLACEHOLDER}"']
        if record.status in ops.PUBLISHABLE and not conflicts
        else []
    )
    return [*lines, f"{wap} discard {branch}"]


def next_step(record: Record, wap: str, conflicts: Sequence[str] = ()) -> str:
    """`Next: <publish> or <discard>` on one line, after why publish is not offered when
    main changed the branch's tables since the audit."""
    why = f"Not publishable: {ops.conflict_text(conflicts)}.\n" if conflicts else ""
    return why + "Next: " + "   or   ".join(decisions(record, wap, conflicts))
