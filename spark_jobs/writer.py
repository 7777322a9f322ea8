"""Write one ingest to the branch: namespace, table, schema changes, one append.

Everything here runs against the per-run catalog, so every commit lands on the
run's Nessie branch; main never sees a table that only a failed ingest created.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import types as T

from contracts.properties import INGEST_ID_PROPERTY, SOURCE_PROPERTY
from contracts.table_config import ColumnSpec, PartitionField
from spark_jobs.errors import (
    InputRejectedError,
    SchemaPolicyError,
    TableConfigError,
    as_job_error,
    classify,
    describe,
    not_null_column,
    with_hint,
)
from spark_jobs.identifiers import quote, quote_parts
from spark_jobs.jvm import java_map
from spark_jobs.metrics import load_iceberg_table
from spark_jobs.parquet_footer import named_columns
from spark_jobs.schema_policy import SchemaPlan
from spark_jobs.text_sources import (
    LINE_BREAK_TEXT,
    PARSE_ERROR,
    REPLACED_TEXT,
    data_schema,
    has_parse_errors_column,
    is_malformed_row,
    line_break_count,
    parse_error_count,
    parsed_rows,
    replaced_text_count,
)

MAX_SOURCE_PROPERTY = 2000
OBSERVATION_TIMEOUT_S = 30.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatalogTable:
    """`catalog.namespace.table`, each part already validated."""

    catalog: str
    namespace: str
    table: str

    @property
    def sql(self) -> str:
        """The quoted name for SQL and DataFrame APIs."""
        return quote_parts(self.catalog, self.namespace, self.table)


class RowSplit(Protocol):
    """How a write divides its rows between the table and a table beside it
    (`spark_jobs.quarantine.Split`, which imports this module)."""

    parse_errors: str | None  # set when rows that do not parse go beside the table

    def flag(self, frame: DataFrame, projection: list[Column]) -> DataFrame:
        """The rows shaped by `projection`, each marked with its side."""

    def published(self, flagged: DataFrame, observation: Observation) -> DataFrame:
        """The rows that go to the table, counting the others into `observation`."""

    def set_aside(
        self, spark: SparkSession, observed: dict | None, flagged: DataFrame, target: T.StructType
    ) -> None:
        """After the table's write: count the other rows, write them beside the table."""


@dataclass
class AppendResult:
    """The snapshot holding this ingest's rows (and the Java table it was read from)."""

    table: object
    snapshot_id: int
    parent_id: int | None
    rows_written: int
    reused: bool
    observed: dict | None = None
    observe_wait_s: float = 0.0
    # Rows of text sources that did not parse (not written), counted by the write
    # itself; None for parquet sources, or when the count did not arrive.
    parse_errors: int | None = None
    # True when a written text value holds U+FFFD, what Spark puts in place of bytes
    # invalid in the declared encoding (or the file's own U+FFFD): the run then checks
    # the files' bytes (text_sources.encoding_error). Unknown counts as seen.
    replaced_text: bool = False
    # True when a text value (or an unparsable row's text) holds a line break: only then
    # can a quoted value never closed have taken in the lines after it, and the run
    # scans its CSVs (text_sources.unclosed_quote_error). Unknown counts as seen.
    line_breaks: bool = False


def load_table(spark: SparkSession, ref: CatalogTable):
    """The Java Iceberg table on the run's branch, None when it does not exist there."""
    if not spark.catalog.tableExists(ref.sql):
        return None
    return load_iceberg_table(spark, ref.sql)


def spark_schema(spark: SparkSession, table) -> T.StructType:
    """The Java table's schema as Spark sees it (required columns non-nullable)."""
    converted = spark._jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(table.schema())
    return T.StructType.fromJson(json.loads(converted.json()))


