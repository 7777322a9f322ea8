"""How an ingest ends: `settle` records its outcome and its time, re-reads the record, and
then, once, alerts and emits its metrics and lineage, so no ending skips one of them.

The statuses and the changes allowed between them are the lifecycle's
(contracts/lifecycle.py); the ledger refuses a change the lifecycle does not allow.
Finish (the state machine's last task) records through the same ledger, but returns its
alert for the state machine to send.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from contracts.lifecycle import Status
from ingestion.alerts import alert_event, send_alert_quietly
from ingestion.config import Settings
from ingestion.ledger import Changes, Ledger, LedgerRecord
from ingestion.lineage.record import record_outcome
from ingestion.naming import iso, utcnow


def settle(
    settings: Settings,
    ledger: Ledger,
    record: LedgerRecord,
    status: Status,
    reason: str | None,
    *,
    only_if_status: Iterable[str],
    alert: bool = True,
    fields: Mapping[str, Any] | None = None,
    at: datetime | None = None,
    job_started_at: str | None = None,
) -> LedgerRecord | None:
    """End `record` with `status` (its `reason` the record's error, `at` or now its
    `finished_at`, with `fields` besides) if its status is still one of `only_if_status`;
    then `announce` it. Returns the settled record as re-read, or None when another
    writer settled it first (nothing is sent: that writer did)."""
    changes = Changes(
        status=status, error=reason, finished_at=iso(at or utcnow()), **(fields or {})
    )
    if not ledger.update_ingest(record.ingest_id, changes, only_if_status=only_if_status):
        return None
    settled = ledger.get_ingest(record.ingest_id) or record
    announce(settings, ledger, settled, status, reason, alert=alert, job_started_at=job_started_at)
    return settled


def announce(
    settings: Settings,
    ledger: Ledger,
    settled: LedgerRecord,
    status: Status,
    reason: str | None,
    *,
    alert: bool = True,
    job_started_at: str | None = None,
) -> None:
    """What follows an ending the ledger recorded (by `settle`, or a record created ended):
    the alert (unless `alert` is False: a published ingest, or a file its dataset's alert
    names), then the outcome's metrics and lineage."""
    if alert:
        send_alert_quietly(alert_event(settled, outcome=status, reason=reason))
    record_outcome(settings, ledger, settled, job_started_at=job_started_at)
