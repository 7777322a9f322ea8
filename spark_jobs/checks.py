"""Audit checks compiled against the table schema.

Each compiled check can try to settle itself from the snapshot's file metrics
(`settle`), else contributes aggregate expressions to the one-pass scan
(`aggregates` / `finish`), and names the predicate that picks its violating rows
for samples (`violation`). Compiling validates columns, types, regexes and SQL
against the schema, so a config error surfaces before anything is written.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from contracts import timestamps
from contracts.report import ERROR, FAILED, METRICS, PASSED, SCAN, WRITE, CheckResult
from contracts.table_config import (
    MONITOR_KINDS,
    PARSE_ERRORS,
    CheckSpec,
    TableConfig,
    parse_max_age,
)
from spark_jobs.errors import TableConfigError, as_job_error, classify, describe
from spark_jobs.identifiers import quote
from spark_jobs.literals import literal
from spark_jobs.metrics import ColumnStats, SnapshotStats

NUMERIC = (
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.DecimalType,
)
ORDERED = (*NUMERIC, T.DateType, T.TimestampType, T.TimestampNTZType, T.StringType)
ATOMIC = (*ORDERED, T.BooleanType)
TIME_TYPES = (T.DateType, T.TimestampType, T.TimestampNTZType)
# Types whose Iceberg bounds are exact (see metrics.EXACT_BOUND_TYPES).
EXACT_BOUNDS = (T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType, T.DateType)


def col(name: str) -> Column:
    """A column reference that survives any name (`select`, `my col`, `a.b`)."""
    return F.col(quote(name))


class Check:
    """A check bound to its column types; subclasses implement one kind each."""

    #: True when the check reads main's rows besides the batch (unique against_main).
    needs_main = False
    #: True when its aggregates can be observed while the rows are written
    #: (Spark's `observe` takes no DISTINCT aggregates).
    observable = True
    #: True when `violation()` looks at one row alone (no window over the batch).
    per_row_violation = True

    def metrics_may_settle(self) -> bool:
        """True when file metrics usually decide this check (then it is not observed
        during the write: evaluating it per row there would be wasted on clean data)."""
        return False

    def __init__(self, spec: CheckSpec, types: dict[str, T.DataType]):
        self.spec = spec
        self.types = types

    @property
    def column(self) -> str:
        return self.spec.columns[0]

    def sample_columns(self) -> list[str]:
        """Columns a sample row of this check must show."""
        return list(self.spec.columns)

    def threshold(self) -> Any:
        return None

    def settle(self, stats: SnapshotStats, now: dt.datetime) -> CheckResult | None:
        """A result from file metrics alone, or None when the rows must be read."""
        return None

    def aggregates(self, prefix: str) -> list[Column]:
        """Aggregate expressions for the one-pass scan, aliased under `prefix`."""
        return [F.count_if(self.violation()).alias(f"{prefix}v")]

    def finish(
        self, values: dict[str, Any], prefix: str, rows: int, now: dt.datetime
    ) -> CheckResult:
        return self.result(values[f"{prefix}v"], SCAN)

    def violation(self) -> Column | None:
        """Predicate true on a violating row (None: the check is about the batch).

        Built once: every Column costs py4j round trips, and the audit asks often.
        """
        if "_violation" not in self.__dict__:
            self._violation = self._build_violation()
        return self._violation

    def _build_violation(self) -> Column | None:
        return None

    def result(
        self,
        violations: int | None,
        settled_by: str,
        observed: Any = None,
        failed: bool | None = None,
    ) -> CheckResult:
        """The report's entry for this check (`contracts.report.CheckResult`)."""
        if failed is None:
            failed = bool(violations)
        return CheckResult(
            name=self.spec.name,
            kind=self.spec.kind,
            columns=self.spec.columns,
            severity=self.spec.severity,
            status=FAILED if failed else PASSED,
            violations=violations,
            threshold=self.threshold(),
            observed=violations if observed is None else observed,
            settled_by=settled_by,
        )

    def _stats(self, stats: SnapshotStats) -> tuple[ColumnStats, int | None]:
        """Column stats and the number of non-null values (None when unknown)."""
        column = stats.columns.get(self.column, ColumnStats(null_count=None))
        if column.null_count is None:
            return column, None
        return column, stats.record_count - column.null_count

    def _bounds_usable(self, column: ColumnStats) -> bool:
        if not isinstance(self.types[self.column], EXACT_BOUNDS) or not column.bounds_known:
            return False
        return column.nan_count == 0 or not isinstance(
            self.types[self.column], (T.FloatType, T.DoubleType)
        )


