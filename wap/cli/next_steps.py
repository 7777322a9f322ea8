"""The commands `wap` suggests after a failed ingest: how to decide its open branch."""

from __future__ import annotations

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


def decisions(record: Record, wap: str) -> list[str]:
    """The commands that decide a failed ingest's open branch: publish only where it would
    be accepted (an audited branch, AUDIT_FAILED), with a reason for the reviewer to fill."""
    branch = record.branch
    lines = (
        [f'{wap} publish {branch} --reason "{REASON_PLACEHOLDER}"']
        if (record.status in ops.PUBLISHABLE)
        else []
    )
    return [*lines, f"{wap} discard {branch}"]


def next_step(record: Record, wap: str) -> str:
    """`Next: <publish> or <discard>` on one line."""
    return "Next: " + "   or   ".join(decisions(record, wap))
