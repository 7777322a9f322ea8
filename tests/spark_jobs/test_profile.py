"""The profile's numeric aggregates: a small decimal's taken on its unscaled longs."""

from __future__ import annotations

import statistics
from decimal import Decimal

import pytest
from pyspark.sql import types as T

from spark_jobs.profile import Profile

SCHEMA = T.StructType(
    [
        T.StructField("money", T.DecimalType(15, 2)),
        T.StructField("wide", T.DecimalType(30, 4)),
        T.StructField("amount", T.IntegerType()),
    ]
)
MONEY = [Decimal("-12.34"), Decimal("0.05"), Decimal("25.50"), None, Decimal("9999999.99")]
WIDE = [Decimal("1.0001"), Decimal("-2.5000"), None, Decimal("3.1416"), Decimal("0")]
AMOUNT = [1, 2, None, 4, 8]


def _measured(spark) -> dict[tuple[str, str], float | None]:
    frame = spark.createDataFrame(list(zip(MONEY, WIDE, AMOUNT, strict=True)), SCHEMA)
    profile = Profile(SCHEMA)
    values = frame.agg(*profile.aggregates()).first().asDict()
    return {(m.column, m.metric): m.value for m in profile.measure(values, frame.count())}


def test_a_compact_decimal_is_aggregated_without_a_cast_to_double(spark):
    # The cast makes a BigDecimal per row: on a large drop it cost as much as the scan.
    plans = {str(column._jc.expr()) for column in Profile(SCHEMA).aggregates()}
    money = {plan for plan in plans if "money" in plan and "count" not in plan}
    assert money and all("unscaledvalue" in plan.lower() for plan in money), money
    assert not any("double" in plan.lower() for plan in money), money
    wide = {plan for plan in plans if "wide" in plan and "count" not in plan}
    assert wide and all("double" in plan.lower() for plan in wide), wide  # not a long


@pytest.mark.parametrize(
    ("column", "values"), [("money", MONEY), ("wide", WIDE), ("amount", AMOUNT)]
)
def test_numeric_metrics_are_the_values_own(spark, column, values):
    measured = _measured(spark)
    present = [float(v) for v in values if v is not None]
    assert measured[(column, "min")] == min(present)  # exact, as the cast rounds
    assert measured[(column, "max")] == max(present)
    assert measured[(column, "mean")] == pytest.approx(statistics.fmean(present), rel=1e-12)
    assert measured[(column, "stddev")] == pytest.approx(statistics.stdev(present), rel=1e-12)
    assert measured[(column, "null_fraction")] == 0.2