class NotNull(Check):
    def metrics_may_settle(self):
        return True

    def settle(self, stats, now):
        counts = [
            stats.columns.get(name, ColumnStats(null_count=None)).null_count
            for name in self.spec.columns
        ]
        if any(count is None for count in counts):
            return None
        if len(counts) == 1:
            return self.result(counts[0], METRICS)
        if not any(counts):
            return self.result(0, METRICS)
        return None  # rows with several null columns would be counted twice

    def _build_violation(self):
        condition = F.lit(False)
        for name in self.spec.columns:
            condition = condition | col(name).isNull()
        return condition


class Unique(Check):
    observable = False
    per_row_violation = False

    @property
    def needs_main(self) -> bool:
        return bool(self.spec.params.get("against_main"))

    def settle(self, stats, now):
        if self.needs_main or len(self.spec.columns) != 1:
            return None
        _, non_null = self._stats(stats)
        return self.result(0, METRICS) if non_null is not None and non_null <= 1 else None

    def _keys_present(self) -> Column:
        condition = F.lit(True)
        for name in self.spec.columns:
            condition = condition & col(name).isNotNull()
        return condition

    def aggregates(self, prefix):
        # Duplicates = rows with a non-null key minus distinct keys: exact, no join.
        return [
            F.count_if(self._keys_present()).alias(f"{prefix}n"),
            F.count_distinct(*[col(name) for name in self.spec.columns]).alias(f"{prefix}d"),
        ]

    def finish(self, values, prefix, rows, now):
        return self.result(int(values[f"{prefix}n"]) - int(values[f"{prefix}d"]), SCAN)

    def _build_violation(self):
        window = Window.partitionBy(*[col(name) for name in self.spec.columns])
        return self._keys_present() & (F.count(F.lit(1)).over(window) > 1)


class AcceptedValues(Check):
    def metrics_may_settle(self):
        # Numbers/dates: when every value is one bound; strings: parquet dictionaries.
        return isinstance(self.types[self.column], (*EXACT_BOUNDS, T.StringType))

    def settle(self, stats, now):
        column, non_null = self._stats(stats)
        if non_null == 0:
            return self.result(0, METRICS)
        if column.values is not None and isinstance(self.types[self.column], T.StringType):
            accepted = {str(value) for value in self.spec.params["values"]}
            # A value outside the list may be in a dictionary yet rare: count by scan.
            return self.result(0, METRICS) if column.values <= accepted else None
        if non_null is None or not self._bounds_usable(column) or column.lower != column.upper:
            return None
        # Every non-null value equals the single bound.
        return self.result(0 if column.lower in self.accepted() else non_null, METRICS)

    def threshold(self):
        return {"values": self.spec.params["values"]}

    def accepted(self) -> list:
        """The configured values in the column's type (0.1 is Decimal('0.1') for a
        decimal column, '2026-01-01' a date for a date column)."""
        type_ = self.types[self.column]
        return [_coerce(value, type_) for value in self.spec.params["values"]]

    def _build_violation(self):
        type_ = self.types[self.column]
        return col(self.column).isNotNull() & ~col(self.column).isin(
            *[literal(value, type_) for value in self.accepted()]
        )


