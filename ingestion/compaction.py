"""Compaction as Write-Audit-Publish: the rules, written once for both paths.

`wap maintain` runs the job in-process (wap/ops/compaction.py); on AWS the maintenance
Lambda starts it on EMR Serverless and publishes when it ended (lambdas/maintenance/
compaction.py). Both:

1. `begin`: record the run in the ledger (source `maintenance:compaction`, so `wap runs`
   lists it) and take the table's lock as an ingest does. A busy table is refused
   (`TableBusyError`); ingests that arrive while the run holds it queue behind it.
2. create the branch `wap_<ns>_<table>_<time>_<id8>` from main (`open_branch`) and run
   `spark_jobs.compaction.compact` on it (their own way);
3. `conclude`: passed -> main merges exactly the audited head, once it holds the audited
   snapshot (`merge_audited_commit`, the publish path of ingests) when the rewrite committed
   anything, and the branch goes;
   audit failed or job failed -> nothing is merged, the branch stays, the record says why
   and an alert is sent;
4. then release the table and start whoever queued (`release_and_start_next`, their own
   way: the local stack runs it in the finish Lambda's sandbox).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.alert import AlertEvent
from contracts.compaction import CompactionVerdict
from contracts.naming import hex_id
from contracts.properties import INGEST_ID_PROPERTY, MAINTENANCE_PROPERTY
from ingestion import constants as c
from ingestion.exceptions import (
    NotACompactionError,
    RetryableError,
    TableBusyError,
    UnknownTableError,
)
from ingestion.ledger import LOCK_ACTIVE, IngestRecord, Ledger
from ingestion.lifecycle import settle_maintenance
from ingestion.lineage import events
from ingestion.lineage.record import outcome_of
from ingestion.naming import TableRef, branch_name, iso, utcnow
from ingestion.nessie import MergeMeta, NessieClient
from ingestion.published import merge_audited_commit

SOURCE = c.MAINTENANCE_SOURCE
AUTHOR = "wap maintain"
BASE_HASH_FIELD = "base_hash"  # main's hash at the branch point (the audit's "before")


@dataclass(frozen=True)
class CompactionStart:
    """A compaction that holds its table: its ledger id, table and branch."""

    run_id: str
    table: str
    branch: str


@dataclass(frozen=True)
class CompactionOutcome:
    """How a compaction ended: PUBLISHED (merged, or nothing to rewrite), AUDIT_FAILED or
    JOB_FAILED, why, and main's hash after the merge."""

    run_id: str
    table: str
    branch: str
    status: str
    reason: str | None
    main_hash: str | None = None
    verdict: CompactionVerdict | None = None


def begin(
    ledger: Ledger, nessie: NessieClient, table: str, now: datetime | None = None
) -> CompactionStart:
    """Record the run and take `table`'s lock (status RUNNING, its branch named).

    Raises `UnknownTableError` for a table main does not have and `TableBusyError` while
    another run holds it (then nothing is left queued: an ingest must not start a
    compaction). The caller must release the table whatever happens next.
    """
    ref = TableRef.parse(table)
    table = ref.qualified
    if nessie.metadata_location(c.MAIN_BRANCH, table) is None:
        raise UnknownTableError(f"main has no table {table}")
    now = now or utcnow()
    run_id = hex_id(f"{SOURCE}/{table}/{iso(now)}")
    branch = branch_name(ref, now, run_id)
    if ledger.get_lock(table).active is not None:
        raise TableBusyError(f"{table} is busy (an ingest holds it): try again when it is free")
    ledger.create_ingest(
        IngestRecord(ingest_id=run_id, table=table, status=c.RECEIVED, source_uri=SOURCE)
    )
    if ledger.acquire_or_enqueue(table, run_id) != LOCK_ACTIVE:
        ledger.release(table, run_id)  # out of the queue: an ingest must not start it
        settle_maintenance(ledger, run_id, c.REJECTED, "the table was busy", deliver=None)
        raise TableBusyError(f"{table} is busy (an ingest took it): try again when it is free")
    ledger.update_ingest(run_id, status=c.RUNNING, branch=branch)
    return CompactionStart(run_id, table, branch)


def open_branch(ledger: Ledger, nessie: NessieClient, start: CompactionStart) -> str:
    """Create the run's branch from main (kept if it exists); main's hash there, recorded."""
    base = nessie.ensure_branch_from_main(start.branch)
    return str(ledger.set_once(start.run_id, BASE_HASH_FIELD, base))


