"""The profile every audit records (contracts/metric_history.py): per column the null
fraction, the approximate distinct count and, for numbers, min, max, mean and standard
deviation. Its aggregates ride in the pass the audit already makes (observed during the
write, or in the audit's one aggregation scan): never a scan of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
from spark_jobs.checks import NUMERIC as NUMBERS
from spark_jobs.identifiers import quote

PREFIX = "p_"
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

    def __init__(self, schema: T.StructType):
        self.fields = list(schema.fields)

    def aggregates(self) -> list[Column]:
        """Aggregate expressions aliased `p_<i>_<what>`, for `agg` or `observe`."""
        aggregates = []
        for index, field in enumerate(self.fields):
            column = F.col(quote(field.name))
            name = f"{PREFIX}{index}_"
            aggregates.append(F.count_if(column.isNull()).alias(name + "n"))
            if isinstance(field.dataType, DISTINCT_TYPES):
                aggregates.append(F.approx_count_distinct(column).alias(name + "d"))
            if isinstance(field.dataType, NUMBERS):
                number = column.cast("double")
                aggregates += [
                    function(number).alias(name + key) for key, _, function in NUMERIC_AGGREGATES
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
                if name + key in values:
                    value = values[name + key]
                    measured.append(
                        Measured(metric, None if value is None else float(value), field.name)
                    )
        return measured