class Range(Check):
    def metrics_may_settle(self):
        return isinstance(self.types[self.column], EXACT_BOUNDS)

    def threshold(self):
        return {
            "min": _jsonable(self.spec.params.get("min")),
            "max": _jsonable(self.spec.params.get("max")),
        }

    def _limits(self) -> tuple[Any, Any]:
        type_ = self.types[self.column]
        return tuple(_coerce(self.spec.params.get(key), type_) for key in ("min", "max"))

    def settle(self, stats, now):
        column, non_null = self._stats(stats)
        if non_null == 0:
            return self.result(0, METRICS)
        if non_null is None or not self._bounds_usable(column):
            return None
        low, high = self._limits()
        if (low is None or column.lower >= low) and (high is None or column.upper <= high):
            return self.result(0, METRICS)
        if (low is not None and column.upper < low) or (high is not None and column.lower > high):
            return self.result(non_null, METRICS)  # every value is outside
        return None

    def _build_violation(self):
        low, high = self._limits()
        type_ = self.types[self.column]
        outside = F.lit(False)
        if low is not None:
            outside = outside | (col(self.column) < literal(low, type_))
        if high is not None:
            # NaN sorts above every number in Spark, so it counts as out of range.
            outside = outside | (col(self.column) > literal(high, type_))
        return col(self.column).isNotNull() & outside


class Regex(Check):
    def threshold(self):
        return {"pattern": self.spec.params["pattern"]}

    def settle(self, stats, now):
        _, non_null = self._stats(stats)
        return self.result(0, METRICS) if non_null == 0 else None

    def _build_violation(self):
        return col(self.column).isNotNull() & ~col(self.column).rlike(self.spec.params["pattern"])


class RowCount(Check):
    def threshold(self):
        return {"min": self.spec.params.get("min"), "max": self.spec.params.get("max")}

    def _judge(self, rows: int, settled_by: str) -> CheckResult:
        low, high = self.spec.params.get("min"), self.spec.params.get("max")
        failed = (low is not None and rows < low) or (high is not None and rows > high)
        return self.result(1 if failed else 0, settled_by, observed=rows, failed=failed)

    def settle(self, stats, now):
        return self._judge(stats.record_count, METRICS)

    def aggregates(self, prefix):
        return []

    def finish(self, values, prefix, rows, now):
        return self._judge(rows, SCAN)


class NullFraction(Check):
    def metrics_may_settle(self):
        return True

    def threshold(self):
        return {"max": self.spec.params["max"]}

    def _judge(self, nulls: int, rows: int, settled_by: str) -> CheckResult:
        fraction = nulls / rows if rows else 0.0
        return self.result(
            nulls,
            settled_by,
            observed=round(fraction, 6),
            failed=fraction > self.spec.params["max"],
        )

    def settle(self, stats, now):
        nulls = stats.columns.get(self.column, ColumnStats(null_count=None)).null_count
        return None if nulls is None else self._judge(nulls, stats.record_count, METRICS)

    def aggregates(self, prefix):
        return [F.count_if(col(self.column).isNull()).alias(f"{prefix}v")]

    def finish(self, values, prefix, rows, now):
        return self._judge(int(values[f"{prefix}v"]), rows, SCAN)


class Expression(Check):
    #: Columns the SQL references (set by compile_checks from Spark's analysis).
    referenced: tuple[str, ...] = ()

    def sample_columns(self):
        return list(self.referenced)

    def threshold(self):
        return {"sql": self.spec.params["sql"]}

    def _build_violation(self):
        # dbt semantics: a row violates when the expression is false; NULL is not false.
        return ~F.expr(self.spec.params["sql"])


