"""Scheduled housekeeping: recover stuck table locks, clean up after final ingests, and
say which tables' expected drops are late (issue 42).

Each table and each record is handled on its own: one that fails (an AWS error, a
Nessie refusal) is reported and the sweep goes on with the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from contracts.alert import BLOCKED
from ingestion import aws, compaction_runs
from ingestion import constants as c
from ingestion.alerting.report import ReportUnavailableError, load_report
from ingestion.alerts import alert_event, alerts_on, send_alert_quietly
from ingestion.arrivals import SubjectFreshness, check_arrivals, deployed_expectations
from ingestion.batching import (
    open_batch,
    reject_for_config,
    table_intake,
    unknown_table_reason,
)
from ingestion.config import Settings
from ingestion.ingest import cancel_job_run, release_and_start_next, start_or_fail
from ingestion.ledger import (
    LOCK_QUEUED,
    Changes,
    IngestRecord,
    Ledger,
    QueueStat,
    Record,
    Successor,
    TableLock,
    is_multi_table,
    tables_of,
)
from ingestion.lifecycle import Deliver, decide, settle
from ingestion.log import logger
from ingestion.naming import iso, parse_iso, utcnow
from ingestion.nessie import NessieClient
from ingestion.published import delete_branch_quietly, main_holds_ingest
from ingestion.staging import delete_staged


@dataclass
class SweepReport:
    """What one sweep changed."""

    recovered_locks: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    discarded_branches: list[str] = field(default_factory=list)
    deleted_branches: list[str] = field(default_factory=list)
    deleted_staged: list[str] = field(default_factory=list)
    expired_held: list[str] = field(default_factory=list)  # part files whose marker never came
    queues: list[QueueStat] = field(default_factory=list)  # after the sweep's own changes
    # Every table (or dataset) with an `expect:` section, late ones first.
    arrivals: list[SubjectFreshness] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def sweep(
    settings: Settings, ledger: Ledger, nessie: NessieClient, now: datetime | None = None
) -> SweepReport:
    """Recover every stuck lock, then clean up final ingests that are due (branches past
    retention, branches a publish could not delete, staged copies no longer needed)."""
    now = now or utcnow()
    report = SweepReport()
    for listed in ledger.list_locks():
        try:
            lock = ledger.get_lock(listed.table)  # the index may lag: act on a consistent read
            if lock.active:
                _recover_lock(settings, ledger, nessie, lock, now, report)
        except Exception as exc:  # isolate tables: one poisoned lock must not stop the rest
            logger.exception("could not recover the lock", extra={"table": listed.table})
            report.errors.append(f"{listed.table}: {type(exc).__name__}: {exc}")
    # A multi-table dataset is a batch record its manifest's trigger starts: adopted too
    # (after the files; one read of the status index for both).
    pending = ledger.with_status(c.RECEIVED)
    received = [
        *(record for record in pending if isinstance(record, IngestRecord)),
        *(record for record in pending if is_multi_table(record)),
    ]
    for listed in received:
        try:
            _adopt_orphan(settings, ledger, nessie, listed.ingest_id, now, report)
        except Exception as exc:
            logger.exception("could not adopt", extra={"ingest_id": listed.ingest_id})
            report.errors.append(f"{listed.ingest_id}: {type(exc).__name__}: {exc}")
    try:
        _expire_held(settings, ledger, now, report)
    except Exception as exc:
        logger.exception("could not expire held files")
        report.errors.append(f"held files: {type(exc).__name__}: {exc}")
    for listed in ledger.due_for_sweep(now):
        try:
            record = ledger.get_ingest(listed.ingest_id)
            if record is not None:
                _clean_up(settings, ledger, nessie, record, now, report)
        except Exception as exc:
            logger.exception("could not clean up", extra={"ingest_id": listed.ingest_id})
            report.errors.append(f"{listed.ingest_id}: {type(exc).__name__}: {exc}")
    try:  # after the clean-up: a publish the lock recovery recorded counts as an arrival
        report.arrivals = check_arrivals(
            ledger, deployed_expectations(settings), now, send_alert_quietly
        )
    except Exception as exc:
        logger.exception("could not check the expected arrivals")
        report.errors.append(f"expected arrivals: {type(exc).__name__}: {exc}")
    report.queues = ledger.queues(now)
    return report


def _adopt_orphan(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    ingest_id: str,
    now: datetime,
    report: SweepReport,
) -> None:
    """A RECEIVED ingest whose trigger gave up before it reached its table's lock (every
    retry failed): queue it now, or, never staged, fail it with a reason and an alert."""
    record = ledger.get_ingest(ingest_id)
    if record is None or record.status != c.RECEIVED or not record.table:
        return
    if isinstance(record, IngestRecord) and record.batch_id:
        return  # a multi-table dataset's file, recorded as such: only its dataset runs it
    created = record.created()
    if created is None or now - created < settings.blocked_start:
        return  # its trigger may still be running or retrying
    lock = ledger.get_lock(record.table)
    if lock.active == ingest_id or lock.waiting(ingest_id):
        return  # the lock recovery above takes care of it
    if not record.staged_at:
        reason = (
            "the trigger could not stage the uploaded version and gave up; upload the file again"
        )
        settle(settings, ledger, record, c.JOB_FAILED, reason, only_if_status={c.RECEIVED}, at=now)
        return
    if is_multi_table(record):  # a dataset: its config declares its tables
        start_or_fail(settings, ledger, nessie, record)  # takes every lock, in order
        report.restarted.append(ingest_id)
        return
    # Its trigger may have given up before it could tell whether the table is known.
    unknown = unknown_table_reason(
        settings, nessie, record.table, table_intake(settings, record.table)
    )
    if unknown:
        reject_for_config(ledger, record, unknown, reason_code=c.UNKNOWN_TABLE, settings=settings)
        return
    if ledger.acquire_or_enqueue(record.table, ingest_id) == LOCK_QUEUED:
        ledger.update_ingest(ingest_id, status=c.QUEUED, only_if_status={c.RECEIVED})
    else:
        start_or_fail(settings, ledger, nessie, ledger.get_ingest(ingest_id) or record)
    report.restarted.append(ingest_id)


def _expire_held(settings: Settings, ledger: Ledger, now: datetime, report: SweepReport) -> None:
    """Part files of `arrival: marker` tables whose dataset's marker never came within the
    table's `marker_timeout`: REJECTED, each dataset alerted once."""
    datasets: dict[tuple[str, str], list[Record]] = {}
    for record in ledger.list_ingests(statuses={c.HELD}):
        datasets.setdefault((record.table or "", record.dataset or ""), []).append(record)
    timeouts: dict[str, timedelta] = {}  # per table: one config read for all its datasets
    for (table, prefix), records in sorted(datasets.items()):
        if table not in timeouts:
            timeouts[table] = timedelta(
                seconds=table_intake(settings, table).limits.marker_timeout_seconds
            )
        timeout = timeouts[table]
        oldest = min(parse_iso(record.created_at or "") for record in records)
        if now - oldest < timeout:
            continue
        reason = (
            f"no _SUCCESS or _manifest.json arrived in {prefix} within {timeout} of its "
            f"first file ({len(records)} file{'s' * (len(records) != 1)} held); upload "
            "the marker to ingest them, or the files again"
        )
        expired = []
        for record in records:
            # Each file settled on its own (counted, traced); the dataset alerted once.
            if settle(
                settings,
                ledger,
                record,
                c.REJECTED,
                reason,
                only_if_status={c.HELD},
                alert=not expired,
                at=now,
            ):
                expired.append(record.ingest_id)
        report.expired_held += expired