def declared_schema(spark: SparkSession, columns: tuple[ColumnSpec, ...]) -> T.StructType:
    """The config's `schema:` entries as a StructType; TableConfigError for unknown types."""
    from pyspark.sql.types import _parse_datatype_string

    fields = []
    for column in columns:
        try:
            type_ = _parse_datatype_string(column.type)
        except Exception as exc:
            raise TableConfigError(
                f"schema column {column.name!r}: unknown type {column.type!r}"
            ) from exc
        fields.append(T.StructField(column.name, type_, not column.required))
    return T.StructType(fields)


def check_iceberg_types(spark: SparkSession, schema: T.StructType) -> None:
    """Raise SchemaPolicyError for columns an Iceberg table cannot store (e.g. void)."""
    jvm = spark._jvm
    try:  # one call for the common case; field by field only to name the culprit
        jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(
            jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
        )
        return
    except Exception:  # noqa: S110 - the loop below raises the readable error
        pass
    for field in schema.fields:
        try:
            jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(
                jvm.org.apache.spark.sql.types.DataType.fromJson(T.StructType([field]).json())
            )
        except Exception as exc:
            raise SchemaPolicyError(
                f"column {field.name!r} has type {field.dataType.simpleString()}, which an "
                f"Iceberg table cannot store: {describe(exc)}"
            ) from exc


def check_partitioning(partition_by: tuple[PartitionField, ...], schema: T.StructType) -> None:
    """TableConfigError when a partition column is not in the table."""
    names = {f.name for f in schema.fields}
    for part in partition_by:
        if part.column not in names:
            raise TableConfigError(f"partition_by: column {part.column!r} is not in the table")


def create_namespace(spark: SparkSession, ref: CatalogTable) -> None:
    """`CREATE NAMESPACE IF NOT EXISTS` for the table's namespace on the run's branch."""
    namespace = quote_parts(ref.catalog, ref.namespace)
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    except Exception as exc:
        raise as_job_error(
            exc, f"cannot create namespace {ref.namespace}: {describe(exc)}", TableConfigError
        ) from exc


def prepare_table(
    spark: SparkSession,
    ref: CatalogTable,
    plan: SchemaPlan,
    partition_by: tuple[PartitionField, ...],
) -> None:
    """Create the namespace and table on the branch when missing, then evolve the schema.

    TableConfigError / SchemaPolicyError when Iceberg refuses what the config or the file
    asks for; InfrastructureError when the catalog or storage fails.
    """
    if plan.create:
        create_namespace(spark, ref)
        columns = ", ".join(
            f"{quote(f.name)} {sql_type(spark, f.dataType)}" + ("" if f.nullable else " NOT NULL")
            for f in plan.target.fields
        )
        partitioning = ""
        if partition_by:
            partitioning = (
                " PARTITIONED BY (" + ", ".join(_partition_sql(part) for part in partition_by) + ")"
            )
        try:
            spark.sql(
                f"CREATE TABLE {ref.sql} ({columns}) USING iceberg{partitioning} "
                "TBLPROPERTIES ('format-version' = '2')"
            )
        except Exception as exc:
            raise as_job_error(
                exc,
                f"cannot create table {ref.namespace}.{ref.table}: {describe(exc)}",
                TableConfigError,
            ) from exc
        return
    for change in plan.changes:
        column = quote(change["column"])
        statement = None
        if change["change"] == "add_column":
            type_ = sql_type(spark, plan.target[change["column"]].dataType)
            statement = f"ALTER TABLE {ref.sql} ADD COLUMNS ({column} {type_})"
        elif change["change"] == "widen_type":
            type_ = sql_type(spark, plan.target[change["column"]].dataType)
            statement = f"ALTER TABLE {ref.sql} ALTER COLUMN {column} TYPE {type_}"
        elif change["change"] == "make_optional":
            statement = f"ALTER TABLE {ref.sql} ALTER COLUMN {column} DROP NOT NULL"
        if statement is None:
            continue
        try:
            spark.sql(statement)
        except Exception as exc:
            raise as_job_error(
                exc,
                f"cannot {change['change'].replace('_', ' ')} "
                f"{change['column']!r}: {describe(exc)}",
                SchemaPolicyError,
            ) from exc


