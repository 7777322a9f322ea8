"""Checks between the tables of a multi-table dataset (issue 27), on its branch after every
table was written: `foreign_key` (each new child key is a parent key on the branch, i.e.
main plus this dataset) and `row_count_relation` (a boolean expression over the rows the
dataset adds to each table, e.g. `order_items >= orders`).

A foreign key costs what the drop brings, not what the parent holds: the new child keys
are looked up among the parent's new rows first, and only those still missing are looked
up among the parent's earlier rows (a filter Iceberg prunes files by, while they are few).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from contracts.dataset_config import FOREIGN_KEY, DatasetConfig
from contracts.report import FAILED, PASSED, SCAN, CheckResult
from contracts.table_config import CheckSpec
from spark_jobs.errors import TableConfigError, describe
from spark_jobs.identifiers import quote

SAMPLES = 5
# Keys left after the parent's new rows, up to this many, are looked up among its earlier
# rows by an IN filter; more are anti-joined.
LOOKUP_KEYS = 10_000
NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)


def evaluate_relations(
    spark: SparkSession,
    config: DatasetConfig,
    new_rows: dict[str, DataFrame],
    earlier_rows: dict[str, DataFrame | None],
    added: dict[str, int],
) -> list[CheckResult]:
    """The dataset's checks in config order. `new_rows`: each table's rows this dataset
    wrote (an empty frame of its schema when none); `earlier_rows`: each table as it was
    before (None: the dataset creates it), so the branch holds both; `added`: rows written
    per table. TableConfigError for a column a table lacks, key types that cannot be
    compared, or an expression that does not analyse to a boolean."""
    results = []
    for spec in config.checks:
        if spec.kind == FOREIGN_KEY:
            results.append(_foreign_key(spec, new_rows, earlier_rows, added))
        else:
            results.append(_row_count_relation(spark, spec, config, added))
    return results


def _foreign_key(
    spec: CheckSpec,
    new_rows: dict[str, DataFrame],
    earlier_rows: dict[str, DataFrame | None],
    added: dict[str, int],
) -> CheckResult:
    params = spec.params
    child_table, column = params["table"], params["column"]
    parent_table, parent_column = params["references_table"], params["references_column"]
    child_type = _column_type(new_rows[child_table], column, child_table, spec)
    parent_type = _column_type(new_rows[parent_table], parent_column, parent_table, spec)
    comparable = child_type == parent_type or (
        isinstance(child_type, NUMERIC) and isinstance(parent_type, NUMERIC)
    )
    if not comparable:
        raise TableConfigError(
            f"check {spec.name!r}: {child_table}.{column} is {child_type.simpleString()} "
            f"but {parent_table}.{parent_column} is {parent_type.simpleString()}"
        )
    keys = _keys(new_rows[child_table], column).where(F.col("key").isNotNull())
    if added.get(parent_table, 0):
        keys_left = keys.join(_keys(new_rows[parent_table], parent_column), "key", "left_anti")
    else:
        keys_left = keys
    earlier = earlier_rows.get(parent_table)
    if earlier is not None and parent_column.casefold() not in {
        name.casefold() for name in earlier.columns
    }:
        earlier = None  # the drop adds the column: no earlier row has a key
    orphans = keys_left if earlier is None else _not_in(keys_left, _keys(earlier, parent_column))
    count = orphans.count()
    samples = ()
    if count:
        top = (
            orphans.groupBy("key")
            .agg(F.count(F.lit(1)).alias("rows"))
            .orderBy(F.desc("rows"), F.asc("key"))
            .limit(SAMPLES)
            .collect()
        )
        samples = tuple({column: row["key"], "rows": row["rows"]} for row in top)
    return CheckResult(
        name=spec.name,
        kind=spec.kind,
        columns=(column,),
        severity=spec.severity,
        status=FAILED if count else PASSED,
        violations=count,
        threshold={"references": f"{parent_table}.{parent_column}"},
        observed=count,
        settled_by=SCAN,
        samples=samples,
        message=(
            f"{count} new {child_table} row(s) name a {column} that no "
            f"{parent_table} row has (main plus this dataset)"
        )
        if count
        else None,
    )


def _keys(frame: DataFrame, column: str) -> DataFrame:
    return frame.select(F.col(quote(column)).alias("key"))


def _not_in(keys: DataFrame, parents: DataFrame) -> DataFrame:
    """The rows of `keys` whose key `parents` lacks. While their distinct keys are few they
    are looked up by an IN filter, for which Iceberg can skip the data files whose key
    range holds none of them; many are anti-joined (a scan of every parent row)."""
    distinct = [
        row["key"] for row in keys.select("key").distinct().limit(LOOKUP_KEYS + 1).collect()
    ]
    if len(distinct) > LOOKUP_KEYS:
        return keys.join(parents, "key", "left_anti")
    found = (
        {row["key"] for row in parents.where(F.col("key").isin(distinct)).distinct().collect()}
        if distinct
        else set()
    )
    missing = [key for key in distinct if key not in found]
    return keys.where(F.col("key").isin(missing)) if missing else keys.limit(0)


def _row_count_relation(
    spark: SparkSession, spec: CheckSpec, config: DatasetConfig, added: dict[str, int]
) -> CheckResult:
    counts = {config.short_name(table): int(added.get(table, 0)) for table in config.tables}
    expression = spec.params["expression"]
    # A VALUES row is a local relation: evaluated on the driver, no Spark job (a frame
    # made by createDataFrame costs one, about 0.2 s). The names are identifiers (the
    # config's tables) and the values integers; the expression is parsed as one alone.
    values = ", ".join(f"{value}L" for value in counts.values())
    columns = ", ".join(map(quote, counts))
    row = spark.sql(f"SELECT * FROM VALUES ({values}) AS t({columns})")  # noqa: S608
    try:
        selected = row.select(F.expr(expression).alias("holds"))
        if not isinstance(selected.schema["holds"].dataType, T.BooleanType):
            raise TableConfigError(f"check {spec.name!r}: expression {expression!r} is not boolean")
        holds = selected.first()["holds"]
    except TableConfigError:
        raise
    except Exception as exc:
        raise TableConfigError(
            f"check {spec.name!r}: expression {expression!r} over the row counts "
            f"({', '.join(counts)}) does not analyse: {describe(exc)}"
        ) from exc
    return CheckResult(
        name=spec.name,
        kind=spec.kind,
        columns=(),
        severity=spec.severity,
        status=PASSED if holds else FAILED,
        violations=0 if holds else 1,
        threshold=expression,
        observed=counts,
        settled_by=SCAN,
        message=None if holds else f"{expression} does not hold for the rows added: {counts}",
    )


def _column_type(frame: DataFrame, column: str, table: str, spec: CheckSpec) -> T.DataType:
    fields = {field.name: field.dataType for field in frame.schema.fields}
    if column not in fields:
        raise TableConfigError(
            f"check {spec.name!r}: {table} has no column {column!r}; columns: {', '.join(fields)}"
        )
    return fields[column]