def _clean_up(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    record: Record,
    now: datetime,
    report: SweepReport,
) -> None:
    """One final record: its branch (kept for inspection until the retention ends), then
    its staged copy (a dataset's: its frozen config) once the branch is gone; then it
    leaves the sweep index."""
    iid, status, branch = record.ingest_id, record.status, record.branch
    if branch and not record.branch_deleted_at and status in c.FAILED_STATUSES:
        finished = parse_iso(record.finished_at or record.updated_at or "")
        expires = finished + timedelta(days=settings.branch_retention_days)
        if expires > now:  # still open for inspection: come back when it expires
            ledger.update_ingest(iid, sweep_after=iso(expires))
            return
        nessie.delete_branch(branch)
        discarded = Changes(
            status=c.DISCARDED,
            previous_status=status,
            branch_deleted_at=iso(now),
            discard_reason=f"branch older than {settings.branch_retention_days} days",
        )
        decide(ledger, iid, discarded, only_if_status={status})
        report.discarded_branches.append(branch)
        return  # DISCARDED is final too: the staged copy goes on the next pass
    if branch and not record.branch_deleted_at:  # published, but its delete after the merge failed
        if not delete_branch_quietly(nessie, branch):
            return
        ledger.update_ingest(iid, branch_deleted_at=iso(now))
        report.deleted_branches.append(branch)
    # A file's staged copy; a multi-table dataset's frozen config (its runs are over).
    staged = record.staged_uri if isinstance(record, IngestRecord) else record.dataset_config_uri
    if staged and record.staged_at and not record.staged_deleted_at:
        delete_staged(aws.client("s3"), staged)
        ledger.update_ingest(iid, staged_deleted_at=iso(now))
        report.deleted_staged.append(staged)
    ledger.swept(iid)


