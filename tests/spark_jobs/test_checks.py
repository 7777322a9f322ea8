"""Check compilation (config errors against the schema) and the metrics settlement rules."""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal

import pytest
import yaml
from pyspark.sql import types as T

from contracts.table_config import TableConfigError, default_config, parse_table_config_text
from spark_jobs.audit import run_audit
from spark_jobs.checks import compile_checks
from spark_jobs.metrics import ColumnStats, SnapshotStats

SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType(), False),
        T.StructField("amount", T.DoubleType(), True),
        T.StructField("email", T.StringType(), True),
        T.StructField("day", T.DateType(), True),
        T.StructField("ts", T.TimestampType(), True),
        T.StructField("price", T.DecimalType(15, 2), True),
        T.StructField("paid", T.BooleanType(), True),
    ]
)
NOW = dt.datetime(2026, 11, 22, 12, 0, 0)


def _compile(spark, checks_yaml: str, schema: T.StructType = SCHEMA):
    config = parse_table_config_text(f"checks:\n{checks_yaml}", yaml=yaml)
    return compile_checks(spark, config, schema)


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ("  - {kind: not_null, column: nope}", "column 'nope' is not in the table"),
        ("  - {kind: regex, column: email, pattern: '(unclosed'}", "bad regex '(unclosed'"),
        ("  - {kind: regex, column: email, pattern: '(?P<name>x)'}", "bad regex"),
        ("  - {kind: regex, column: amount, pattern: 'x'}", "has type double, which regex cannot"),
        ("  - {kind: freshness, column: email, max_age: 1d}", "which freshness cannot check"),
        ("  - {kind: expression, sql: 'amount >'}", "invalid SQL expression"),
        ("  - {kind: expression, sql: 'missing_col > 1'}", "invalid SQL expression"),
        ("  - {kind: expression, sql: 'amount + 1'}", "is double, not boolean"),
        ("  - {kind: expression, sql: 'max(amount) > 1'}", "invalid SQL expression"),
        ("  - {kind: range, column: amount, min: ten}", "min/max do not fit the column type"),
        ("  - {kind: range, column: price, max: .nan}", "min/max do not fit the column type"),
        (
            "  - {kind: accepted_values, column: price, values: [1, abc]}",
            "values do not fit the column type",
        ),
        (
            "  - {kind: accepted_values, column: day, values: [soon]}",
            "values do not fit the column type",
        ),
        (
            "  - {kind: accepted_values, column: paid, values: [1]}",
            "values do not fit the column type",
        ),
    ],
)
def test_config_errors_found_against_the_schema(spark, check, message):
    with pytest.raises(TableConfigError) as error:
        _compile(spark, check)
    assert message in str(error.value)


def test_java_regex_syntax_python_lacks_is_accepted(spark):
    (check,) = _compile(spark, "  - {kind: regex, column: email, pattern: '^\\p{Alpha}+@'}")
    assert check.spec.params["pattern"] == "^\\p{Alpha}+@"


def test_defaults_add_not_null_for_required_columns(spark):
    checks = compile_checks(spark, parse_table_config_text("", yaml=yaml), SCHEMA)
    assert checks == []  # a config file replaces the defaults

    checks = compile_checks(spark, default_config(), SCHEMA)
    assert [(c.spec.kind, c.spec.columns) for c in checks] == [
        ("row_count", ()),
        ("not_null", ("id",)),
    ]


def _stats(rows: int, **columns: ColumnStats) -> SnapshotStats:
    return SnapshotStats(record_count=rows, file_count=1, columns=columns)


