"""Compaction on AWS as EMR Serverless job runs: started by the maintenance Lambda
(`wap --aws maintain`, the daily run), concluded by whoever sees the run ended first (the
maintenance Lambda asked by the CLI or the daily run, or the sweeper within minutes), by the
rules `wap maintain` follows locally (ingestion/compaction.py).

- `start`: record the run and take the table's lock (a busy table is refused), create the
  branch, start the job run (`wap_job.py --compact`, as the ingests' role); the table stays
  held while the job runs, so ingests that arrive queue behind it.
- `finish`: a run still going says so (and renews the table's lease); an ended one is
  concluded: the result the job wrote is read and, passed and changed, exactly its audited
  head is merged into main; otherwise AUDIT_FAILED or JOB_FAILED with an alert and the
  branch left. Then the table is released and the next queued ingest started.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from contracts.compaction import CompactionReportError, CompactionVerdict
from contracts.table_config import MaintenanceOptions
from ingestion import aws
from ingestion import compaction as rules
from ingestion import constants as c
from ingestion.alerts import send_alert_quietly
from ingestion.config import Settings
from ingestion.exceptions import NotACompactionError, RetryableError
from ingestion.ingest import job_log_uri, release_and_start_next, start_compaction_run
from ingestion.ledger import Changes, Ledger
from ingestion.lineage.transport import emit_quietly
from ingestion.log import logger
from ingestion.naming import iso, utcnow
from ingestion.nessie import NessieClient

RUNNING = "RUNNING"  # what `finish` answers while the job run has not ended
REPORT_FIELD = "compaction_report_uri"  # not `report_uri`: that one is an audit report's
CLAIM_FIELD = "concluding"  # who concludes an ended run, and since when
ENDED = frozenset({"SUCCESS", "FAILED", "CANCELLED"})
MAX_REPORT_BYTES = 1024 * 1024


def start(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    table: str,
    options: MaintenanceOptions,
) -> dict[str, Any]:
    """Take the table and start its compaction job run; what was started (status RUNNING),
    or the outcome when it could not start (JOB_FAILED, alerted, the table handed on).
    Raises `UnknownTableError` and `TableBusyError` before anything is recorded held."""
    begun = rules.begin(ledger, nessie, table)
    _send_lineage(settings, begun, lambda: rules.start_event(settings.lineage_namespace, begun))
    try:
        rules.open_branch(ledger, nessie, begun)
        report_uri = settings.report_uri(begun.table, begun.run_id, 1)
        ledger.update_ingest(begun.run_id, Changes({REPORT_FIELD: report_uri}))
        job_run_id = start_compaction_run(
            settings,
            run_id=begun.run_id,
            table=begun.table,
            branch=begun.branch,
            report_uri=report_uri,
            target_file_size=options.target_file_size,
            min_files=options.min_files,
        )
        ledger.update_ingest(
            begun.run_id,
            job_run_id=job_run_id,
            log_uri=job_log_uri(settings, begun.run_id, job_run_id),
        )
    except Exception as exc:
        logger.exception("compaction could not start", extra={"run_id": begun.run_id})
        try:
            done = rules.conclude(
                ledger,
                nessie,
                begun,
                verdict=None,
                job_error=f"could not start: {type(exc).__name__}: {exc}",
                alert=send_alert_quietly,
            )
        finally:
            _send_outcome(settings, ledger, begun)
            release_and_start_next(settings, ledger, nessie, begun.table, begun.run_id)
        return outcome_json(done)
    return _running_json(begun, job_run_id=job_run_id)


def finish(settings: Settings, ledger: Ledger, nessie: NessieClient, run_id: str) -> dict[str, Any]:
    """Conclude the compaction `run_id` if its job run ended; `{"status": "RUNNING", ...}`
    while it runs, its outcome once concluded (asked again: the recorded outcome).
    Raises `NotACompactionError` for an id that names no compaction."""
    record = ledger.get_ingest(run_id)
    if record is None:
        raise NotACompactionError(f"no run {run_id!r} in the ledger")
    begun = rules.start_of(record)
    if record.status != c.RUNNING:
        return recorded_json(record)
    job_run_id = record.job_run_id
    if not job_run_id:  # `start` is still on its way (or died: the sweeper frees the table)
        return _running_json(begun, job_state=None)
    run = aws.call(
        f"read job run {job_run_id}",
        aws.client("emr-serverless").get_job_run,
        applicationId=settings.emr_application_id,
        jobRunId=job_run_id,
    )["jobRun"]
    if run["state"] not in ENDED:
        ledger.renew_lease(begun.table, run_id)
        return _running_json(begun, job_state=run["state"])
    # One finisher (the CLI and the daily run may ask at once): the first to set the claim
    # concludes; a claimer that dies leaves the lock to the sweeper when its lease ends
    # (main_holds_ingest then says whether the merge went through).
    claim = f"{iso(utcnow())} {uuid.uuid4().hex[:8]}"
    if ledger.set_once(run_id, CLAIM_FIELD, claim) != claim:
        return _running_json(begun, job_state=run["state"], concluding=True)
    verdict, job_error = None, None
    if run["state"] == "SUCCESS":
        verdict, job_error = _read_verdict(record.field_value(REPORT_FIELD))
    else:
        job_error = f"job run {job_run_id} ended {run['state']}: {run.get('stateDetails', '')}"
    try:
        done = rules.conclude(
            ledger, nessie, begun, verdict=verdict, job_error=job_error, alert=send_alert_quietly
        )
    except RetryableError:
        # Still held and RUNNING: the next caller (a sweep at the latest) concludes it.
        ledger.update_ingest(run_id, Changes({CLAIM_FIELD: None}))
        raise
    _send_outcome(settings, ledger, begun)
    release_and_start_next(settings, ledger, nessie, begun.table, run_id)
    return outcome_json(done)


def _running_json(begun: rules.CompactionStart, **more: Any) -> dict[str, Any]:
    """What `start` and `finish` answer while the job run goes on: the run, then `more`."""
    return {
        "run_id": begun.run_id,
        "table": begun.table,
        "branch": begun.branch,
        "status": RUNNING,
        **more,
    }


def _send_lineage(
    settings: Settings, begun: rules.CompactionStart, build: Callable[[], Any]
) -> None:
    """Send one OpenLineage event of the run (job `compaction.<table>`, as `wap maintain`
    sends them), when the stack has a receiver; never raises."""
    if not settings.lineage_url:
        return
    try:
        event = build()
    except Exception:
        logger.exception("could not build a compaction's OpenLineage event")
        return
    emit_quietly(settings, [event], table=begun.table)


def _send_outcome(settings: Settings, ledger: Ledger, begun: rules.CompactionStart) -> None:
    """COMPLETE or FAIL: the outcome the ledger recorded."""
    _send_lineage(
        settings, begun, lambda: rules.outcome_event(settings.lineage_namespace, ledger, begun)
    )


def _read_verdict(uri: str | None) -> tuple[CompactionVerdict | None, str | None]:
    """The job's result at `uri`, or (None, why) when there is none to trust."""
    if not uri:
        return None, "the run names no result"
    try:
        data = aws.read_text_s3(uri, max_bytes=MAX_REPORT_BYTES)
    except Exception as exc:  # e.g. denied, too large: the job's failure, the table freed
        return None, f"the job's result {uri} cannot be read: {type(exc).__name__}: {exc}"
    if data is None:
        return None, f"the job ended without writing its result {uri}"
    try:
        return CompactionVerdict.from_dict(json.loads(data)), None
    except (ValueError, CompactionReportError) as exc:
        return None, f"the job's result {uri} cannot be read: {exc}"


def outcome_json(done: rules.CompactionOutcome) -> dict[str, Any]:
    """A concluded compaction, as `wap maintain --json` shows one run."""
    verdict = done.verdict
    return {
        "run_id": done.run_id,
        "table": done.table,
        "status": done.status,
        "branch": done.branch,
        "reason": done.reason,
        "main_hash": done.main_hash,
        "files_before": verdict.files_before if verdict else None,
        "files_after": verdict.files_after if verdict else None,
        "rows": verdict.rows if verdict else None,
    }


def recorded_json(record: Any) -> dict[str, Any]:
    """A compaction's recorded outcome, asked again (the numbers of a published one)."""
    return {
        "run_id": record.ingest_id,
        "table": record.table,
        "status": record.status,
        "branch": record.branch,
        "reason": record.error,
        "main_hash": record.published_hash,
        "files_before": record.field_value("files_before"),
        "files_after": record.field_value("files_after"),
        "rows": record.field_value("rows_after"),
    }
