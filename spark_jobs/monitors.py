"""Checks that learn from history (docs/metric-history.md).

- A check's `min`/`max` written as a history bound (`0.8 * avg(last(10))`) becomes a
  number before the audit (`resolve_history_bounds`), from the published history of the
  metric the check measures; the result then says where the number came from.
- `metric` and `anomaly` checks are judged on the profile the audit recorded
  (`judge_monitors`): a fixed or history bound, or the band learned from history.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

from contracts.metric_history import (
    DAY_OF_WEEK,
    DEFAULT_WINDOW,
    HISTORY_KEY,
    MAX,
    MIN,
    NULL_FRACTION,
    NUMERIC_METRICS,
    ROW_COUNT,
    WEEK,
    as_number,
    expectation_text,
    history_text,
    learn_anomaly_band,
    metric_bounds,
    metric_label,
    number_text,
    range_text,
)
from contracts.report import ERROR, FAILED, METRICS, PASSED, SEVERITY_WARN, CheckResult
from contracts.table_config import MONITOR_KINDS, CheckSpec, TableConfig, history_bounds
from spark_jobs.errors import TableConfigError
from spark_jobs.history import Point, Series
from spark_jobs.profile import NUMBERS, Measured

# The metric a history bound of each kind reads, per bound (`min`/`max`).
BOUND_METRICS = {
    "row_count": {MIN: ROW_COUNT, MAX: ROW_COUNT},
    "null_fraction": {MAX: NULL_FRACTION},
    "range": {MIN: MIN, MAX: MAX},
}


@dataclass(frozen=True)
class BoundNote:
    """How a history bound was resolved: its text, the value, the drops it came from."""

    text: str
    value: float | None
    size: int


def series_of(spec: CheckSpec, key: str | None = None) -> Series:
    """The (metric, column) a check's history bound or band reads."""
    metric = spec.params["metric"] if spec.kind in MONITOR_KINDS else BOUND_METRICS[spec.kind][key]
    return (metric, spec.columns[0] if spec.columns and metric != ROW_COUNT else None)


def history_needs(config: TableConfig) -> dict[Series, int]:
    """How many of the latest published values of each series the config's checks read."""
    needs: dict[Series, int] = {}

    def need(series: Series, size: int) -> None:
        needs[series] = max(needs.get(series, 0), size)

    for spec in config.checks:
        if spec.kind == "anomaly":
            seasonal = spec.params.get("seasonality") == DAY_OF_WEEK
            need(series_of(spec), _window(spec) * (WEEK if seasonal else 1))
            continue
        for key, bound in history_bounds(spec).items():
            need(series_of(spec, key), bound.window)
    return needs


def uses_history_bounds(config: TableConfig) -> bool:
    """Whether a check other than a monitor has a bound over history (resolved before the
    checks compile, so the history must be read by then)."""
    return any(history_bounds(spec) for spec in config.checks if spec.kind not in MONITOR_KINDS)


def check_monitored_columns(config: TableConfig, types: dict) -> None:
    """TableConfigError for a monitor or history bound on a column the table lacks, or a
    numeric metric of a column that is not a number (only numbers record min/max/mean)."""
    for spec in config.checks:
        where = f"check {spec.name!r} ({spec.kind})"
        uses = [series_of(spec)] if spec.kind in MONITOR_KINDS else []
        uses += [series_of(spec, key) for key in history_bounds(spec)]
        for metric, column in uses:
            if column is None:
                continue
            if column not in types:
                raise TableConfigError(
                    f"{where}: column {column!r} is not in the table; columns: {', '.join(types)}"
                )
            if metric in NUMERIC_METRICS and not isinstance(types[column], NUMBERS):
                raise TableConfigError(
                    f"{where}: {metric} is recorded for numeric columns only; "
                    f"{column!r} is {types[column].simpleString()}"
                )


def resolve_history_bounds(
    config: TableConfig, history: dict[Series, list[Point]]
) -> tuple[TableConfig, dict[str, dict[str, BoundNote]]]:
    """The config with each non-monitor check's history bounds replaced by their value on
    `history` (a bound without history yet is left out), and per check name what each
    resolved bound was."""
    specs, notes = [], {}
    for spec in config.checks:
        bounds = history_bounds(spec) if spec.kind not in MONITOR_KINDS else {}
        if not bounds:
            specs.append(spec)
            continue
        params = dict(spec.params)
        notes[spec.name] = {}
        for key, bound in bounds.items():
            values = [point.value for point in history.get(series_of(spec, key), [])]
            value = bound.evaluate(values)
            notes[spec.name][key] = BoundNote(bound.text, value, min(len(values), bound.window))
            if value is None:
                params.pop(key)
            else:
                params[key] = round(value) if spec.kind == "row_count" else value
        specs.append(dataclasses.replace(spec, params=params))
    return dataclasses.replace(config, checks=tuple(specs)), notes


