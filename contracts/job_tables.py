"""The tables only the audit job writes, beside each data table `<ns>.<table>`: its metric
history (`<ns>.<table>__audit_metrics`, docs/metric-history.md) and its quarantine
(`<ns>.<table>__quarantine`, the rows its checks set aside). An upload into one would
write data the audits did not produce (and, for the metric history, make drops their own
baseline), so every way an upload names a table refuses them: the trigger (an S3 key, a
`wap ingest --table`) and a multi-table dataset's config. Neither is offered as a known
table either.
"""

from __future__ import annotations

from contracts.metric_history import METRICS_TABLE_SUFFIX
from contracts.table_config import QUARANTINE_TABLE_SUFFIX

# Suffix -> what the table beside the data table holds (the refusal's words).
JOB_TABLE_SUFFIXES = (
    (METRICS_TABLE_SUFFIX, "metric history"),
    (QUARANTINE_TABLE_SUFFIX, "quarantine table"),
)


def job_table_reason(table: str) -> str | None:
    """Why no upload may write `table` (`<ns>.<name>` or a bare name), in one sentence;
    None for a data table."""
    for suffix, holds in JOB_TABLE_SUFFIXES:
        if table.endswith(suffix):
            return (
                f"{table} is the {holds} of {table.removesuffix(suffix)}: only its audits "
                "write it; upload the data under the data table's prefix"
            )
    return None


def is_job_table(table: str) -> bool:
    """Whether `table` is written by the audit job only (a metric history or quarantine)."""
    return job_table_reason(table) is not None