def _recover_lock(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    lock: TableLock,
    now: datetime,
    report: SweepReport,
) -> None:
    table, active = lock.table, lock.active
    assert active is not None
    record = ledger.get_ingest(active)
    if record is None and lock.batch:  # the batch's record was not written yet
        record = open_batch(ledger, table, Successor(active, tuple(lock.batch)))
    status = record.status if record else None
    if record is None or status in c.TERMINAL_STATUSES:
        # Finish recorded the outcome but died before freeing the table.
        release_and_start_next(settings, ledger, nessie, table, active)
        report.recovered_locks.append(table)
        return
    if record is not None and record.source_uri == c.MAINTENANCE_SOURCE and status == c.RUNNING:
        # A compaction runs without an execution. On EMR (it names its job run) the sweep
        # concludes it once the run ended, within minutes, as the state machine would an
        # ingest; one another caller is concluding, or one in-process, is alive while its
        # lease lasts, and recovered below after that.
        if record.job_run_id and not record.field_value(compaction_runs.CLAIM_FIELD):
            if (
                compaction_runs.finish(settings, ledger, nessie, active)["status"]
                != compaction_runs.RUNNING
            ):
                report.recovered_locks.append(table)
            return
        if not lock.lease_expired(now):
            return
    if status in c.PENDING_STATUSES:
        if lock.active_since and now - parse_iso(lock.active_since) < settings.blocked_start:
            return
        if _queued_behind_live_holder(ledger, record, now):
            return  # not stuck: the holder's release hands it that table and starts it
        try:
            start_or_fail(settings, ledger, nessie, record)
        except Exception as exc:  # retryable (Nessie, EMR down): say so once, retry each sweep
            _alert_blocked_once(ledger, record, lock, now, exc)
            raise
        report.restarted.append(active)
        return
    execution_state = _execution_status(record.execution_arn)
    if execution_state == "RUNNING" and not lock.lease_expired(now):
        return
    reason = (
        f"execution {record.execution_arn} ended {execution_state} without "
        "recording an outcome; the sweeper freed the table"
        if execution_state != "RUNNING"
        else f"the ingest held table {table} past its lease ({lock.lease_expires_at}) without "
        "finishing; the sweeper freed the table"
    )
    _cancel_job_run(settings, record.job_run_id)
    if main_holds_ingest(nessie, table, record):  # died after the merge: it is published
        settle_merged(settings, ledger, nessie, record, now)
    else:
        settle(
            settings,
            ledger,
            record,
            c.JOB_FAILED,
            reason,
            only_if_status={c.RUNNING},
            at=now,
            job_started_at=record.job_started_at,
        )
    release_and_start_next(settings, ledger, nessie, table, active)
    report.recovered_locks.append(table)
    logger.warning(
        "stuck table lock recovered",
        extra={"table": table, "ingest_id": active, "execution_state": execution_state},
    )