class Freshness(Check):
    def metrics_may_settle(self):
        return isinstance(self.types[self.column], (T.TimestampType, T.DateType))

    def threshold(self):
        return {"max_age_s": parse_max_age(self.spec.params["max_age"])}

    def _judge(self, newest_micros: int | None, now: dt.datetime, settled_by: str) -> CheckResult:
        if newest_micros is None:
            return self.result(1, settled_by, observed=None, failed=True)
        now_micros = (now - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        age_s = round((now_micros - newest_micros) / 1e6, 3)
        failed = age_s > self.threshold()["max_age_s"]
        return self.result(1 if failed else 0, settled_by, observed={"age_s": age_s}, failed=failed)

    def settle(self, stats, now):
        column, non_null = self._stats(stats)
        if non_null == 0:
            return self._judge(None, now, METRICS)
        type_ = self.types[self.column]
        if (
            non_null is None
            or not column.bounds_known
            or column.upper is None
            or not isinstance(type_, (T.TimestampType, T.DateType))
        ):
            return None
        upper = column.upper
        if isinstance(upper, dt.date) and not isinstance(upper, dt.datetime):
            upper = dt.datetime.combine(upper, dt.time())
        return self._judge(
            (upper - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1), now, METRICS
        )

    def aggregates(self, prefix):
        return [F.unix_micros(F.max(col(self.column)).cast("timestamp")).alias(f"{prefix}v")]

    def finish(self, values, prefix, rows, now):
        value = values[f"{prefix}v"]
        return self._judge(None if value is None else int(value), now, SCAN)


class ParseErrorsCheck:
    """`parse_errors`: rows of text sources that did not parse (not written, so not in
    the snapshot: the write counts them, `text_sources.py`). At most `max` (default 0)."""

    def __init__(self, spec: CheckSpec):
        self.spec = spec

    def result(
        self, count: int | None, samples: tuple[dict, ...] = (), settled_by: str = WRITE
    ) -> CheckResult:
        """The report's entry for `count` unparsable rows (None: not counted: error)."""
        limit = int(self.spec.params.get("max", 0))
        status = ERROR if count is None else FAILED if count > limit else PASSED
        message = None
        if count is None:
            message = "the rows that did not parse could not be counted"
        elif count:
            message = (
                f"{count} row(s) did not parse and were not written; samples show "
                "their file, line and text"
            )
        return CheckResult(
            name=self.spec.name,
            kind=self.spec.kind,
            columns=(),
            severity=self.spec.severity,
            status=status,
            violations=count,
            threshold={"max": limit},
            observed=count,
            settled_by=settled_by,
            samples=samples,
            message=message,
        )


def parse_errors_check(config: TableConfig, reads_text: bool) -> ParseErrorsCheck | None:
    """The run's `parse_errors` check: the configured one, else the default (at most 0)
    when the run reads a text source; None for parquet only without one configured."""
    for spec in config.checks:
        if spec.kind == PARSE_ERRORS:
            return ParseErrorsCheck(spec)
    if not reads_text:
        return None
    return ParseErrorsCheck(CheckSpec(name=PARSE_ERRORS, kind=PARSE_ERRORS, params={"max": 0}))


CHECK_CLASSES: dict[str, type[Check]] = {
    "not_null": NotNull,
    "unique": Unique,
    "accepted_values": AcceptedValues,
    "range": Range,
    "regex": Regex,
    "row_count": RowCount,
    "null_fraction": NullFraction,
    "expression": Expression,
    "freshness": Freshness,
}
# kind -> Spark types its column may have.
ALLOWED_TYPES: dict[str, tuple[type, ...]] = {
    "unique": ATOMIC,
    "accepted_values": ATOMIC,
    "range": ORDERED,
    "regex": (T.StringType,),
    "freshness": TIME_TYPES,
}


def compile_checks(spark: SparkSession, config: TableConfig, schema: T.StructType) -> list[Check]:
    """Bind the config's checks to `schema` (the table schema after this write).

    Raises TableConfigError for a missing column, a type the check cannot take, a regex
    Java cannot compile or an expression Spark cannot analyse.
    """
    types = {f.name: f.dataType for f in schema.fields}
    # parse_errors is about rows that were not written: `parse_errors_check`; metric and
    # anomaly checks are judged on the recorded profile: `spark_jobs.monitors`.
    specs = [
        spec
        for spec in config.checks
        if spec.kind != PARSE_ERRORS and spec.kind not in MONITOR_KINDS
    ]
    if not config.from_file:
        specs += default_required_checks(schema)
    compiled = []
    for spec in specs:
        where = f"check {spec.name!r} ({spec.kind})"
        for name in spec.columns:
            if name not in types:
                raise TableConfigError(
                    f"{where}: column {name!r} is not in the table; columns: {', '.join(types)}"
                )
            allowed = ALLOWED_TYPES.get(spec.kind)
            if allowed and not isinstance(types[name], allowed):
                raise TableConfigError(
                    f"{where}: column {name!r} has type "
                    f"{types[name].simpleString()}, which {spec.kind} cannot check"
                )
        check = CHECK_CLASSES[spec.kind](spec, types)
        if spec.kind == "regex":
            _validate_java_regex(spark, spec.params["pattern"], where)
        # The configured literals must convert to the column's type, or the check cannot run.
        literals = {"range": ("min/max", "_limits"), "accepted_values": ("values", "accepted")}
        if spec.kind in literals:
            what, convert = literals[spec.kind]
            try:
                getattr(check, convert)()
            except (TypeError, ValueError, ArithmeticError) as exc:
                raise TableConfigError(
                    f"{where}: {what} do not fit the column type: {exc}"
                ) from exc
        if spec.kind == "expression":
            check.referenced = _validate_expression(spark, spec.params["sql"], schema, where)
        compiled.append(check)
    if compiled:
        analyse_audit_queries(_empty_frame(spark, schema), compiled)
    return compiled


def analyse_audit_queries(empty: DataFrame, checks: list[Check]) -> None:
    """Build every query the write and the audit run with the checks' SQL on `empty` (a
    frame of the table's schema without rows): Spark analyses a query when it is built,
    so a check it refuses anywhere (an IN subquery inside an aggregate, say) is refused
    here, before anything is written. Whatever Spark's error class, an analysis error is
    the config's: TableConfigError naming the check. A failure to reach the JVM at all
    stays infrastructure (`config_fault`).

    All checks are analysed together (four analyses per run); only when that fails is
    each built alone, to name the culprit.
    """
    try:
        _build_audit_queries(empty, checks)
        return
    except Exception as exc:
        config_fault(exc, "the audit's queries cannot be analysed")
    for check in checks:
        try:
            _build_audit_queries(empty, [check])
        except Exception as exc:
            config_fault(exc, f"check {check.spec.name!r}")
            raise TableConfigError(
                f"check {check.spec.name!r} ({check.spec.kind}): Spark cannot run it in the "
                f"audit: {_first_line(exc)}"
            ) from exc


def _build_audit_queries(empty: DataFrame, checks: list[Check]) -> None:
    """The shapes the checks take in the job (audit.py, per_source.py, writer.py): one
    aggregation (the scan), the same grouped by file (a batch's verdicts), observed
    during the write, and the violation predicates selected and filtered (samples)."""
    aggregates = [F.count(F.lit(1)).alias("__rows")]
    for index, check in enumerate(checks):
        aggregates += check.aggregates(f"c{index}_")
    empty.agg(*aggregates)
    empty.groupBy(F.lit("file").alias("__file")).agg(*aggregates)
    observed = [aggregates[0]] + [
        aggregate
        for index, check in enumerate(checks)
        if check.observable
        for aggregate in check.aggregates(f"c{index}_")
    ]
    empty.observe("wap_analysis", *observed)  # by name: no listener is registered
    flags = [
        check.violation().alias(f"__v{index}")
        for index, check in enumerate(checks)
        if check.violation() is not None
    ]
    if flags:
        flagged = F.lit(False)
        for index, check in enumerate(checks):
            if check.violation() is not None:
                flagged = flagged | F.col(f"__v{index}")
        empty.select("*", *flags).where(flagged)


def config_fault(exc: BaseException, what: str) -> None:
    """Return when analysing a check failed because of the check (anything Spark's
    analysis raises, whatever its class); raise the InfrastructureError when a known
    infrastructure cause failed it (the JVM gateway gone, out of memory, a catalog a
    subquery names that does not answer)."""
    verdict = classify(exc)
    if verdict.known and not verdict.is_input:
        raise as_job_error(exc, f"{what}: {describe(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def default_required_checks(schema: T.StructType) -> list[CheckSpec]:
    """not_null on every Iceberg `required` column (part of the defaults)."""
    return [
        CheckSpec(name=f"{f.name}_not_null", kind="not_null", columns=(f.name,))
        for f in schema.fields
        if not f.nullable
    ]


def _validate_java_regex(spark: SparkSession, pattern: str, where: str) -> None:
    try:
        spark._jvm.java.util.regex.Pattern.compile(pattern)
    except Exception as exc:  # PatternSyntaxException, surfaced by PySpark as its own type
        raise TableConfigError(f"{where}: bad regex {pattern!r}: {describe(exc)}") from exc


def _validate_expression(
    spark: SparkSession, sql: str, schema: T.StructType, where: str
) -> tuple[str, ...]:
    """Analyse `sql` against `schema`; return the top-level columns it reads."""
    from pyspark.errors import PySparkException
    from pyspark.sql.utils import AnalysisException, ParseException

    empty = _empty_frame(spark, schema)
    try:
        selected = empty.select(F.expr(sql))  # Datasets are analysed when built
        result_type = selected.schema.fields[0].dataType
        if isinstance(result_type, T.BooleanType):
            # `where` refuses aggregates and window functions: the expression is per row.
            empty.where(F.expr(sql))
    except (AnalysisException, ParseException, PySparkException) as exc:
        raise TableConfigError(
            f"{where}: invalid SQL expression {sql!r}: {_first_line(exc)}"
        ) from exc
    except Exception as exc:  # any other analysis error is the SQL's too (config_fault)
        config_fault(exc, f"{where}: analysing {sql!r}")
        raise TableConfigError(
            f"{where}: invalid SQL expression {sql!r}: {_first_line(exc)}"
        ) from exc
    if not isinstance(result_type, T.BooleanType):
        raise TableConfigError(
            f"{where}: expression {sql!r} is {result_type.simpleString()}, not boolean"
        )
    references = selected._jdf.queryExecution().analyzed().references().toSeq()
    names = {references.apply(i).name() for i in range(references.size())}
    return tuple(f.name for f in schema.fields if f.name in names)


def _empty_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """An empty DataFrame of `schema`, built in the JVM (a few py4j calls; PySpark's
    `createDataFrame([], schema)` costs ten times more)."""
    jvm = spark._jvm
    jschema = jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
    return DataFrame(
        spark._jsparkSession.createDataFrame(jvm.java.util.ArrayList(), jschema), spark
    )


def _coerce(value: Any, type_: T.DataType) -> Any:
    """A configured bound in the Python type Spark returns for `type_`."""
    if value is None:
        return None
    if isinstance(type_, T.DateType):
        if isinstance(value, dt.datetime):
            return value.date()
        return value if isinstance(value, dt.date) else timestamps.parse_date(str(value))
    if isinstance(type_, (T.TimestampType, T.TimestampNTZType)):
        if isinstance(value, dt.datetime):
            return value
        if isinstance(value, dt.date):
            return dt.datetime.combine(value, dt.time())
        return timestamps.parse_datetime(str(value))
    if isinstance(type_, T.StringType):
        return str(value)
    if isinstance(type_, T.BooleanType):
        if not isinstance(value, bool):
            raise TypeError(f"{value!r} is not true or false")
        return value
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is not a number")
    if isinstance(type_, T.DecimalType):
        number = Decimal(str(value))
        if not number.is_finite():
            raise ValueError(f"{value!r} is not a finite number")
        return number
    if not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not a number")
    return value


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, dt.date) else value


def expression_failing_on(rows: DataFrame, checks: list[Check]) -> TableConfigError | None:
    """After a run failed evaluating an expression on the data: the `expression` check
    whose `sql` fails on `rows` (the rows shaped for the table), as the config error to
    report, or None (the failure was not a check's). One read of `rows` per such check."""
    from spark_jobs.errors import classify

    for check in checks:
        if check.spec.kind != "expression":
            continue
        sql = check.spec.params["sql"]
        try:
            rows.select(F.expr(sql)).write.format("noop").mode("overwrite").save()
        except Exception as exc:
            if not classify(exc).is_input:
                raise
            return TableConfigError(
                f"checks: {check.spec.name}: expression {sql!r} fails on the data: "
                f"{describe(exc)}. Make it hold for every row (e.g. try_cast, try_divide, "
                "a CASE guard), or remove it"
            )
    return None
