"""Checks between the tables of a multi-table dataset (issue 27), on its branch after every
table was written: `foreign_key` (each new child key is a parent key on the branch, i.e.
main plus this dataset) and `row_count_relation` (a boolean expression over the rows the
dataset adds to each table, e.g. `order_items >= orders`)."""

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
NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)


def evaluate_relations(spark: SparkSession, config: DatasetConfig,
                       new_rows: dict[str, DataFrame], branch_rows: dict[str, DataFrame],
                       added: dict[str, int]) -> list[CheckResult]:
    """The dataset's checks in config order. `new_rows`: each table's rows this dataset
    wrote; `branch_rows`: each table on the branch; `added`: rows written per table.
    TableConfigError for a column a table lacks, key types that cannot be compared, or an
    expression that does not analyse to a boolean."""
    results = []
    for spec in config.checks:
        if spec.kind == FOREIGN_KEY:
            results.append(_foreign_key(spec, new_rows, branch_rows))
        else:
            results.append(_row_count_relation(spark, spec, config, added))
    return results


def _foreign_key(spec: CheckSpec, new_rows: dict[str, DataFrame],
                 branch_rows: dict[str, DataFrame]) -> CheckResult:
    params = spec.params
    child_table, column = params["table"], params["column"]
    parent_table, parent_column = params["references_table"], params["references_column"]
    child_type = _column_type(new_rows[child_table], column, child_table, spec)
    parent_type = _column_type(branch_rows[parent_table], parent_column, parent_table, spec)
    comparable = child_type == parent_type or (isinstance(child_type, NUMERIC)
                                               and isinstance(parent_type, NUMERIC))
    if not comparable:
        raise TableConfigError(
            f"check {spec.name!r}: {child_table}.{column} is {child_type.simpleString()} "
            f"but {parent_table}.{parent_column} is {parent_type.simpleString()}")
    keys = new_rows[child_table].select(F.col(quote(column)).alias("key")).where(
        F.col("key").isNotNull())
    parents = branch_rows[parent_table].select(F.col(quote(parent_column)).alias("key"))
    orphans = keys.join(parents, on="key", how="left_anti")
    count = orphans.count()
    samples = ()
    if count:
        top = (orphans.groupBy("key").agg(F.count(F.lit(1)).alias("rows"))
               .orderBy(F.desc("rows"), F.asc("key")).limit(SAMPLES).collect())
        samples = tuple({column: row["key"], "rows": row["rows"]} for row in top)
    return CheckResult(
        name=spec.name, kind=spec.kind, columns=(column,), severity=spec.severity,
        status=FAILED if count else PASSED, violations=count,
        threshold={"references": f"{parent_table}.{parent_column}"}, observed=count,
        settled_by=SCAN, samples=samples,
        message=(f"{count} new {child_table} row(s) name a {column} that no "
                 f"{parent_table} row has (main plus this dataset)") if count else None)


def _row_count_relation(spark: SparkSession, spec: CheckSpec, config: DatasetConfig,
                        added: dict[str, int]) -> CheckResult:
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
            raise TableConfigError(f"check {spec.name!r}: expression {expression!r} is not "
                                   "boolean")
        holds = selected.first()["holds"]
    except TableConfigError:
        raise
    except Exception as exc:
        raise TableConfigError(
            f"check {spec.name!r}: expression {expression!r} over the row counts "
            f"({', '.join(counts)}) does not analyse: {describe(exc)}") from exc
    return CheckResult(
        name=spec.name, kind=spec.kind, columns=(), severity=spec.severity,
        status=PASSED if holds else FAILED, violations=0 if holds else 1,
        threshold=expression, observed=counts, settled_by=SCAN,
        message=None if holds else f"{expression} does not hold for the rows added: {counts}")


def _column_type(frame: DataFrame, column: str, table: str, spec: CheckSpec) -> T.DataType:
    fields = {field.name: field.dataType for field in frame.schema.fields}
    if column not in fields:
        raise TableConfigError(f"check {spec.name!r}: {table} has no column {column!r}; "
                               f"columns: {', '.join(fields)}")
    return fields[column]