def _settle(spark, check_yaml: str, stats: SnapshotStats):
    (check,) = _compile(spark, check_yaml)
    return check.settle(stats, NOW)


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        (ColumnStats(null_count=0, nan_count=0, lower=1.0, upper=9.0), ("passed", 0)),
        (ColumnStats(null_count=2, nan_count=0, lower=11.0, upper=50.0), ("failed", 8)),
        (ColumnStats(null_count=10, nan_count=0), ("passed", 0)),
        (ColumnStats(null_count=0, nan_count=0, lower=-1.0, upper=9.0), None),
        (ColumnStats(null_count=0, nan_count=1, lower=1.0, upper=9.0), None),
        (ColumnStats(null_count=0, nan_count=None, lower=1.0, upper=9.0), None),
        (ColumnStats(null_count=None, nan_count=0, lower=1.0, upper=9.0), None),
        (ColumnStats(null_count=0, nan_count=0, bounds_known=False), None),
    ],
    ids=[
        "inside",
        "all-outside",
        "all-null",
        "straddles",
        "nan",
        "no-nan-count",
        "no-null-count",
        "no-bounds",
    ],
)
def test_range_settlement(spark, column, expected):
    result = _settle(
        spark, "  - {kind: range, column: amount, min: 0, max: 10}", _stats(10, amount=column)
    )
    if expected is None:
        assert result is None
    else:
        assert (result.status, result.violations, result.settled_by) == (*expected, "metrics")


def test_string_bounds_are_never_trusted(spark):
    column = ColumnStats(null_count=0, lower="a", upper="a", bounds_known=True)
    stats = _stats(5, email=column)
    assert _settle(spark, "  - {kind: accepted_values, column: email, values: [a]}", stats) is None


DAY = dt.date(2026, 1, 1)
ONE_DAY = ColumnStats(null_count=0, lower=DAY, upper=DAY)  # every value that day
ONE_DAY_AND_A_NULL = ColumnStats(null_count=1, lower=DAY, upper=DAY)
ONE_PRICE = ColumnStats(null_count=0, lower=Decimal("0.10"), upper=Decimal("0.10"))


@pytest.mark.parametrize(
    ("column", "stats", "values", "expected"),
    [
        ("day", ONE_DAY_AND_A_NULL, "[2026-01-01]", ("passed", 0)),
        ("day", ONE_DAY_AND_A_NULL, "[2026-01-02]", ("failed", 3)),
        # 0.1 from YAML is a float, which never equals Decimal('0.10'); a quoted date is a str:
        # both compare in the column's type.
        ("price", ONE_PRICE, "[0.1, 2]", ("passed", 0)),
        ("day", ONE_DAY, "['2026-01-01']", ("passed", 0)),
    ],
    ids=["same-value-accepted", "same-value-refused", "decimal-as-float", "date-quoted"],
)
def test_accepted_values_settled_when_every_value_is_the_same(
    spark, column, stats, values, expected
):
    result = _settle(
        spark,
        f"  - {{kind: accepted_values, column: {column}, values: {values}}}",
        _stats(4, **{column: stats}),
    )
    assert (result.status, result.violations) == expected


def test_decimal_checks_count_exactly_at_their_bounds(spark):
    schema = T.StructType([T.StructField("price", T.DecimalType(15, 2))])
    frame = spark.createDataFrame(
        [(Decimal(v),) for v in ("-0.01", "0.00", "0.10", "0.11", "2.00")] + [(None,)], schema
    )
    checks = _compile(
        spark,
        """
  - {kind: range, column: price, min: 0, max: 0.1}
  - {kind: range, name: finer, column: price, min: 0.005, max: 2}
  - {kind: accepted_values, column: price, values: [0.1, 2]}
""",
        schema,
    )
    results = run_audit(checks, None, lambda: frame, NOW)
    assert [(r.status, r.violations) for r in results] == [
        ("failed", 3),
        ("failed", 2),
        ("failed", 3),
    ]
    assert sorted(s["price"] for s in results[1].samples) == ["-0.01", "0.00"]


