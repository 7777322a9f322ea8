"""An ingest's lineage and outcome metrics from its ledger record: the glue between the
ledger, the audit report and the pure builders (`events`, `metrics`). Never raises."""

from __future__ import annotations

from contracts.lifecycle import FAILED_STATUSES, PUBLISHED
from ingestion import metrics
from ingestion.config import Settings
from ingestion.ledger import BatchRecord, Ledger, LedgerRecord, tables_of
from ingestion.lineage import events
from ingestion.lineage.transport import emit_quietly
from ingestion.log import logger
from ingestion.naming import utcnow


def inputs_of(ledger: Ledger, record: LedgerRecord) -> list[events.LineageInput]:
    """The uploaded object versions the ingest reads (for a batch: each member's)."""
    origins = ledger.origin_uris(record)
    if origins is None:
        origins = [record.source_uri] if record.source_uri else []
    return [events.LineageInput(uri) for uri in origins]


def files_of(record: LedgerRecord) -> int:
    return len(record.members) if isinstance(record, BatchRecord) else 1


def send_start(
    settings: Settings, ledger: Ledger, record: LedgerRecord, *, branch: str, attempt: int
) -> None:
    """START of the ingest's run, once its job run is submitted."""
    if not settings.lineage_url or not record.table:
        return
    try:
        event = events.start_event(
            namespace=settings.lineage_namespace,
            ingest_id=record.ingest_id,
            table=record.table,
            inputs=inputs_of(ledger, record),
            branch=branch,
            attempt=attempt,
            at=utcnow(),
            tables=tables_of(record),
        )
    except Exception:
        logger.exception("could not build the OpenLineage START event")
        return
    emit_quietly(settings, [event], table=record.table)


def record_outcome(
    settings: Settings, ledger: Ledger, record: LedgerRecord, *, job_started_at: str | None = None
) -> None:
    """The metrics of the outcome the ledger recorded for `record`, and its terminal
    OpenLineage event (with the audit report's checks when the job wrote one)."""
    status, table = record.status or "", record.table
    try:
        metrics.emit(
            metrics.outcome_values(
                status,
                files=files_of(record),
                created_at=record.created_at,
                job_started_at=job_started_at,
                finished_at=record.finished_at,
                cost_usd=record.cost_usd,
            ),
            table=table,
        )
    except Exception:
        logger.exception("could not emit the outcome metrics")
    if not settings.lineage_url or not table:
        return
    try:
        event = events.outcome_event(
            namespace=settings.lineage_namespace,
            ingest_id=record.ingest_id,
            table=table,
            inputs=inputs_of(ledger, record),
            outcome=outcome_of(record),
            report=_report(record.report_uri),
            at=utcnow(),
        )
    except Exception:
        logger.exception("could not build the OpenLineage outcome event")
        return
    emit_quietly(settings, [event], table=table)


def outcome_of(record: LedgerRecord) -> events.Outcome:
    """The ledger's outcome of an ingest as the event carries it."""
    status = record.status or ""
    published = status == PUBLISHED
    branch_open = status in FAILED_STATUSES and record.branch and not record.branch_deleted_at
    return events.Outcome(
        status=status,
        reason=record.error,
        reason_code=record.reason_code,
        reference="main" if published else record.branch,
        hash=(record.published_hash or None) if published else record.branch_hash,
        snapshot_id=record.snapshot_id,
        review_branch=record.branch if branch_open else None,
        attempt=record.attempts,
        report_uri=record.report_uri,
        reviewer=record.published_by or record.discarded_by,
        review_reason=record.publish_reason or record.discard_reason,
    )


def _report(uri: str | None):
    """The audit report at `uri`, None when there is none to read (a run that never wrote
    one) or it cannot be read: the event then goes without checks."""
    if not uri:
        return None
    from ingestion.alerting.report import ReportUnavailableError, load_report

    try:
        return load_report(uri)
    except ReportUnavailableError as exc:
        logger.info("no audit report for the lineage event", extra={"problem": str(exc)})
        return None
