"""Building the alert event (contract of lambdas/alert) and sending it without side effects."""

from __future__ import annotations

import logging

from contracts.alert import AlertEvent
from contracts.lifecycle import PUBLISHED
from contracts.table_config import quarantine_table_name
from ingestion.ledger.records import LedgerRecord, tables_of

_log = logging.getLogger(__name__)


def alert_event(
    record: LedgerRecord, *, outcome: str, reason: str | None, execution_arn: str | None = None
) -> AlertEvent:
    """The alert for an ingest that did not publish (or published with rows quarantined:
    `quarantine_notice`), from its ledger record, built and checked by the one definition
    of the event; raises AlertEventError naming a bad field."""
    return AlertEvent.from_dict(
        {
            "ingest_id": record.ingest_id,
            # A multi-table dataset's alert is about every table it would have published.
            "table": ", ".join(tables_of(record)) or "unknown",
            "source_uri": record.source_uri,
            "outcome": outcome,
            "reason": reason,
            "branch": record.branch,
            "report_uri": record.report_uri,
            "execution_arn": execution_arn or record.execution_arn,
            "log_uri": record.log_uri,
            "quarantine": quarantine_notice(record) if outcome == PUBLISHED else None,
        }
    )


def quarantine_notice(record: LedgerRecord) -> dict | None:
    """The event's `quarantine` for a published record that set rows aside, else None."""
    if not record.quarantined_rows:
        return None
    return {
        "rows_published": record.rows_written or 0,
        "rows_quarantined": record.quarantined_rows,
        "quarantine_tables": [quarantine_table_name(table) for table in tables_of(record)],
    }


def alerts_on(status: str, quarantined_rows: int | None) -> bool:
    """Whether an ingest ended with `status` is alerted: a failure always, a publish only
    with rows quarantined (a warning), a clean publish never."""
    return status != PUBLISHED or bool(quarantined_rows)


def send_alert_quietly(event: AlertEvent) -> bool:
    """Send through `alerting.notify.send_alert`; never raises (an alert cannot change the
    recorded outcome). Returns whether Slack accepted it."""
    try:
        from ingestion.alerting.notify import send_alert

        return bool(send_alert(event.to_dict()).get("delivered"))
    except Exception:
        _log.exception("alert for ingest %s not delivered", event.ingest_id)
        return False
