"""The table page's metric charts: published values with the band each drop was judged
against (learned from the published drops before it), failed drops from their reports.
No Streamlit, no I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import yaml

from contracts.metric_history import learn_band
from contracts.report import AuditReport
from contracts.table_config import default_config, parse_table_config_text
from tests.fixtures.metrics_seed import anomaly_entry, failed_drop_report
from wap.dashboard.metric_charts import FAILED, PUBLISHED, RECORDED, metric_charts, monitors_of

START = datetime(2026, 11, 2, 6, 0, tzinfo=UTC)  # a Monday
COUNTS = [10_000, 9_900, 10_100, 10_050, 9_950, 10_000, 10_020, 9_980]
FAILED_ID = "f0f0f0f0f0f0f0f0"


def config(text: str):
    return parse_table_config_text(text, "t.yaml", yaml=yaml)


def metric_row(day: int, value: float, metric: str = "row_count", column: str | None = None):
    return {
        "ingest_id": f"{day:016x}",
        "recorded_at": START + timedelta(days=day),
        "scope": "table",
        "source": None,
        "column_name": column,
        "metric": metric,
        "check_name": None,
        "value": value,
    }


def failed_report(day: float, checks: list[dict], rows: int = 500) -> AuditReport:
    at = (START + timedelta(days=day)).isoformat()
    return AuditReport.from_dict(failed_drop_report(FAILED_ID, checks, rows=rows, at=at))


ANOMALY_ENTRY = anomaly_entry(500, drops=8)


def test_the_default_config_watches_row_count_with_its_anomaly_check():
    [monitor] = monitors_of(default_config())
    assert (monitor.metric, monitor.column, monitor.kind, monitor.check) == (
        "row_count",
        None,
        "anomaly",
        "row_count_anomaly",
    )


def test_row_count_is_always_plotted_even_when_no_check_watches_it():
    monitors = monitors_of(
        config(
            "checks:\n"
            "  - {kind: anomaly, name: email_nulls, metric: null_fraction, column: email}\n"
            "  - {kind: not_null, column: id}\n"
        )
    )
    assert [(m.label, m.kind, m.check) for m in monitors] == [
        ("row_count", RECORDED, None),
        ("null_fraction(email)", "anomaly", "email_nulls"),
    ]


def test_each_published_drop_has_the_band_learned_from_the_drops_before_it():
    rows = [metric_row(day, value) for day, value in enumerate(COUNTS)]
    rows.append(metric_row(3, 0.5, metric="null_fraction", column="email"))  # another series
    [chart] = metric_charts(default_config(), reversed(rows), {})

    assert [r["value"] for r in chart.rows] == COUNTS  # oldest first
    assert {r["drop"] for r in chart.rows} == {PUBLISHED}
    # Not judged until min_history (4) drops were published.
    assert [r["low"] for r in chart.rows[:4]] == [None] * 4
    for index in range(4, len(COUNTS)):
        band = learn_band(COUNTS[:index])
        assert (chart.rows[index]["low"], chart.rows[index]["high"]) == (band.low, band.high)
    assert "from the last 7 published drops" in chart.rows[-1]["message"]
    assert chart.rows[-1]["at"] == (START + timedelta(days=7)).replace(tzinfo=None)


def test_a_failed_drop_is_marked_with_its_reports_value_and_band_and_does_not_move_the_band():
    rows = [metric_row(day, value) for day, value in enumerate(COUNTS)]
    report = failed_report(5.5, [ANOMALY_ENTRY])
    [chart] = metric_charts(default_config(), rows, {FAILED_ID: report})

    [failed] = [r for r in chart.rows if r["drop"] == FAILED]
    assert (failed["value"], failed["low"], failed["high"]) == (500.0, 9_700.0, 10_300.0)
    assert failed["ingest_id"] == FAILED_ID
    assert failed["message"] == ANOMALY_ENTRY["message"]
    assert [r["drop"] for r in chart.rows].index(FAILED) == 6  # between days 5 and 6
    after = chart.rows[7]
    assert (after["low"], after["high"]) == (
        learn_band(COUNTS[:6]).low,
        learn_band(COUNTS[:6]).high,
    )


def test_a_failed_drop_without_a_row_count_check_shows_the_rows_it_wrote():
    monitors_config = config(
        "checks:\n  - {kind: anomaly, name: amount_mean, metric: mean, column: amount}\n"
    )
    report = failed_report(1, [dict(ANOMALY_ENTRY, name="amount_mean", observed=3.5)], rows=42)
    row_count, mean = metric_charts(monitors_config, [metric_row(0, 10.0)], {FAILED_ID: report})

    assert [(r["value"], r["drop"]) for r in row_count.rows] == [(10.0, PUBLISHED), (42.0, FAILED)]
    assert [(r["value"], r["drop"]) for r in mean.rows] == [(3.5, FAILED)]


def test_a_datasets_check_is_found_by_its_table_prefixed_name():
    entry = dict(ANOMALY_ENTRY, name="sales.orders: row_count_anomaly")
    [chart] = metric_charts(
        default_config(), [], {FAILED_ID: failed_report(1, [entry])}, table="sales.orders"
    )
    assert [r["value"] for r in chart.rows] == [500.0]


def test_a_seasonal_band_learns_from_the_same_weekday_only():
    # Mondays hold 1,000 rows, other days 10,000: a Monday is judged against Mondays.
    rows = [
        metric_row(day, 1_000 if (START + timedelta(days=day)).weekday() == 0 else 10_000)
        for day in range(0, 29)
    ]
    seasonal = config(
        "checks:\n"
        "  - {kind: anomaly, name: rc, metric: row_count, seasonality: day_of_week,"
        " min_history: 2, window: 3}\n"
    )
    [chart] = metric_charts(seasonal, rows, {})

    last_monday = chart.rows[28]
    assert last_monday["value"] == 1_000
    assert (last_monday["low"], last_monday["high"]) == (
        learn_band([1_000] * 3).low,
        learn_band([1_000] * 3).high,
    )
    assert "on the same weekday" in last_monday["message"]


def test_a_metric_checks_history_bound_is_evaluated_on_the_drops_before():
    bounded = config(
        "checks:\n  - {kind: metric, name: rc_floor, metric: row_count,"
        " min: 0.5 * avg(last(2)), max: 20000}\n"
    )
    [chart] = metric_charts(bounded, [metric_row(d, v) for d, v in enumerate([100, 300, 50])], {})

    assert [(r["low"], r["high"]) for r in chart.rows] == [
        (None, 20_000.0),
        (50.0, 20_000.0),
        (100.0, 20_000.0),
    ]


def test_file_scope_rows_are_not_the_tables_values():
    rows = [metric_row(0, 10.0), dict(metric_row(0, 4.0), scope="file", source="s3://b/k")]
    [chart] = metric_charts(default_config(), rows, {})
    assert [r["value"] for r in chart.rows] == [10.0]


def test_values_that_are_not_numbers_are_left_out():
    rows = [metric_row(0, 10.0), metric_row(1, float("nan")), metric_row(2, None)]
    [chart] = metric_charts(default_config(), rows, {})
    assert [r["value"] for r in chart.rows] == [10.0]
