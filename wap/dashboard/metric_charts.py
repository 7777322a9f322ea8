"""The table page's metric charts (docs/metric-history.md): each monitored metric over the
published drops, the band each drop was judged against, and the drops that failed.

Plain functions over plain data (no Streamlit, no I/O), like `shaping`. The published
values come from main's metrics table (`<ns>.<table>__audit_metrics`), which holds only
what main published; a failed drop's value is in its audit report, whose check entry
says what it measured and the band it was judged against.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contracts.metric_history import (
    ROW_COUNT,
    SCOPE_TABLE,
    expectation_text,
    learn_anomaly_band,
    metric_bounds,
    metric_label,
    number_text,
)
from contracts.report import AuditReport
from contracts.table_config import MONITOR_KINDS, TableConfig
from wap.dashboard.shaping import parse_time, redact

PUBLISHED, FAILED = "published", "failed"
# Shown for row_count when no check of the config watches it: its values, without a band.
RECORDED = "recorded"


@dataclass(frozen=True)
class Monitor:
    """One series the page plots and how the check watching it judges a drop."""

    metric: str
    column: str | None
    check: str | None  # the config's check watching it; None: plotted, not judged
    kind: str  # anomaly, metric, or RECORDED
    params: Mapping[str, Any]

    @property
    def label(self) -> str:
        return metric_label(self.metric, self.column)

    @property
    def title(self) -> str:
        if self.check is None:
            return f"{self.label} (recorded; no check watches it)"
        return f"{self.label} ({self.kind} check {self.check})"


@dataclass(frozen=True)
class MetricChart:
    """One monitored series as chart rows, oldest first: `at` (naive UTC), `value`, `low`
    and `high` (the band the drop was judged against; None when none), `drop` (published
    or failed), `ingest_id`, `message`."""

    monitor: Monitor
    rows: list[dict[str, Any]]


def monitors_of(config: TableConfig) -> list[Monitor]:
    """The series the config's metric and anomaly checks watch, in config order; row_count
    always (without a band when no check watches it)."""
    monitors = []
    for spec in config.checks:
        if spec.kind not in MONITOR_KINDS:
            continue
        metric = spec.params["metric"]
        column = spec.columns[0] if spec.columns and metric != ROW_COUNT else None
        monitors.append(Monitor(metric, column, spec.name, spec.kind, dict(spec.params)))
    if not any(m.metric == ROW_COUNT for m in monitors):
        monitors.insert(0, Monitor(ROW_COUNT, None, None, RECORDED, {}))
    return monitors


def metric_charts(
    config: TableConfig,
    metric_rows: Iterable[Mapping[str, Any]],
    failed_reports: Mapping[str, AuditReport],
    *,
    table: str | None = None,
) -> list[MetricChart]:
    """One chart per monitored series of `config`.

    `metric_rows` are rows of main's metrics table (`recorded_at`, `scope`, `metric`,
    `column_name`, `value`, `ingest_id`); `failed_reports` the audit reports of the table's
    failed drops by ingest id. Each published drop's band is learned from the published
    drops before it, as its audit learned it; a failed drop shows the value and band its
    report's check entry recorded.
    """
    rows = [r for r in metric_rows if r.get("scope", SCOPE_TABLE) == SCOPE_TABLE]
    return [
        MetricChart(m, _series_rows(m, rows, failed_reports, table)) for m in monitors_of(config)
    ]


def _series_rows(
    monitor: Monitor,
    metric_rows: Sequence[Mapping[str, Any]],
    failed_reports: Mapping[str, AuditReport],
    table: str | None,
) -> list[dict[str, Any]]:
    points = sorted(
        (
            (_naive_utc(r["recorded_at"]), float(r["value"]), r.get("ingest_id"))
            for r in metric_rows
            if r.get("metric") == monitor.metric
            and r.get("column_name") == monitor.column
            and _is_number(r.get("value"))
            and math.isfinite(r["value"])  # a stddev of one row is NaN
            and r.get("recorded_at") is not None
        ),
        key=lambda point: point[0],
    )
    out = []
    for index, (at, value, ingest_id) in enumerate(points):
        band = _band(monitor, [(p[0], p[1]) for p in points[:index]], at)
        low, high, source = band if band else (None, None, None)
        message = (
            expectation_text(monitor.label, value, low, high, source)
            if source
            else f"{monitor.label} {number_text(value)}"
        )
        out.append(_row(at, value, low, high, PUBLISHED, ingest_id, message))
    for ingest_id, report in failed_reports.items():
        failed = _failed_row(monitor, ingest_id, report, table)
        if failed is not None:
            out.append(failed)
    return sorted(out, key=lambda row: row["at"])


def _row(
    at: datetime,
    value: float,
    low: float | None,
    high: float | None,
    drop: str,
    ingest_id: str | None,
    message: str,
) -> dict[str, Any]:
    return {
        "at": at,
        "value": value,
        "low": low,
        "high": high,
        "drop": drop,
        "ingest_id": ingest_id or "",
        "message": redact(message),
    }


def _band(
    monitor: Monitor, before: list[tuple[datetime, float]], at: datetime
) -> tuple[float | None, float | None, str] | None:
    """(low, high, where it came from) the drop at `at` was judged against, from the
    published values `before` it; None when it was not judged against a band."""
    params = monitor.params
    if monitor.kind == "anomaly":
        learned = learn_anomaly_band(params, before, at)
        if learned.band is None:
            return None
        return learned.band.low, learned.band.high, learned.source
    if monitor.kind == "metric":
        low, high, source = metric_bounds(params, [p[1] for p in before])
        if low is None and high is None:
            return None
        return _float(low), _float(high), source
    return None


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _failed_row(
    monitor: Monitor, ingest_id: str, report: AuditReport, table: str | None
) -> dict[str, Any] | None:
    """The failed drop's point on this series: its check entry's measured value and band;
    for row_count without such an entry, the rows it wrote. None when the report has
    neither (or no time)."""
    at = parse_time(report.finished_at) or parse_time(report.started_at)
    if at is None:
        return None
    at = at.replace(tzinfo=None)
    names = {monitor.check, f"{table}: {monitor.check}"} if monitor.check else set()
    for check in report.checks:
        if check.name not in names or not _is_number(check.observed):
            continue
        low, high = _threshold_band(check.threshold)
        message = check.message or f"{monitor.label} {number_text(float(check.observed))}"
        return _row(at, float(check.observed), low, high, FAILED, ingest_id, message)
    if monitor.metric == ROW_COUNT:  # failed on another check: still a drop of that size
        rows = report.rows_written
        return _row(at, float(rows), None, None, FAILED, ingest_id, report.reason or "")
    return None


def _threshold_band(threshold: Any) -> tuple[float | None, float | None]:
    """An anomaly entry's `low`/`high`, a metric entry's `min`/`max`."""
    if not isinstance(threshold, Mapping):
        return None, None
    low = threshold.get("low", threshold.get("min"))
    high = threshold.get("high", threshold.get("max"))
    return (
        float(low) if _is_number(low) else None,
        float(high) if _is_number(high) else None,
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _naive_utc(value: Any) -> datetime:
    """A metrics table timestamp (pyiceberg: aware UTC, or naive UTC) as naive UTC, the
    page's time axis."""
    if isinstance(value, str):
        value = parse_time(value)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value