def find_ingest_snapshot(table, ingest_id: str) -> AppendResult | None:
    """The snapshot a previous run of this ingest appended in the table's history."""
    snapshot = table.currentSnapshot()
    while snapshot is not None:
        if snapshot.summary().get(INGEST_ID_PROPERTY) == ingest_id:
            return _result(snapshot, table, reused=True)
        parent = snapshot.parentId()
        snapshot = table.snapshot(parent) if parent is not None else None
    return None


def rows_added(spark: SparkSession, ref: CatalogTable, written) -> DataFrame:
    """The rows the write's snapshot added to the table (incremental read of it)."""
    reader = spark.read.format("iceberg")
    if written.parent_id is None:
        reader = reader.option("snapshot-id", written.snapshot_id)
    else:
        reader = reader.option("start-snapshot-id", written.parent_id).option(
            "end-snapshot-id", written.snapshot_id
        )
    return reader.load(ref.sql)


def append(
    spark: SparkSession,
    ref: CatalogTable,
    frame: DataFrame,
    plan: SchemaPlan,
    ingest_id: str,
    sources: list[str],
    observe: list[Column] | None = None,
    recorded: list[str] | None = None,
    strict: DataFrame | None = None,
    split: RowSplit | None = None,
) -> AppendResult:
    """Append the file rows shaped for the table; the snapshot is stamped with the ingest
    and `recorded` (default: `sources`), the objects it came from, as `wap.source`.

    `observe`: aggregates Spark computes over the rows as they are written (no extra
    read); their values land in `AppendResult.observed`. `strict`: the same rows read to
    fail at the first row that does not parse; written first, and `frame` (which counts
    such rows) only when one does not. `split`: rows failing a quarantine check go to the
    quarantine table instead (spark_jobs/quarantine.py; `split.counts` says how many).
    """
    if strict is not None and (split is None or split.parse_errors is None):
        # Clean CSV, the common case: no corrupt-record bookkeeping. (When unparsable
        # rows are quarantined, their text is needed: read with it from the start.)
        try:
            found = _write(
                spark, ref, strict, plan, ingest_id, sources, observe, recorded, True, split
            )  # text: positional, as tests spy on _write's arguments
            found.parse_errors = 0
            return found
        except Exception as exc:
            if not is_malformed_row(exc):
                raise
            log.info("a row does not parse: writing again, counting such rows")
    return _write(spark, ref, frame, plan, ingest_id, sources, observe, recorded, False, split)


def _write(
    spark: SparkSession,
    ref: CatalogTable,
    frame: DataFrame,
    plan: SchemaPlan,
    ingest_id: str,
    sources: list[str],
    observe: list[Column] | None,
    recorded: list[str] | None,
    text: bool = False,
    split: RowSplit | None = None,
) -> AppendResult:
    counted = None
    parse_errors = has_parse_errors_column(frame)
    if parse_errors or text:  # counted as they stream by (unparsable rows: left out)
        # Named per table: a multi-table dataset writes its tables side by side.
        counted = Observation(f"wap_parse_{ingest_id}:{ref.namespace}.{ref.table}")
        frame = frame.observe(
            counted,
            *([parse_error_count().alias(PARSE_ERROR)] if parse_errors else []),
            replaced_text_count(frame).alias(REPLACED_TEXT),
            line_break_count(frame).alias(LINE_BREAK_TEXT),
        )
    flagged = set_aside = None
    if split is not None:  # each row's failed quarantine checks, computed once
        flagged = split.flag(frame, plan.projection(data_schema(frame)))
        set_aside = Observation(f"wap_quarantine_{ingest_id}:{ref.namespace}.{ref.table}")
        shaped = split.published(flagged, set_aside, plan.target)
    else:
        shaped = parsed_rows(frame).select(*plan.projection(data_schema(frame)))
    observation = None
    if observe:
        observation = Observation(f"wap_audit_{ingest_id}:{ref.namespace}.{ref.table}")
        shaped = shaped.observe(observation, *observe)
    found = _append_rows(
        spark, ref, shaped, sources, ingest_id, recorded, counted, observation, parse_errors
    )
    if split is not None:  # then the rows set aside, when the write counted any
        split.set_aside(spark, _observed_values(set_aside), flagged, plan.target)
    return found


