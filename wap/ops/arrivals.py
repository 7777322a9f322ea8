"""Expected arrivals on either backend (issue 42): each table (and dataset) whose config
has an `expect:` section, whether it is late now, and since when the sweeper says so;
what `wap runs` and the dashboard show, late ones first."""

from __future__ import annotations

from datetime import datetime

from ingestion.arrivals import SubjectFreshness, expectations, subject_freshness
from ingestion.naming import utcnow
from wap.ops.backend import Backend
from wap.ops.configs import deployed_configs


def list_freshness(
    backend: Backend, *, table: str | None = None, now: datetime | None = None
) -> list[SubjectFreshness]:
    """Every subject with an `expect:` section (only `table`'s when given), late first."""
    configs = deployed_configs(backend)
    found = [
        expectation
        for expectation in expectations(configs.tables, configs.datasets)
        if table is None or expectation.subject == table
    ]
    return subject_freshness(backend.ledger, found, now or utcnow()) if found else []
