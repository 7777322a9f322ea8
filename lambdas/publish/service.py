"""Publish an audited ingest: merge exactly the audited commit into main, or rebase.

Main only moves by a merge of the hash the report names. When main changed
the same table meanwhile (an outside writer), the merge conflicts: the ingest
is re-run on a fresh branch from main, at most `max_publish_attempts` times.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from contracts.properties import ACTION_PROPERTY, INGEST_ID_PROPERTY, SNAPSHOT_ID_PROPERTY
from contracts.state import ExecutionState, Outcome, Run
from ingestion import constants as c
from ingestion.config import Settings
from ingestion.exceptions import (
    AuditedCommitMismatchError,
    InvalidEventError,
    MergeConflictError,
)
from ingestion.ingest import launch_job_run, run_branch_name, run_fields
from ingestion.ledger import IngestRecord, Ledger, tables_of
from ingestion.naming import utcnow
from ingestion.nessie import MergeMeta, NessieClient
from ingestion.published import (
    delete_branch_quietly,
    main_holds_all,
    merge_audited_commit,
    snapshot_mismatch,
)


def publish(
    settings: Settings, ledger: Ledger, nessie: NessieClient, state: ExecutionState
) -> Outcome:
    """Merge `state.run.branch @ state.outcome.branch_hash` into main and delete the branch.

    The hash is merged only if it holds the audited snapshot (`state.outcome.snapshot_id`),
    and not at all if main already holds that snapshot (a retry after the merge went
    through). Deleting the branch afterwards is best effort (`branch_deleted`).
    Returns `{"status": "PUBLISHED", ...}`, `{"status": "REBASED", "run": {...}}` (the
    state machine waits for the new run) or `{"status": "PUBLISH_FAILED", "reason"}`.
    """
    ingest_id, table, run = state.ingest_id, state.table, state.run
    branch, attempt = run.branch, run.attempt
    audited = state.outcome
    if audited is None or not audited.branch_hash or audited.snapshot_id is None:
        raise InvalidEventError(
            "publish input: the outcome must name the audited branch_hash and snapshot_id"
        )
    from_hash, snapshot_id = audited.branch_hash, int(audited.snapshot_id)
    # What every answer carries on: the audited commit and where its run reported.
    base = Outcome(
        status=c.PUBLISH_FAILED,
        report_uri=run.report_uri,
        log_uri=run.log_uri,
        branch_hash=from_hash,
        snapshot_id=str(snapshot_id),
        rows_written=audited.rows_written,
        quarantined_rows=audited.quarantined_rows,
        job_usage=audited.job_usage,  # the run's cost and times, for finish to record
    )
    record = ledger.get_ingest(ingest_id) or IngestRecord(ingest_id=ingest_id, table=table)
    if record.published_branch == branch:  # retried after the merge was recorded
        return _published(
            ledger, nessie, ingest_id, branch, base, record.published_hash, record=False
        )
    snapshots = dict(audited.snapshots) if audited.snapshots else None
    # Recorded before merging, so whoever checks a failure later can ask Nessie about it.
    ledger.update_ingest(
        ingest_id,
        audited_hash=from_hash,
        audited_snapshot_id=str(snapshot_id),
        audited_snapshots=snapshots,
    )
    expected = snapshots or {table: snapshot_id}
    if main_holds_all(nessie, expected):
        # The merge went through; its answer was lost. Only if the audited commit is the
        # one that holds it: a report naming a snapshot main already had must not mark
        # this ingest published.
        mismatch = snapshot_mismatch(nessie, branch, from_hash, expected)
        if mismatch:
            return replace(
                base,
                status=c.PUBLISH_FAILED,
                reason=f"refusing to publish: {mismatch}, which main already holds",
            )
        return _published(ledger, nessie, ingest_id, branch, base, nessie.main_hash())
    if record.branch_attempt(attempt + 1):  # retried after a rebase had begun
        return _rebase(
            settings,
            ledger,
            nessie,
            ingest_id,
            table,
            run,
            base,
            reason=record.rebase_reason or "merge conflict",
        )

    for held in tables_of(record) or (table,):
        holder = ledger.get_lock(held).active
        if holder != ingest_id:  # the sweeper gave this ingest up (its lease ran out)
            return replace(
                base,
                status=c.PUBLISH_FAILED,
                reason=f"refusing to publish: ingest {ingest_id} no longer holds "
                f"table {held} (held by {holder})",
            )
    what = ", ".join(expected)
    meta = MergeMeta(
        message=f"wap: publish ingest {ingest_id} ({what}) from {branch}, audit passed",
        author="wap-publish",
        properties={
            INGEST_ID_PROPERTY: ingest_id,
            ACTION_PROPERTY: "publish",
            SNAPSHOT_ID_PROPERTY: str(snapshot_id),
        },
    )
    try:
        main_hash = merge_audited_commit(
            nessie,
            table=table,
            branch=branch,
            audited_hash=from_hash,
            snapshot_id=snapshot_id,
            meta=meta,
            snapshots=expected,
        )
    except AuditedCommitMismatchError as exc:
        return replace(base, status=c.PUBLISH_FAILED, reason=f"refusing to publish: {exc}")
    except MergeConflictError as conflict:
        reason = f"merge of {branch} into main conflicted: {conflict}"
        if attempt >= settings.max_publish_attempts:
            return replace(
                base,
                status=c.PUBLISH_FAILED,
                reason=f"{reason}; gave up after {attempt} attempts "
                "(main keeps changing the same table)",
            )
        return _rebase(settings, ledger, nessie, ingest_id, table, run, base, reason=reason)
    return _published(ledger, nessie, ingest_id, branch, base, main_hash)


def _published(
    ledger: Ledger,
    nessie: NessieClient,
    ingest_id: str,
    branch: str,
    base: Outcome,
    main_hash: str | None,
    *,
    record: bool = True,
) -> Outcome:
    if record:
        ledger.update_ingest(ingest_id, published_branch=branch, published_hash=main_hash)
    deleted = delete_branch_quietly(nessie, branch)
    return replace(base, status=c.PUBLISHED, main_hash=main_hash, branch_deleted=deleted)


def _rebase(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    ingest_id: str,
    table: str,
    run: Run,
    base: Outcome,
    *,
    reason: str,
) -> Outcome:
    """Fresh branch from main and a new job run for the next attempt."""
    attempt = run.attempt + 1
    now = utcnow()
    current = ledger.get_ingest(ingest_id) or IngestRecord(ingest_id=ingest_id, table=table)
    proposed = run_branch_name(current, now)
    if proposed == run.branch:
        proposed = run_branch_name(current, now + timedelta(seconds=1))
    branch = ledger.set_once(ingest_id, f"branch_attempt_{attempt}", proposed)
    ledger.update_ingest(ingest_id, rebase_reason=reason)
    nessie.ensure_branch_from_main(branch)
    # The conflicting branch holds a stale copy of the same rows: drop it.
    nessie.delete_branch(run.branch)
    record = ledger.get_ingest(ingest_id) or IngestRecord(ingest_id=ingest_id, table=table)
    new_run = launch_job_run(settings, ledger, record, attempt=attempt, job_try=1, branch=branch)
    ledger.update_ingest(ingest_id, run_fields(new_run))
    return replace(base, status=c.PUBLISH_REBASED, reason=reason, run=new_run)
