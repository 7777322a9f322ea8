"""Where an ingest's time went, from upload to its outcome: the phases between the times
its ledger record holds (S3's event time, the trigger's record, EMR's job-run state times,
the recorded outcome). A boundary not recorded (an upload without its event time, a run
EMR gave no times for) joins its two phases, so the phases always add up to the whole."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from ingestion.ledger import LedgerRecord
from ingestion.naming import parse_iso

# (boundary field, the phase that ends there): in the order an ingest passes them.
BOUNDARIES = (
    ("uploaded_at", "upload"),
    ("created_at", "to trigger"),  # S3's event delivered, the trigger recorded the file
    ("job_submitted_at", "to job submitted"),  # waiting for its table, branch, StartJobRun
    ("job_running_at", "EMR start-up"),  # EMR: application start, workers (cold or warm)
    ("job_ended_at", "job"),  # the Spark job: read, write, audit
    ("finished_at", "to outcome"),  # state machine polling, publish (merge), finish
)


@dataclass(frozen=True)
class Phase:
    """One phase: its name, and its seconds (negative only if clocks disagree)."""

    name: str
    seconds: float


def _at(record: LedgerRecord, name: str) -> datetime | None:
    value = record.field_value(name)
    if not value:
        return None
    try:
        return parse_iso(str(value))
    except ValueError:
        return None


def time_split(record: LedgerRecord) -> list[Phase]:
    """The phases between the record's known times, from its upload (or its record when
    the upload time is unknown) to its outcome; [] before it has one."""
    known = [(phase, at) for name, phase in BOUNDARIES if (at := _at(record, name)) is not None]
    if len(known) < 2 or _at(record, "finished_at") is None:
        return []
    return [
        Phase(phase, (at - previous).total_seconds())
        for (_, previous), (phase, at) in pairwise(known)
    ]


def upload_to_outcome_seconds(record: LedgerRecord) -> float | None:
    """Seconds from the upload (or the record) to the recorded outcome."""
    start = _at(record, "uploaded_at") or _at(record, "created_at")
    end = _at(record, "finished_at")
    return None if start is None or end is None else (end - start).total_seconds()
