"""History bounds and anomaly bands (contracts/metric_history.py) and how the table config
takes them (contracts/table_config.py)."""

from __future__ import annotations

import pytest
import yaml

from contracts.metric_history import (
    MEDIAN_MAD,
    HistoryError,
    expectation_text,
    learn_band,
    parse_history_bound,
)
from contracts.table_config import TableConfigError, parse_table_config_text

HISTORY = [10_000.0, 10_200.0, 9_800.0, 10_100.0, 9_900.0]


@pytest.mark.parametrize(
    ("text", "expected", "window"),
    [
        ("0.8 * avg(last(10))", 0.8 * 10_000, 10),
        ("max(last(30)) * 1.5", 10_200 * 1.5, 30),
        ("avg(last(2)) - 3 * stddev(last(5))", 10_000 - 3 * 158.11388300841898, 5),
        ("min(last(3)) / 2 + 1", 9_800 / 2 + 1, 3),
        ("median(last(5))", 10_000, 5),
        ("-(avg(last(1)))", -9_900, 1),
        ("AVG(LAST(10))", 10_000, 10),
    ],
)
def test_history_bounds_evaluate_on_the_latest_values(text, expected, window):
    bound = parse_history_bound(text)
    assert bound.window == window
    assert bound.evaluate(HISTORY) == pytest.approx(expected)


def test_a_history_bound_without_history_has_no_value():
    assert parse_history_bound("avg(last(10))").evaluate([]) is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0.8 * mean(last(10))", "unknown function 'mean'"),
        ("avg(last(0))", "from 1 to 1000"),
        ("avg(last(2.5))", "from 1 to 1000"),
        ("avg(10)", "expected last"),
        ("0.8 *", "ends too early"),
        ("avg(last(10)) avg(last(3))", "unexpected 'avg'"),
        ("avg(last(10)) % 2", "unexpected character '%'"),
        ("1000", "no `<agg>(last(<n>))`"),
        ("", "empty"),
    ],
)
def test_a_bad_history_bound_says_what_is_wrong(text, says):
    with pytest.raises(HistoryError) as caught:
        parse_history_bound(text)
    assert says in str(caught.value)


def test_the_band_is_mean_plus_minus_k_sigma_with_a_floor():
    band = learn_band(HISTORY, sensitivity=3)
    assert band.centre == pytest.approx(10_000)
    assert band.low == pytest.approx(10_000 - 3 * 158.11388300841898)
    assert band.holds(9_600) and not band.holds(500)
    steady = learn_band([100.0] * 5, sensitivity=3, min_spread=0.01)
    assert (steady.low, steady.high) == pytest.approx((97.0, 103.0))


def test_the_robust_band_is_barely_moved_by_one_outlier():
    with_outlier = [*HISTORY, 100_000.0]
    mean = learn_band(with_outlier, sensitivity=3)
    robust = learn_band(with_outlier, sensitivity=3, method=MEDIAN_MAD)
    assert mean.high > 100_000  # the outlier widened the mean's band past any use
    assert robust.high < 11_000
    assert not robust.holds(500)


def test_the_expectation_reads_as_a_sentence():
    assert (
        expectation_text("row_count", 512, 9_600, 10_400, "the last 10 published drops")
        == "row_count 512; expected 9,600 to 10,400 from the last 10 published drops"
    )
    assert expectation_text("null_fraction(email)", 0.4, None, 0.0125, "x").startswith(
        "null_fraction(email) 0.4; expected at most 0.0125"
    )


def _config(checks: str):
    return parse_table_config_text(f"checks:\n{checks}", "t.yaml", yaml=yaml)


def test_the_config_takes_anomaly_metric_and_history_bounds():
    config = _config(
        """
  - {kind: anomaly, metric: row_count}
  - {kind: anomaly, metric: null_fraction, column: email, window: 30, min_history: 7,
     seasonality: day_of_week, method: median_mad, sensitivity: 2.5, severity: warn}
  - {kind: metric, metric: distinct_count, column: id, min: 0.9 * avg(last(7))}
  - {kind: row_count, min: 0.8 * avg(last(10)), max: 20000}
  - {kind: null_fraction, column: email, max: max(last(30)) * 1.5}
  - {kind: range, column: amount, min: 0, max: max(last(30)) * 2}
  - {kind: range, column: day, min: "2026-01-01"}
"""
    )
    kinds = [(c.kind, c.columns) for c in config.checks]
    assert kinds[0] == ("anomaly", ())
    assert kinds[1] == ("anomaly", ("email",))
    assert config.checks[1].name == "email_anomaly"


@pytest.mark.parametrize(
    ("checks", "says"),
    [
        ("  - {kind: anomaly}", "missing option(s) ['metric']"),
        ("  - {kind: anomaly, metric: rows}", "metric must be one of"),
        ("  - {kind: anomaly, metric: null_fraction}", "needs `column`"),
        ("  - {kind: anomaly, metric: row_count, column: id}", "takes no column"),
        ("  - {kind: anomaly, metric: row_count, window: 1}", "window must be"),
        ("  - {kind: anomaly, metric: row_count, window: 5, min_history: 6}", "cannot exceed"),
        ("  - {kind: anomaly, metric: row_count, sensitivity: 0}", "sensitivity"),
        ("  - {kind: anomaly, metric: row_count, seasonality: hourly}", "seasonality"),
        ("  - {kind: anomaly, metric: row_count, method: zscore}", "method must be"),
        ("  - {kind: metric, metric: mean, column: a}", "needs `min` and/or `max`"),
        ("  - {kind: metric, metric: mean, column: a, min: lots}", "a number or a history"),
        ("  - {kind: row_count, min: 0.8 * avg(last(x))}", "min: "),
        ("  - {kind: null_fraction, column: a, max: avg(last(3)) +}", "max: "),
    ],
)
def test_a_bad_learning_check_is_refused_naming_the_entry(checks, says):
    with pytest.raises(TableConfigError) as caught:
        _config(checks)
    assert says in str(caught.value)
    assert "checks[0]" in str(caught.value)
