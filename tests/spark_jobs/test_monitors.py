"""Learned checks judged on recorded metrics (spark_jobs/monitors.py), without Spark: the
band, seasonality, history bounds and what each result says."""

from __future__ import annotations

import datetime as dt

import yaml

from contracts.report import CheckResult
from contracts.table_config import parse_table_config_text
from spark_jobs.history import Point
from spark_jobs.monitors import (
    explain_bounds,
    history_needs,
    judge_monitors,
    resolve_history_bounds,
)
from spark_jobs.profile import Measured

MONDAY = dt.datetime(2026, 11, 23, 6, 0)


def _config(checks: str):
    return parse_table_config_text(f"checks:\n{checks}", "t.yaml", yaml=yaml)


def _points(values, start=MONDAY - dt.timedelta(days=30), step=dt.timedelta(days=1)):
    return [Point(start + i * step, float(v)) for i, v in enumerate(values)]


def test_a_seasonal_band_learns_from_the_same_weekday_only():
    config = _config("  - {kind: anomaly, metric: row_count, seasonality: day_of_week, window: 4}")
    assert history_needs(config) == {("row_count", None): 28}
    # Mondays carry 5,000 rows, other days 1,000: a Monday of 5,000 is normal.
    days = [MONDAY - dt.timedelta(days=d) for d in range(28, 0, -1)]
    history = {("row_count", None): [Point(d, 5_000 if d.weekday() == 0 else 1_000) for d in days]}
    [result] = judge_monitors(config, [Measured("row_count", 5_000.0)], history, MONDAY)
    assert result.status == "passed"
    assert "on the same weekday" in result.message
    [plain] = judge_monitors(
        _config("  - {kind: anomaly, metric: row_count, window: 6}"),
        [Measured("row_count", 5_000.0)],
        history,
        MONDAY,
    )
    assert plain.status == "failed"


def test_below_min_history_it_warns_and_says_why_whatever_its_severity():
    config = _config("  - {kind: anomaly, metric: null_fraction, column: a, min_history: 3}")
    history = {("null_fraction", "a"): _points([0.1, 0.1])}
    [result] = judge_monitors(config, [Measured("null_fraction", 0.9, "a")], history, MONDAY)
    assert (result.severity, result.status) == ("warn", "failed")
    assert result.message == (
        "null_fraction(a) 0.9; not judged yet: 2 published drop(s), 3 needed to learn a band"
    )


def test_a_metric_check_takes_fixed_and_history_bounds():
    config = _config(
        "  - {kind: metric, metric: mean, column: amount, min: 10, max: 2 * avg(last(3))}"
    )
    history = {("mean", "amount"): _points([100, 40, 50, 60])}
    [high] = judge_monitors(config, [Measured("mean", 120.0, "amount")], history, MONDAY)
    assert high.status == "failed"
    assert high.message == "mean(amount) 120; expected 10 to 100 from the last 3 published drops"
    [fine] = judge_monitors(config, [Measured("mean", 99.0, "amount")], history, MONDAY)
    assert fine.status == "passed"


def test_an_unmeasured_metric_is_an_error_of_the_check():
    config = _config("  - {kind: anomaly, metric: max, column: amount}")
    [result] = judge_monitors(config, [], {}, MONDAY)
    assert result.status == "error" and "not measured" in result.message


def test_history_bounds_become_numbers_and_the_result_says_where_from():
    config = _config(
        "  - {kind: row_count, name: rows, min: 0.8 * avg(last(2)), max: 50000}\n"
        "  - {kind: null_fraction, column: a, max: max(last(5)) * 2}"
    )
    history = {("row_count", None): _points([1_000, 3_000, 5_000])}
    resolved, notes = resolve_history_bounds(config, history)
    assert resolved.checks[0].params == {"min": 3_200, "max": 50000}
    assert "max" not in resolved.checks[1].params  # no history of it yet: not applied
    results = [
        CheckResult(
            "rows",
            "row_count",
            "error",
            "failed",
            violations=1,
            observed=900,
            threshold={"min": 3_200, "max": 50_000},
        ),
        CheckResult("a_null_fraction", "null_fraction", "error", "passed", ("a",), 0, None, 0.2),
    ]
    rows, nulls = explain_bounds(results, notes)
    assert rows.message == (
        "row_count 900; expected 3,200 to 50,000 from the last 2 published drops"
    )
    assert rows.threshold["history"] == {"min": {"bound": "0.8 * avg(last(2))", "drops": 2}}
    assert nulls.message == "no published history yet: its history bounds are not applied"