def conclude(
    ledger: Ledger,
    nessie: NessieClient,
    start: CompactionStart,
    *,
    verdict: CompactionVerdict | None,
    job_error: str | None,
    alert: Callable[[AlertEvent], Any],
) -> CompactionOutcome:
    """Publish a passed compaction, or record and alert why it was not (`verdict` None: the
    job failed with `job_error`; a merge Nessie refused: PUBLISH_FAILED). Does not release
    the table. Raises `RetryableError` (Nessie unreachable) with nothing recorded."""
    if verdict is None:
        reason = f"compaction job failed: {' '.join(str(job_error).split())}"[:500]
        return _failed(ledger, alert, start, c.JOB_FAILED, reason, None)
    if not verdict.passed:
        return _failed(ledger, alert, start, c.AUDIT_FAILED, verdict.reason, verdict)
    record = ledger.get_ingest(start.run_id)
    base = record.field_value(BASE_HASH_FIELD) if record is not None else None
    # Exactly what the audit saw: the job's head when it says, else the branch's (the
    # in-process run audits it and nothing else writes to the branch meanwhile).
    head = verdict.head_hash or nessie.branch_hash(start.branch) or base
    numbers = {
        "files_before": verdict.files_before,
        "files_after": verdict.files_after,
        "rows_after": verdict.rows,
    }
    merged = None
    if verdict.changed:
        # Recorded first: a run that dies after the merge is found published by the sweeper
        # (main_holds_ingest), as an ingest's is.
        ledger.update_ingest(
            start.run_id, audited_hash=head, audited_snapshot_id=str(verdict.snapshot_id)
        )
        try:
            merged = _merge_once(nessie, start, verdict, head)
        except RetryableError:
            raise  # Nessie unreachable: nothing recorded, the next caller concludes again
        except Exception as exc:  # main moved under it, or the commit is not what was audited
            reason = f"the audited compaction could not be merged: {type(exc).__name__}: {exc}"
            return _failed(ledger, alert, start, c.PUBLISH_FAILED, reason, verdict)
    nessie.delete_branch(start.branch, head)
    done = iso(utcnow())
    reason = None if verdict.changed else "nothing to rewrite"
    settle_maintenance(
        ledger,
        start.run_id,
        c.PUBLISHED,
        reason,
        deliver=alert,
        fields={
            **numbers,
            "branch_deleted_at": done,
            "audited_hash": head,
            "published_hash": merged,
            "rows_written": 0,
        },
        at=done,
    )
    return CompactionOutcome(
        start.run_id, start.table, start.branch, c.PUBLISHED, reason, merged, verdict
    )


def _merge_once(
    nessie: NessieClient, start: CompactionStart, verdict: CompactionVerdict, head: str
) -> str:
    """Merge the audited head unless an earlier try already did (main's table is at the
    audited snapshot: an outcome is checked before it is recorded); main's hash after."""
    if nessie.main_holds(start.table, verdict.snapshot_id):
        return nessie.main_hash()
    return merge_audited_commit(
        nessie,
        table=start.table,
        branch=start.branch,
        audited_hash=head,
        snapshot_id=verdict.snapshot_id,
        meta=MergeMeta(
            message=f"compaction of {start.table}: {verdict.files_before} -> "
            f"{verdict.files_after} data files",
            author=AUTHOR,
            properties={INGEST_ID_PROPERTY: start.run_id, MAINTENANCE_PROPERTY: "compaction"},
        ),
    )


def _failed(
    ledger: Ledger,
    alert: Callable[[AlertEvent], Any],
    start: CompactionStart,
    status: str,
    reason: str | None,
    verdict: CompactionVerdict | None,
) -> CompactionOutcome:
    settle_maintenance(ledger, start.run_id, status, reason, deliver=alert)
    return CompactionOutcome(start.run_id, start.table, start.branch, status, reason, None, verdict)


def start_event(namespace: str, start: CompactionStart) -> events.RunEvent:
    """The run's OpenLineage START (job `compaction.<table>`), as both paths send it."""
    return events.start_event(
        namespace=namespace,
        ingest_id=start.run_id,
        table=start.table,
        inputs=[],
        branch=start.branch,
        attempt=1,
        at=utcnow(),
        kind=events.COMPACTION,
    )


def outcome_event(namespace: str, ledger: Ledger, start: CompactionStart) -> events.RunEvent:
    """The run's OpenLineage COMPLETE or FAIL: the outcome the ledger recorded."""
    return events.outcome_event(
        namespace=namespace,
        ingest_id=start.run_id,
        table=start.table,
        inputs=[],
        outcome=outcome_of(ledger.get_ingest(start.run_id)),
        report=None,
        at=utcnow(),
        kind=events.COMPACTION,
    )


def start_of(record: Any) -> CompactionStart:
    """The `CompactionStart` a ledger record of a compaction names."""
    if record.source_uri != SOURCE or not record.table or not record.branch:
        raise NotACompactionError(f"run {record.ingest_id} is not a compaction")
    return CompactionStart(record.ingest_id, record.table, record.branch)