def test_not_null_and_null_fraction_from_null_counts(spark):
    stats = _stats(8, email=ColumnStats(null_count=2))
    not_null = _settle(spark, "  - {kind: not_null, column: email}", stats)
    fraction = _settle(spark, "  - {kind: null_fraction, column: email, max: 0.2}", stats)
    assert (not_null.status, not_null.violations) == ("failed", 2)
    assert (fraction.status, fraction.observed) == ("failed", 0.25)
    unknown = _stats(8, email=ColumnStats(null_count=None))
    assert _settle(spark, "  - {kind: not_null, column: email}", unknown) is None


def test_freshness_from_the_upper_bound(spark):
    def fresh(upper):
        return _settle(
            spark,
            "  - {kind: freshness, column: ts, max_age: 2h}",
            _stats(3, ts=ColumnStats(null_count=0, lower=upper, upper=upper)),
        )

    recent = fresh(NOW - dt.timedelta(minutes=30))
    stale = fresh(NOW - dt.timedelta(hours=3))
    assert (recent.status, recent.observed) == ("passed", {"age_s": 1800.0})
    assert (stale.status, stale.observed) == ("failed", {"age_s": 10800.0})


def test_row_count_from_record_counts(spark):
    result = _settle(spark, "  - {kind: row_count, min: 5}", _stats(3))
    assert (result.status, result.observed, result.settled_by) == ("failed", 3, "metrics")


def test_scan_path_counts_exactly_on_odd_names(spark):
    schema = T.StructType(
        [
            T.StructField("select", T.LongType()),
            T.StructField("my col", T.StringType()),
            T.StructField("ts", T.TimestampType()),
        ]
    )
    rows = [
        (1, "a", NOW),
        (2, "b", NOW),
        (2, "zz", NOW),
        (None, None, NOW),
        (-5, "c", NOW - dt.timedelta(days=3)),
    ]
    frame = spark.createDataFrame(rows, schema)
    checks = _compile(
        spark,
        """
  - {kind: not_null, column: select}
  - {kind: unique, column: select}
  - {kind: range, column: select, min: 0}
  - {kind: regex, column: my col, pattern: '^[a-z]$'}
  - {kind: accepted_values, column: my col, values: [a, b, c]}
  - {kind: null_fraction, column: my col, max: 0.1}
  - {kind: expression, name: e, sql: '`select` < 2 OR `my col` = ''b'''}
  - {kind: freshness, column: ts, max_age: 1h}
  - {kind: row_count, max: 4}
""",
        schema,
    )
    results = run_audit(checks, None, lambda: frame, NOW)
    got = {r.name: (r.status, r.violations) for r in results}
    assert got["select_not_null"] == ("failed", 1)
    assert got["select_unique"] == ("failed", 1)
    assert got["select_range"] == ("failed", 1)
    assert got["my col_regex"] == ("failed", 1)
    assert got["my col_accepted_values"] == ("failed", 1)
    assert got["my col_null_fraction"] == ("failed", 1)
    assert got["e"] == ("failed", 1)
    assert got["ts_freshness"] == ("passed", 0)
    assert got["row_count"] == ("failed", 1)
    samples = {r.name: r.samples for r in results}
    assert samples["e"] == ({"select": 2, "my col": "zz", "ts": NOW.isoformat()},)
    assert sorted(s["select"] for s in samples["select_unique"]) == [2, 2]
    assert samples["row_count"] == ()


def test_rare_violations_still_get_samples_when_frequent_ones_fill_the_limit(spark, monkeypatch):
    from spark_jobs import audit

    monkeypatch.setattr(audit, "SAMPLE_SCAN_LIMIT", 2)
    schema = T.StructType([T.StructField("n", T.LongType()), T.StructField("s", T.StringType())])
    rows = [(i, "bad") for i in range(30)] + [(-1, "ok")]  # s fails often, n < 0 once
    frame = spark.createDataFrame(rows, schema).coalesce(1)
    checks = _compile(
        spark,
        """
  - {kind: accepted_values, column: s, values: [ok]}
  - {kind: range, column: n, min: 0}
""",
        schema,
    )
    values, ranges = run_audit(checks, None, lambda: frame, NOW)
    assert (values.violations, len(values.samples)) == (30, 5)
    assert (ranges.violations, ranges.samples) == (1, ({"n": -1, "s": "ok"},))


