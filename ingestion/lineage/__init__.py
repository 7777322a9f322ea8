"""OpenLineage run events of an ingest: built once here (`events`), sent by `transport`."""

from ingestion.lineage.events import (
    LineageInput,
    Outcome,
    outcome_event,
    run_id,
    start_event,
)
from ingestion.lineage.transport import RetryPolicy, emit_quietly

__all__ = [
    "LineageInput",
    "Outcome",
    "RetryPolicy",
    "emit_quietly",
    "outcome_event",
    "run_id",
    "start_event",
]
