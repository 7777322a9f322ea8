"""The profile every audit records (contracts/metric_history.py): per column the null
fraction, the approximate distinct count and, for numbers, min, max, mean and standard
deviation. Its aggregates ride in the pass the audit already makes: observed during the
write. A drop too large to observe (spark_jobs/wap_job.observe_on_write) takes its row
count, null fractions and numeric min/max from the snapshot's column metrics (exact, no
data read), and the rest only for the metrics learning checks watch, in the audit's one
scan: every column's distinct count, mean and deviation would cost reading every column
(docs/benchmarks.md, "Metric history")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from contracts.metric_history import (
    DISTINCT_COUNT,
    MAX,
    MEAN,
    MIN,
    NULL_FRACTION,
    ROW_COUNT,
    STDDEV,
)
from spark_jobs.checks import EXACT_BOUNDS
from spark_jobs.checks import NUMERIC as NUMBERS
from spark_jobs.identifiers import quote
from spark_jobs.literals import MAX_COMPACT_PRECISION
from spark_jobs.metrics import SnapshotStats

PREFIX = "p_"
# The suffix of a numeric aggregate taken over a decimal's unscaled longs (see _numbers).
UNSCALED = "_u"
# approx_count_distinct (HyperLogLog++) takes atomic values only.
DISTINCT_TYPES = (
    *NUMBERS,
    T.StringType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
    T.BooleanType,
)
NUMERIC_AGGREGATES = (
    ("lo", MIN, F.min),
    ("hi", MAX, F.max),
    ("mean", MEAN, F.avg),
    ("sd", STDDEV, F.stddev_samp),
)


@dataclass(frozen=True)
class Measured:
    """One recorded metric: the table's (`column` None) or a column's."""

    metric: str
    value: float | None
    column: str | None = None


class Profile:
    """The profile aggregates of a table schema, and the metrics they measure."""

    def __init__(
        self,
        schema: T.StructType,
        watched: frozenset[tuple[str, str | None]] = frozenset(),
        only: dict[str, set[str]] | None = None,
    ):
        self.fields = list(schema.fields)
        #: The (metric, column) series learning checks watch: measured by scan when
        #: neither the write nor the file metrics did.
        self.watched = watched
        #: Per column, the metrics to aggregate (None: all of them).
        self.only = only

    def for_scan(self, covered: set[tuple[str, str | None]]) -> Profile | None:
        """The profile of the watched series the file metrics did not `cover`, for a
        drop the write did not observe: only their columns and metrics (None: none)."""
        only: dict[str, set[str]] = {}
        for metric, column in self.watched:
            if column is not None and (metric, column) not in covered:
                only.setdefault(column, set()).add(metric)
        fields = [field for field in self.fields if field.name in only]
        return Profile(T.StructType(fields), only=only) if fields else None

    def _wants(self, field: T.StructField, metric: str) -> bool:
        return self.only is None or metric in self.only.get(field.name, ())

    def from_file_metrics(self, stats: SnapshotStats) -> list[Measured]:
        """What the snapshot's column metrics tell exactly: the row count, each column's
        null fraction and, where Iceberg keeps exact bounds, a number's min and max."""
        rows = stats.record_count
        measured = [Measured(ROW_COUNT, float(rows))]
        for field in self.fields:
            column = stats.columns.get(field.name)
            if column is None or column.null_count is None:
                continue
            measured.append(
                Measured(NULL_FRACTION, column.null_count / rows if rows else 0.0, field.name)
            )
            exact = (
                isinstance(field.dataType, NUMBERS)
                and isinstance(field.dataType, EXACT_BOUNDS)
                and column.bounds_known
                and not column.nan_count
                and column.lower is not None
            )
            if exact:
                measured.append(Measured(MIN, float(column.lower), field.name))
                measured.append(Measured(MAX, float(column.upper), field.name))
        return measured

    def aggregates(self) -> list[Column]:
        """Aggregate expressions aliased `p_<i>_<what>`, for `agg` or `observe`."""
        aggregates = []
        for index, field in enumerate(self.fields):
            column = F.col(quote(field.name))
            name = f"{PREFIX}{index}_"
            if self._wants(field, NULL_FRACTION):
                aggregates.append(F.count_if(column.isNull()).alias(name + "n"))
            if isinstance(field.dataType, DISTINCT_TYPES) and self._wants(field, DISTINCT_COUNT):
                aggregates.append(F.approx_count_distinct(column).alias(name + "d"))
            if isinstance(field.dataType, NUMBERS):
                number, suffix = _numbers(column, field.dataType)
                aggregates += [
                    function(number).alias(name + key + suffix)
                    for key, metric, function in NUMERIC_AGGREGATES
                    if self._wants(field, metric)
                ]
        return aggregates

    def measure(self, values: dict[str, Any], rows: int) -> list[Measured]:
        """The table's row count and each column's metrics from the aggregated values."""
        measured = [Measured(ROW_COUNT, float(rows))]
        for index, field in enumerate(self.fields):
            name = f"{PREFIX}{index}_"
            nulls = values.get(name + "n")
            if nulls is not None:
                measured.append(
                    Measured(NULL_FRACTION, int(nulls) / rows if rows else 0.0, field.name)
                )
            if values.get(name + "d") is not None:
                measured.append(Measured(DISTINCT_COUNT, float(values[name + "d"]), field.name))
            for key, metric, _ in NUMERIC_AGGREGATES:
                scale = 1.0
                if name + key + UNSCALED in values:  # back from unscaled longs
                    key += UNSCALED
                    scale = 10.0**field.dataType.scale
                if name + key in values:
                    value = values[name + key]
                    measured.append(
                        Measured(
                            metric, None if value is None else float(value) / scale, field.name
                        )
                    )
        return measured


def _numbers(column: Column, data_type: T.DataType) -> tuple[Column, str]:
    """What the numeric aggregates of `column` take, and the suffix of their aliases.

    A decimal of precision <= 18 is a compact long in Spark: its aggregates take that
    unscaled long (suffix UNSCALED; `measure` divides by 10^scale), because a cast of
    each value to double goes through a BigDecimal per row and costs about as much as
    the rest of a large drop's scan (docs/benchmarks.md, "Metric history"). min and max
    come back exact (a long over a power of ten, rounded once, as the cast rounds);
    mean and standard deviation are sums of doubles either way. Every other number is
    cast to double."""
    if isinstance(data_type, T.DecimalType) and data_type.precision <= MAX_COMPACT_PRECISION:
        unscaled = _unscaled_value(column)
        if unscaled is not None:
            return unscaled, UNSCALED
    return column.cast("double"), ""


def _unscaled_value(column: Column) -> Column | None:
    """Spark's `UnscaledValue` of a decimal column (the expression its optimizer uses
    for small decimal sums), None without a JVM of our own or where Spark's internals
    moved (the cast is then correct, only slower)."""
    jvm = SparkContext._jvm
    if jvm is None:
        return None
    try:
        expression = jvm.org.apache.spark.sql.catalyst.expressions.UnscaledValue(column._jc.expr())
        return Column(jvm.org.apache.spark.sql.Column(expression))
    except Exception:
        return None
