"""The lifecycle of one ingest (or batch) in the ledger: its statuses and the changes
between them allowed (docs/contracts.md, "Ledger").

Every status word is defined here once; the ledger's type (`ingestion.ledger.records`),
the state machine's final outcomes (`contracts.state`), the alerts' outcomes and every
group below are derived from `Status`. `TRANSITIONS` is what the ledger's writes check: a
write that would change a status to one not listed for it is refused
(`ingestion.ledger.ingests`).

Standard library only (the job imports contracts/ on Python 3.9).
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):  # noqa: UP042 (StrEnum is 3.11: the job runs 3.9)
    """A ledger status. A `str`: it compares, hashes, serializes (JSON, DynamoDB) and
    formats as its word."""

    RECEIVED = "RECEIVED"  # recorded (and being staged); may take its table's lock
    HELD = "HELD"  # a part file of an `arrival: marker` table, waiting for its marker
    QUEUED = "QUEUED"  # waiting in its table's queue
    RUNNING = "RUNNING"  # holds its table: branch, job, audit, publish
    PUBLISHED = "PUBLISHED"
    AUDIT_FAILED = "AUDIT_FAILED"
    REJECTED = "REJECTED"
    JOB_FAILED = "JOB_FAILED"
    PUBLISH_FAILED = "PUBLISH_FAILED"
    DISCARDED = "DISCARDED"  # a failed one's branch deleted (by a person or the sweeper)
    SPLIT = "SPLIT"  # a batch whose run failed: its files went back to the queue

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


RECEIVED = Status.RECEIVED
HELD = Status.HELD
QUEUED = Status.QUEUED
RUNNING = Status.RUNNING
PUBLISHED = Status.PUBLISHED
AUDIT_FAILED = Status.AUDIT_FAILED
REJECTED = Status.REJECTED
JOB_FAILED = Status.JOB_FAILED
PUBLISH_FAILED = Status.PUBLISH_FAILED
DISCARDED = Status.DISCARDED
SPLIT = Status.SPLIT

STATUSES: frozenset[Status] = frozenset(Status)
# It may still take its table's lock and start.
PENDING_STATUSES: frozenset[Status] = frozenset({RECEIVED, QUEUED})
# Failures whose branch is left open for inspection (and later swept): what an alert
# reports and lineage calls kept for review.
FAILED_STATUSES: frozenset[Status] = frozenset({AUDIT_FAILED, REJECTED, JOB_FAILED, PUBLISH_FAILED})
# How an execution ends: the state machine's final outcomes (contracts/state.py).
FINAL_STATUSES: tuple[Status, ...] = (PUBLISHED, AUDIT_FAILED, REJECTED, JOB_FAILED, PUBLISH_FAILED)
# Nothing more runs: the record expires and is swept.
TERMINAL_STATUSES: frozenset[Status] = frozenset({*FINAL_STATUSES, DISCARDED, SPLIT})
# Statuses a record is created with (a bad upload is rejected when recorded).
INITIAL_STATUSES: frozenset[Status] = frozenset({RECEIVED, REJECTED})

# The status changes the ledger accepts (from -> to), as the service makes them:
# - the trigger: RECEIVED -> HELD (waits for its marker), QUEUED, REJECTED; a dataset's
#   files HELD/RECEIVED -> RUNNING in it (or REJECTED with it);
# - a start: RECEIVED/QUEUED -> RUNNING, QUEUED (a dataset waiting at its next table),
#   JOB_FAILED (it can never start), REJECTED (its config is broken);
# - finish: RECEIVED/QUEUED/RUNNING -> a final outcome, or SPLIT (a batch);
# - a batch's files: RUNNING -> its outcome, REJECTED (their own), QUEUED (split); and
#   DISCARDED: a person discarded the failed batch before its files were settled (they
#   follow when the table is handed on);
# - the sweeper: RECEIVED -> QUEUED/JOB_FAILED, HELD -> REJECTED, RUNNING -> PUBLISHED or
#   JOB_FAILED, a failure -> DISCARDED (its retention ended);
# - a person: AUDIT_FAILED -> PUBLISHED (`wap publish`), a failure -> DISCARDED.
# A write that keeps the status (a retried step recording again) changes nothing: allowed.
_ENDINGS = frozenset({*FINAL_STATUSES, SPLIT})
TRANSITIONS: dict[Status, frozenset[Status]] = {
    RECEIVED: frozenset({HELD, QUEUED, RUNNING, *_ENDINGS}),
    QUEUED: frozenset({RUNNING, *_ENDINGS}),
    HELD: frozenset({RUNNING, REJECTED}),
    RUNNING: frozenset({QUEUED, *_ENDINGS, DISCARDED}),
    AUDIT_FAILED: frozenset({PUBLISHED, DISCARDED}),
    REJECTED: frozenset({DISCARDED}),
    JOB_FAILED: frozenset({DISCARDED}),
    PUBLISH_FAILED: frozenset({DISCARDED}),
    PUBLISHED: frozenset(),
    DISCARDED: frozenset(),
    SPLIT: frozenset(),
}


def allowed(source: str | None, target: str) -> bool:
    """Whether the ledger may change a status `source` to `target` (or keep it)."""
    return source in TRANSITIONS and (source == target or target in TRANSITIONS[Status(source)])


def predecessors(target: str) -> frozenset[Status]:
    """The statuses a record may have for a write to set it to `target` (itself included)."""
    return frozenset(source for source in TRANSITIONS if allowed(source, target))


class TransitionError(ValueError):
    """A status change the lifecycle does not allow (the message names both statuses)."""

    def __init__(self, ingest_id: str, source: str | None, target: str) -> None:
        if target not in TRANSITIONS:
            message = f"{target!r} is not a status (one of {', '.join(Status)})"
        else:
            allowed_from = ", ".join(sorted(predecessors(target))) or "no status"
            message = (
                f"the status cannot change from {source} to {target} (only from {allowed_from})"
            )
        super().__init__(f"ingest {ingest_id}: {message}")
        self.ingest_id, self.source, self.target = ingest_id, source, target
