"""Typed literals: decimal bounds Spark compares on longs, other values unchanged."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.literals import compact_unscaled, literal

MONEY = T.DecimalType(15, 2)


def _backed_by_big_decimal(spark, column) -> bool:
    """Whether the literal's Spark Decimal holds a java.math.BigDecimal (the slow
    comparison path) rather than an unscaled long."""
    debug = column._jc.expr().value().toDebugString()  # "Decimal(compact, 10, 15, 2)"
    assert debug.startswith(("Decimal(compact,", "Decimal(expanded,")), debug
    return debug.startswith("Decimal(expanded,")


def test_a_python_decimal_literal_is_big_decimal_backed(spark):
    # Why `literal` exists: this is what it avoids.
    assert _backed_by_big_decimal(spark, F.lit(Decimal("0.10")))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("0.1"), 10),
        (Decimal("-1.5"), -150),
        (Decimal("50"), 5000),
        (Decimal("0.105"), None),  # finer than the column's scale: compared exactly instead
        (Decimal("1e13"), None),  # more digits than the column holds
    ],
)
def test_compact_unscaled(value, expected):
    assert compact_unscaled(value, MONEY) == expected


def test_wide_decimals_are_never_compact():
    assert compact_unscaled(Decimal("1"), T.DecimalType(20, 2)) is None


def test_decimal_literal_is_compact_and_of_the_column_type(spark):
    column = literal(Decimal("0.1"), MONEY)
    assert not _backed_by_big_decimal(spark, column)
    assert column._jc.expr().dataType().simpleString() == "decimal(15,2)"
    assert spark.range(1).select(column.alias("v")).first().v == Decimal("0.10")


def test_other_values_stay_plain_literals(spark):
    finer = literal(Decimal("0.105"), MONEY)
    assert _backed_by_big_decimal(spark, finer)
    day = literal(dt.date(2026, 1, 1), T.DateType())
    assert spark.range(1).select(day.alias("d")).first().d == dt.date(2026, 1, 1)


def test_comparisons_are_exact_at_the_bounds(spark):
    values = ["-0.01", "0.00", "0.10", "0.11", None]
    frame = spark.createDataFrame(
        [(None if v is None else Decimal(v),) for v in values],
        T.StructType([T.StructField("q", MONEY)]),
    )

    def outside(low, high):
        q = F.col("q")
        predicate = (q < literal(Decimal(low), MONEY)) | (q > literal(Decimal(high), MONEY))
        return sorted(str(r.q) for r in frame.where(predicate).collect())

    assert outside("0", "0.1") == ["-0.01", "0.11"]
    assert outside("0", "0.105") == ["-0.01", "0.11"]  # exact BigDecimal fallback
    assert outside("0.005", "0.11") == ["-0.01", "0.00"]
