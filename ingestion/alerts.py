"""Building the alert event (contract of lambdas/alert) and sending it without side effects."""

from __future__ import annotations

import logging

from contracts.alert import AlertEvent
from ingestion.ledger.records import LedgerRecord, tables_of

_log = logging.getLogger(__name__)


def alert_event(
    record: LedgerRecord, *, outcome: str, reason: str | None, execution_arn: str | None = None
) -> AlertEvent:
    """The alert for an ingest that did not publish, from its ledger record, built and
    checked by the one definition of the event; raises AlertEventError naming a bad field."""
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
        }
    )


def send_alert_quietly(event: AlertEvent) -> bool:
    """Send through `alerting.notify.send_alert`; never raises (an alert cannot change the
    recorded outcome). Returns whether Slack accepted it."""
    try:
        from ingestion.alerting.notify import send_alert

        return bool(send_alert(event.to_dict()).get("delivered"))
    except Exception:
        _log.exception("alert for ingest %s not delivered", event.ingest_id)
        return False
