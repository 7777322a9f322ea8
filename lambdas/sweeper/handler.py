"""Sweeper Lambda (scheduled): stuck locks and expired failed branches, queue metrics."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from ingestion.config import load_settings
from ingestion.ledger import Ledger, QueueStat
from ingestion.log import logger
from ingestion.nessie import client_for
from lambdas.sweeper.service import sweep


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the schedule's event (ignored). Output: what was recovered and discarded."""
    settings = load_settings()
    ledger = Ledger(settings.ledger_table, lease=settings.lock_lease)
    report = sweep(settings, ledger, client_for(settings))
    emit_queue_metrics(report.queues)
    logger.info("sweep done", extra=asdict(report))
    return asdict(report)


def emit_queue_metrics(queues: list[QueueStat]) -> None:
    """CloudWatch metrics (embedded metric format, in the log: no API call, no IAM grant):
    `QueueDepth` per table, and `OldestQueuedAgeSeconds` over all tables, which the
    stack's alarm watches. Namespace: POWERTOOLS_METRICS_NAMESPACE from the template."""
    oldest = max((q.oldest_age_seconds for q in queues), default=0.0)
    with single_metric(name="OldestQueuedAgeSeconds", unit=MetricUnit.Seconds, value=oldest):
        pass
    for queue in queues:
        with single_metric(name="QueueDepth", unit=MetricUnit.Count, value=queue.depth) as metric:
            metric.add_dimension(name="Table", value=queue.table)
