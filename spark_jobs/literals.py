"""Literals of a column's exact type, so Spark compares them at full speed.

`F.lit(Decimal("0.1"))` is a Spark Decimal backed by a java.math.BigDecimal. Spark's
`Decimal.compare` stays on longs only when both sides are compact longs of the same
scale; otherwise it allocates two BigDecimals per row. Values read from a decimal column
of precision <= 18 are compact longs, so a literal built from its unscaled long, of the
column's own type, keeps every comparison on longs: a `range` check on a decimal column
scans about twice as fast (docs/benchmarks.md, "Analysis").
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

MAX_COMPACT_PRECISION = 18  # Spark keeps decimals up to this precision as unscaled longs


def literal(value: Any, data_type: T.DataType) -> Column:
    """`value` as a literal column to compare with a column of `data_type`."""
    if isinstance(data_type, T.DecimalType) and isinstance(value, Decimal):
        unscaled = compact_unscaled(value, data_type)
        if unscaled is not None:
            compact = _jvm_decimal_literal(unscaled, data_type)
            if compact is not None:
                return compact
    return F.lit(value)


def compact_unscaled(value: Decimal, data_type: T.DecimalType) -> int | None:
    """`value` as an unscaled long of `data_type`, or None when it is not exactly one
    (more fractional digits than the scale, too many digits, a precision above 18):
    such a bound must be compared exactly, which only the BigDecimal literal does."""
    if data_type.precision > MAX_COMPACT_PRECISION or not value.is_finite():
        return None
    scaled = value.scaleb(data_type.scale)
    if scaled != scaled.to_integral_value():
        return None
    unscaled = int(scaled)
    return unscaled if abs(unscaled) < 10**data_type.precision else None


def _jvm_decimal_literal(unscaled: int, data_type: T.DecimalType) -> Column | None:
    jvm = SparkContext._jvm
    if jvm is None:  # no JVM of our own (e.g. Spark Connect): the plain literal still works
        return None
    try:
        types = jvm.org.apache.spark.sql.types
        value = types.Decimal.apply(unscaled, data_type.precision, data_type.scale)
        expression = jvm.org.apache.spark.sql.catalyst.expressions.Literal.create(
            value, types.DecimalType(data_type.precision, data_type.scale)
        )
        return Column(jvm.org.apache.spark.sql.Column(expression))
    except Exception:  # a Spark whose internals moved: correct, only slower
        return None
