"""How an ingest ends: every write of a terminal status is made here (a test reads the
source for any other), so no ending skips its time, alert, metrics or lineage.

- `settle`: an ingest's (or batch's) run ends. Records its outcome and time, re-reads the
  record, then `announce`s it once: the alert (sent, or handed to `deliver`: Finish returns
  it for the state machine's Alert task), the outcome's metrics and lineage;
- `settle_new`: a record created ended (an upload rejected when recorded), announced as
  `settle` would;
- `share`: files that end with their batch or dataset (or follow a decision on it): its
  own `settle` announced the run (one alert, its metrics and lineage name every file);
- `decide`: a decision on an ingest already ended (a person publishes or discards it, or
  its retention ends): announced by who decides (`wap`'s review event) or not at all;
- `settle_maintenance`: a maintenance run (compaction) ends: its outcome and time, and the
  alert of a failure through the runner's `deliver`; its lineage is the runner's own, and
  it counts in no ingest metric (it is no upload).

The statuses and the changes allowed between them are the lifecycle's
(contracts/lifecycle.py); the ledger refuses a change the lifecycle does not allow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from contracts.alert import AlertEvent
from contracts.lifecycle import PUBLISHED, Status
from ingestion.alerts import alert_event, send_alert_quietly
from ingestion.config import Settings
from ingestion.ledger import Changes, Ledger, LedgerRecord, Record
from ingestion.ledger.changes import UPDATABLE
from ingestion.lineage.record import record_outcome
from ingestion.naming import iso, utcnow

Deliver = Callable[[AlertEvent], Any]


def settle(
    settings: Settings,
    ledger: Ledger,
    record: LedgerRecord,
    status: Status,
    reason: str | None,
    *,
    only_if_status: Iterable[str],
    only_if: tuple[str, Any] | None = None,
    alert: bool = True,
    alert_without: Iterable[str] = (),
    deliver: Deliver = send_alert_quietly,
    fields: Mapping[str, Any] | None = None,
    at: datetime | None = None,
    job_started_at: str | None = None,
) -> LedgerRecord | None:
    """End `record` with `status` (its `reason` the record's error, `at` or now its
    `finished_at`, with `fields` besides) if its status is still one of `only_if_status`
    (and the field `only_if` names still has its value); then `announce` it. Returns the
    settled record as re-read, or None when another writer settled it first (nothing is
    sent: that writer did)."""
    changes = Changes(
        status=status, error=reason, finished_at=iso(at or utcnow()), **(fields or {})
    )
    if not ledger.update_ingest(
        record.ingest_id, changes, only_if_status=only_if_status, only_if=only_if
    ):
        return None
    settled = ledger.get_ingest(record.ingest_id) or record
    announce(
        settings,
        ledger,
        settled,
        status,
        reason,
        alert=alert,
        alert_without=alert_without,
        deliver=deliver,
        job_started_at=job_started_at,
    )
    return settled


def settle_new(
    settings: Settings,
    ledger: Ledger,
    record: Record,
    status: Status,
    reason: str | None,
    *,
    alert: bool = True,
    announced: bool = True,
) -> bool:
    """Create `record` ended (`status`, `reason` its error, now its `finished_at`) and, when
    this call created it, `announce` it; False (nothing sent) when its id was recorded
    before. `announced` False: a dataset's file, which its dataset's announcement names."""
    ended = replace(record, status=status, error=reason, finished_at=iso(utcnow()))
    if not ledger.create_ingest(ended):
        return False
    if announced:
        settled = ledger.get_ingest(record.ingest_id) or ended
        announce(settings, ledger, settled, status, reason, alert=alert)
    return True


def announce(
    settings: Settings,
    ledger: Ledger,
    settled: LedgerRecord,
    status: Status,
    reason: str | None,
    *,
    alert: bool = True,
    alert_without: Iterable[str] = (),
    deliver: Deliver = send_alert_quietly,
    job_started_at: str | None = None,
) -> None:
    """What follows an ending the ledger recorded (by `settle`, or a record created ended):
    the alert (unless `alert` is False: a published ingest, or a file its dataset's alert
    names) to `deliver`, then the outcome's metrics and lineage. `alert_without`: record
    attributes the alert leaves out (a batch's file: not the batch's report)."""
    if alert:
        about = replace(settled, **dict.fromkeys(alert_without)) if alert_without else settled
        deliver(alert_of(about, status, reason))
    record_outcome(settings, ledger, settled, job_started_at=job_started_at)


def alert_of(
    record: LedgerRecord, status: str, reason: str | None, execution_arn: str | None = None
) -> AlertEvent:
    """The alert of an ended record: it names no branch that is gone."""
    if record.branch_deleted_at:
        record = replace(record, branch=None)
    return alert_event(record, outcome=status, reason=reason, execution_arn=execution_arn)


def share(
    ledger: Ledger,
    updates: Mapping[str, Changes],
    *,
    only_if_status: Iterable[str],
    only_if: tuple[str, Any] | None = None,
) -> set[str]:
    """Record the files of a batch or dataset (`updates`: id -> their outcome) ended with
    it, or given the decision a person made on it: the batch's own ending (or decision)
    announces them. Returns the ids changed (`update_ingests`)."""
    return ledger.update_ingests(updates, only_if_status=only_if_status, only_if=only_if)


def decide(
    ledger: Ledger, ingest_id: str, changes: Changes, *, only_if_status: Iterable[str]
) -> bool:
    """Record a decision on an ended ingest (`changes`: its status, who and why): published
    after a failed audit, or discarded. Whoever decides announces it (or nothing does:
    the sweeper's discard when the retention ends). False when its status changed."""
    return ledger.update_ingest(ingest_id, changes, only_if_status=only_if_status)


def settle_maintenance(
    ledger: Ledger,
    run_id: str,
    status: Status,
    reason: str | None,
    *,
    deliver: Deliver | None,
    fields: Mapping[str, Any] | None = None,
    at: str | None = None,
) -> LedgerRecord | None:
    """End a maintenance run with `status` (`reason` its error, `at` or now its
    `finished_at`, `fields` besides: declared or the run's own) and `deliver` the alert of
    one not published (None: none is sent). Returns the record as re-read."""
    fields = dict(fields or {})
    own = {name: fields.pop(name) for name in list(fields) if name not in UPDATABLE}
    changes = Changes(own, status=status, error=reason, finished_at=at or iso(utcnow()), **fields)
    ledger.update_ingest(run_id, changes)
    record = ledger.get_ingest(run_id)
    if record is not None and deliver is not None and status != PUBLISHED:
        deliver(alert_event(record, outcome=status, reason=reason))
    return record