def _append_rows(
    spark: SparkSession,
    ref: CatalogTable,
    shaped: DataFrame,
    sources: list[str],
    ingest_id: str,
    recorded: list[str] | None,
    counted: Observation | None,
    observation: Observation | None,
    parse_errors: bool,
) -> AppendResult:
    """Append `shaped` to the table; the snapshot found, with what the write observed."""
    try:
        (
            shaped.writeTo(ref.sql)
            .option(f"snapshot-property.{INGEST_ID_PROPERTY}", ingest_id)
            .option(
                f"snapshot-property.{SOURCE_PROPERTY}",
                ",".join(recorded or sources)[:MAX_SOURCE_PROPERTY],
            )
            .append()
        )
    except Exception as exc:
        verdict = classify(exc)
        if verdict.is_input:
            raise InputRejectedError(
                with_hint(
                    f"the rows could not be written: {_write_reason(exc, not_null_column(verdict))}"
                    f"{named_columns(spark, exc, sources)}",
                    verdict,
                )
            ) from exc
        raise as_job_error(exc, f"the rows could not be written: {describe(exc)}") from exc
    found = find_ingest_snapshot(load_iceberg_table(spark, ref.sql), ingest_id)
    if found is None:
        raise RuntimeError(
            f"append committed but no snapshot carries {INGEST_ID_PROPERTY}={ingest_id}"
        )
    found.reused = False
    if counted is not None:
        values = _observed_values(counted)
        if parse_errors:
            found.parse_errors = None if values is None else int(values[PARSE_ERROR])
        found.replaced_text = values is None or bool(values[REPLACED_TEXT])
        found.line_breaks = values is None or bool(values[LINE_BREAK_TEXT])
    if observation is not None:
        started = time.perf_counter()
        found.observed = _observed_values(observation)
        found.observe_wait_s = round(time.perf_counter() - started, 3)
    return found


def _observed_values(
    observation: Observation, timeout_s: float = OBSERVATION_TIMEOUT_S
) -> dict | None:
    """The observed metrics, or None when they cannot be had (then the audit scans).

    Spark hands them over from its listener bus thread, slightly after the write
    returns, and `Observation.get` would wait forever if they never came; so poll the
    (private) `metrics` option first and call `get` only once it is set.
    """
    try:
        field = observation._jo.getClass().getDeclaredField("metrics")
        field.setAccessible(True)
        deadline = time.monotonic() + timeout_s
        while not field.get(observation._jo).isDefined():
            if time.monotonic() > deadline:
                log.warning("metrics observed during the write did not arrive in %ss", timeout_s)
                return None
            time.sleep(0.01)
        return java_map(observation._jo.getAsJava())
    except Exception:
        log.exception("cannot read the metrics observed during the write")
        return None


def _result(snapshot, table, reused: bool) -> AppendResult:
    return AppendResult(
        table=table,
        snapshot_id=int(snapshot.snapshotId()),
        parent_id=None if snapshot.parentId() is None else int(snapshot.parentId()),
        rows_written=int(snapshot.summary().get("added-records") or 0),
        reused=reused,
    )


def _write_reason(exc: BaseException, null_column: str | None) -> str:
    text = describe(exc)
    if null_column is not None:
        return f"required column {null_column!r} has null values ({text})"
    return text


def sql_type(spark: SparkSession, data_type: T.DataType) -> str:
    # The JVM renders nested field names quoted (`STRUCT<`my col`: INT>`).
    return spark._jvm.org.apache.spark.sql.types.DataType.fromJson(data_type.json()).sql()


def _partition_sql(part: PartitionField) -> str:
    column = quote(part.column)
    if part.transform == "identity":
        return column
    if part.arg is not None:
        return f"{part.transform}({part.arg}, {column})"
    return f"{part.transform}s({column})"
