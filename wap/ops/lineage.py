"""An ingest's OpenLineage run: `wap lineage` reads it, `wap publish` / `discard` add to it.

The events are built by the one builder the Lambdas use (ingestion/lineage); a
person's decision after the run ended is an OTHER event on the same run naming them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ingestion.ledger import Record
from ingestion.lineage import events
from ingestion.lineage.record import inputs_of, outcome_of
from ingestion.naming import utcnow
from wap.exceptions import NotAllowedError
from wap.ops.backend import Backend
from wap.ops.backends import DEFAULT_STACK
from wap.ops.ingests import find_ingest, read_report

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LineageRun:
    """One ingest's run as its receiver kept it."""

    ingest_id: str
    run_id: str
    events: list[dict[str, Any]]


def lineage(backend: Backend, target: str) -> LineageRun:
    """The OpenLineage events of an ingest (id or branch), in the order they were sent."""
    record = find_ingest(backend, target)
    run_id = events.run_id(record.ingest_id)
    kept = backend.lineage_events(run_id)
    if kept is None:
        raise NotAllowedError(
            "a deployed stack sends its events to its OpenLineage receiver (-c lineageUrl); "
            f"look for run {run_id} there"
        )
    return LineageRun(ingest_id=record.ingest_id, run_id=run_id, events=kept)


def send_review(backend: Backend, record: Record) -> None:
    """The OTHER event of a person's decision (`record` as the decision left it): who, why,
    and where the rows are now. Never raises: the decision is already recorded."""
    if not record.table:
        return
    try:
        run_id = events.run_id(record.ingest_id)
        earlier = backend.lineage_events(run_id) or []
        namespace = next((e["job"]["namespace"] for e in earlier), DEFAULT_STACK)
        event = events.outcome_event(
            namespace=namespace,
            ingest_id=record.ingest_id,
            table=record.table,
            inputs=inputs_of(backend.ledger, record),
            outcome=outcome_of(record),
            report=read_report(backend, record),
            at=utcnow(),
            reviewed=True,
        )
        backend.send_lineage([event])
    except Exception:
        _log.exception("the OpenLineage event of ingest %s was not sent", record.ingest_id)