def test_observed_metrics_that_never_arrive_mean_a_scan_not_a_hang(spark):
    from pyspark.sql import Observation

    from spark_jobs.writer import _observed_values

    unused = Observation("never-attached")
    unused._jo = spark._jvm.org.apache.spark.sql.Observation("never-attached")
    started = dt.datetime.now()
    assert _observed_values(unused, timeout_s=0.3) is None
    assert (dt.datetime.now() - started).total_seconds() < 5


def test_string_accepted_values_settled_from_dictionary_values(spark):
    check = "  - {kind: accepted_values, column: email, values: [a, b, c]}"
    inside = _settle(spark, check, _stats(9, email=ColumnStats(null_count=1, values={"a", "b"})))
    outside = _settle(spark, check, _stats(9, email=ColumnStats(null_count=0, values={"a", "z"})))
    unknown = _settle(spark, check, _stats(9, email=ColumnStats(null_count=0, values=None)))
    assert (inside.status, inside.violations, inside.settled_by) == ("passed", 0, "metrics")
    assert outside is None and unknown is None


def _record_sampling_threads(monkeypatch) -> list[str]:
    """Names of the threads the LIMITed sampling query runs in."""
    from spark_jobs import audit

    threads: list[str] = []
    pick = audit._pick

    def recording(*args):
        threads.append(threading.current_thread().name)
        return pick(*args)

    monkeypatch.setattr(audit, "_pick", recording)
    return threads


def test_sampling_overlaps_the_scan_once_a_check_has_failed(spark, monkeypatch):
    threads = _record_sampling_threads(monkeypatch)
    schema = T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("s", T.StringType()),
            T.StructField("a", T.LongType()),
            T.StructField("n", T.LongType()),
        ]
    )
    frame = spark.createDataFrame([(1, "ok", 0, 5), (None, "ok", 1, 6), (3, "bad", 2, 7)], schema)
    checks = _compile(
        spark,
        """
  - {kind: not_null, column: id}
  - {kind: accepted_values, column: s, values: [ok]}
  - {kind: range, column: n, min: 0}
""",
        schema,
    )
    # The metrics already fail `not_null`; the other two need the scan.
    stats = _stats(
        3,
        id=ColumnStats(null_count=1),
        s=ColumnStats(null_count=0),
        n=ColumnStats(null_count=0, nan_count=0, bounds_known=False),
    )
    not_null, values, positive = run_audit(checks, stats, lambda: frame, NOW)

    assert [t.startswith("wap-audit-samples") for t in threads] == [True]
    assert (not_null.settled_by, not_null.violations) == ("metrics", 1)
    assert not_null.samples == ({"id": None, "s": "ok", "a": 1},)
    assert (values.settled_by, values.violations) == ("scan", 1)
    assert values.samples == ({"id": 3, "s": "bad", "a": 2},)
    # `n` rode along in the sampling query but passed: its column is not shown.
    assert (positive.status, positive.samples) == ("passed", ())


def test_sampling_waits_for_the_scan_when_nothing_failed_before_it(spark, monkeypatch):
    threads = _record_sampling_threads(monkeypatch)
    schema = T.StructType([T.StructField("s", T.StringType())])
    frame = spark.createDataFrame([("ok",), ("bad",)], schema)
    (values,) = _compile(spark, "  - {kind: accepted_values, column: s, values: [ok]}", schema)
    (result,) = run_audit([values], None, lambda: frame, NOW)

    assert threads == [threading.main_thread().name]
    assert (result.violations, result.samples) == (1, ({"s": "bad"},))