def settle_merged(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    record: Record,
    now: datetime,
    deliver: Deliver = send_alert_quietly,
) -> None:
    """A run the sweeper finds merged into main (it died after the merge): PUBLISHED with
    its report's rows written and rows set aside, and alerted as Finish alerts a publish:
    a warning when rows were quarantined, nothing for a clean one."""
    fields = _published_counts(record)
    if delete_branch_quietly(nessie, record.branch):
        fields["branch_deleted_at"] = iso(now)
    settle(
        settings,
        ledger,
        record,
        c.PUBLISHED,
        None,
        only_if_status={c.RUNNING},
        alert=alerts_on(c.PUBLISHED, fields.get("quarantined_rows")),
        deliver=deliver,
        fields=fields,
        at=now,
        job_started_at=record.job_started_at,
    )


def _published_counts(record: Record) -> dict[str, int]:
    """The rows written and set aside that the run's report gives (as Finish records
    them); none when the report cannot be read (then no warning either)."""
    if not record.report_uri:
        return {}
    try:
        report = load_report(record.report_uri)
    except ReportUnavailableError:
        logger.exception("report of a merged run unreadable", extra={"ingest_id": record.ingest_id})
        return {}
    counts = {"rows_written": report.rows_written}
    if report.quarantined_rows:
        counts["quarantined_rows"] = report.quarantined_rows
    return counts


def _queued_behind_live_holder(ledger: Ledger, record: Record, now: datetime) -> bool:
    """A multi-table dataset that holds some of its tables and is QUEUED at the next
    (`waiting_for`) behind another ingest that is still alive (not final, lease not run
    out), in that table's queue: it goes on when that table is handed to it. False when
    it is stuck: the lock no longer queues it, or its holder is gone."""
    waiting_for = getattr(record, "waiting_for", None)
    if record.status != c.QUEUED or not waiting_for or waiting_for not in tables_of(record):
        return False
    lock = ledger.get_lock(waiting_for)
    if (
        not lock.active
        or lock.active == record.ingest_id
        or record.ingest_id not in lock.queue
        or lock.lease_expired(now)
    ):
        return False
    holder = ledger.get_ingest(lock.active)
    return holder is not None and not holder.is_terminal


def _alert_blocked_once(
    ledger: Ledger, record: Record, lock: TableLock, now: datetime, exc: Exception
) -> None:
    """One alert per blocked file: which table waits, since when, and why."""
    iid, table = record.ingest_id, lock.table
    # Conditional on the field too: two sweeps that overlap both read it unset.
    if record.blocked_alerted_at or not ledger.update_ingest(
        iid,
        blocked_alerted_at=iso(now),
        only_if_status=c.PENDING_STATUSES,
        only_if=("blocked_alerted_at", None),
    ):
        return
    since = lock.active_since or record.created_at
    waiting = len(lock.queue)
    reason = (
        f"the next file of {table} could not start since {since} "
        f"({type(exc).__name__}: {exc}); {waiting} more file{'s' * (waiting != 1)} "
        "wait behind it. Every sweep tries again: the table runs as soon as a start "
        "succeeds, with no action needed once the cause is fixed"
    )
    send_alert_quietly(
        alert_event(ledger.get_ingest(iid) or record, outcome=BLOCKED, reason=reason)
    )


def _execution_status(execution_arn: str | None) -> str:
    if not execution_arn:
        return "MISSING"
    sfn = aws.client("stepfunctions")
    try:
        return sfn.describe_execution(executionArn=execution_arn)["status"]
    except sfn.exceptions.ExecutionDoesNotExist:
        return "MISSING"


def _cancel_job_run(settings: Settings, job_run_id: str | None) -> None:
    """Stop an orphaned job run (nobody will read its report); best effort."""
    if not job_run_id:
        return
    emr = aws.client("emr-serverless")
    try:
        state = emr.get_job_run(applicationId=settings.emr_application_id, jobRunId=job_run_id)[
            "jobRun"
        ]["state"]
        if state in c.EMR_ACTIVE_STATES:
            cancel_job_run(settings, job_run_id)
    except Exception:
        logger.exception("could not cancel orphaned job run", extra={"job_run_id": job_run_id})