def explain_bounds(
    results: list[CheckResult], notes: dict[str, dict[str, BoundNote]]
) -> list[CheckResult]:
    """Each result of a check with history bounds, saying its bounds and where they came
    from (`row_count 512; expected 9,600 to 10,400 from the last 10 published drops`)."""
    explained = []
    for result in results:
        note = notes.get(result.name)
        if note is None:
            explained.append(result)
            continue
        size = max(n.size for n in note.values())
        threshold = dict(result.threshold or {})
        # A bound from history, else the fixed one the check was configured with.
        low, high = (
            note[key].value if key in note else as_number(threshold.get(key)) for key in (MIN, MAX)
        )
        threshold[HISTORY_KEY] = {
            key: {"bound": n.text, "drops": n.size} for key, n in note.items()
        }
        if all(n.value is None for n in note.values()):
            message = "no published history yet: its history bounds are not applied"
        elif result.kind == "range":
            bounds = range_text(low, high)
            message = (
                f"{result.violations or 0} value(s) outside {bounds}, bounds from "
                f"{history_text(size)}"
            )
        else:
            message = expectation_text(
                metric_label(result.kind, _column(result)),
                as_number(result.observed),
                low,
                high,
                history_text(size),
            )
        explained.append(dataclasses.replace(result, threshold=threshold, message=message))
    return explained


def judge_monitors(
    config: TableConfig,
    measured: list[Measured],
    history: dict[Series, list[Point]],
    now: dt.datetime,
) -> list[CheckResult]:
    """The results of the config's metric and anomaly checks on what the audit measured."""
    values = {(m.metric, m.column): m.value for m in measured}
    results = []
    for spec in config.checks:
        if spec.kind not in MONITOR_KINDS:
            continue
        series = series_of(spec)
        value = values.get(series)
        points = history.get(series, [])
        if series not in values:
            why = "the metric was not measured" + (
                "" if measured else " (the audit recorded no metrics: is metric history off?)"
            )
            results.append(_result(spec, ERROR, None, None, why))
        elif spec.kind == "anomaly":
            results.append(_anomaly(spec, series, value, points, now))
        else:
            results.append(_metric(spec, series, value, points))
    return results


def _anomaly(
    spec: CheckSpec, series: Series, value: float | None, points: list[Point], now: dt.datetime
) -> CheckResult:
    learned = learn_anomaly_band(spec.params, [(p.recorded_at, p.value) for p in points], now)
    label = metric_label(*series)
    band = learned.band
    if band is None:
        # Not judged yet: a warning whatever the severity, saying why.
        message = (
            f"{label} {number_text(value)}; not judged yet: {learned.drops} published drop(s)"
            f"{' on this weekday' if learned.seasonal else ''}, {learned.needed} needed to "
            "learn a band"
        )
        threshold = {"min_history": learned.needed, "drops": learned.drops}
        return dataclasses.replace(
            _result(spec, FAILED, value, threshold, message), severity=SEVERITY_WARN
        )
    if value is None:
        return _result(spec, ERROR, None, None, f"{label} has no value in this drop")
    threshold = {
        "low": band.low,
        "high": band.high,
        "centre": band.centre,
        "method": band.method,
        "drops": band.size,
        "seasonality": spec.params.get("seasonality"),
    }
    message = expectation_text(label, value, band.low, band.high, learned.source)
    return _result(spec, PASSED if band.holds(value) else FAILED, value, threshold, message)


def _metric(
    spec: CheckSpec, series: Series, value: float | None, points: list[Point]
) -> CheckResult:
    low, high, source = metric_bounds(spec.params, [p.value for p in points])
    label = metric_label(*series)
    threshold = {"min": low, "max": high}
    if low is None and high is None:
        message = f"{label} {number_text(value)}; no published history yet: not judged"
        return _result(spec, PASSED, value, threshold, message)
    message = expectation_text(label, value, low, high, source)
    if value is None:
        return _result(spec, ERROR, None, threshold, f"{label} has no value in this drop")
    failed = (low is not None and value < low) or (high is not None and value > high)
    return _result(spec, FAILED if failed else PASSED, value, threshold, message)


def _result(spec: CheckSpec, status: str, value, threshold, message: str) -> CheckResult:
    return CheckResult(
        name=spec.name,
        kind=spec.kind,
        columns=spec.columns,
        severity=spec.severity,
        status=status,
        violations=None if status == ERROR else int(status == FAILED),
        threshold=threshold,
        observed=value,
        settled_by=METRICS,
        message=message,
    )


def _window(spec: CheckSpec) -> int:
    return int(spec.params.get("window", DEFAULT_WINDOW))


def _column(result: CheckResult) -> str | None:
    return result.columns[0] if result.columns else None
