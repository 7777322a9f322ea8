"""Profiling sample files for `wap suggest` with Spark: read them as the job would, then
count (the profile it makes: wap/ops/profile.py).

The files are read by the job's own readers (spark_jobs/sources.py, text_sources.py) with
the table config's `format:`, `csv:` and `parse:`, so the profile sees the rows and types
a drop of these files would write. Text sources need declared types (the job infers
nothing): without a `schema:` in the config, Spark's inference over the same files, with
the same CSV options, proposes them (`int` widened to `bigint`, `float` to `double`, so
that a later file with larger values still parses), and the job's reader then reads the
files with that schema and counts what does not parse, as the job would.

One aggregation pass counts every column (non-null and distinct values, min and max); a
second collects the values of the string columns with at most MAX_VALUES distinct ones.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from contracts import timestamps
from contracts.formats import CSV, JSONL, PARQUET
from contracts.table_config import TableConfig
from spark_jobs import hadoop_fs
from spark_jobs.errors import InputRejectedError, TableConfigError, WapJobError, describe
from spark_jobs.identifiers import quote
from spark_jobs.sources import expand_sources, read_sources
from spark_jobs.text_sources import (
    PARSE_ERROR,
    SourceReader,
    check_parse_options,
    csv_read_options,
    damaged_text_error,
    data_schema,
    datetime_options,
    every_column,
    has_parse_errors_column,
)
from spark_jobs.writer import declared_schema
from wap.exceptions import InvalidInputError, OpsError
from wap.ops.profile import MAX_VALUES, ColumnProfile, Profile

# The session's `lake` catalog is configured like the job's but never used here.
UNUSED_NESSIE = "http://127.0.0.1:9/api/v2"
# The column Spark's JSON inference adds for lines that are not JSON (the job's reader
# counts those lines as parse errors instead).
CORRUPT_RECORD = "_corrupt_record"
INTEGERS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
NUMBERS = (*INTEGERS, T.FloatType, T.DoubleType, T.DecimalType)
ORDERED = (*NUMBERS, T.DateType, T.TimestampType, T.TimestampNTZType)
COUNTED = (*ORDERED, T.StringType, T.BooleanType, T.BinaryType)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@contextmanager
def sample_session() -> Iterator[SparkSession]:
    """A local SparkSession with the job's conf (its session time zone, its Iceberg jar):
    the one lent to the CLI by tests (`wap.ops.backends.SPARK_SESSION`), the process's
    running one as it is, or a new one whose JVM output goes to the command's log (stopped
    after)."""
    from pyspark import SparkContext

    from local.spark import build_local_spark
    from wap.ops import backends
    from wap.runtime import command_log

    if backends.SPARK_SESSION is not None:
        yield backends.SPARK_SESSION
        return
    if SparkContext._active_spark_context is not None:
        # Not through the builder with our conf: that would set it on the running session
        # (its `lake` catalog pointed at nothing).
        yield SparkSession.builder.getOrCreate()
        return
    log = command_log.active()
    spark = build_local_spark(
        Path(tempfile.gettempdir()).as_uri(),
        UNUSED_NESSIE,
        app_name="wap-suggest",
        jvm_output=log.jvm_output() if log is not None else None,
    )
    try:
        yield spark
    finally:
        spark.stop()


def profile_files(spark: SparkSession, paths: Sequence[Path], config: TableConfig) -> Profile:
    """Read `paths` as a drop of them would be read under `config`, and profile the rows
    that parse. InvalidInputError when the job would refuse a file or the config's reading
    options (its message), or when no row parses; OpsError when Spark fails otherwise."""
    uris = [path.resolve().as_uri() for path in paths]
    names = ", ".join(path.name for path in paths)
    reader = SourceReader(
        configured=config.format,
        csv=config.csv,
        parse=config.parse,
        table="the sample",
        config_name="the config (--config)",
    )
    try:
        check_parse_options(spark, config.parse)
        expand_sources(spark, uris, reader)  # the job's checks of each file's bytes
        schema, inferred = _text_schema(spark, reader, uris, config)
        frame = read_sources(spark, uris, replace(reader, schema=schema))
        required = {column.name for column in config.columns if column.required}
        profile = _profile(frame, tuple(uris), inferred, required)
    except (InputRejectedError, TableConfigError) as exc:
        raise InvalidInputError(str(exc)) from exc
    except WapJobError as exc:
        raise OpsError(f"cannot read {names}: {exc}") from exc
    except Exception as exc:  # a Spark failure in the profile's own queries
        # A gzip stream cut short fails in Hadoop's words: say where, as the job does.
        damaged = damaged_text_error(spark, reader, uris)
        if damaged is not None:
            raise InvalidInputError(str(damaged)) from exc
        raise OpsError(f"cannot read {names}: {describe(exc)}") from exc
    if profile.rows == 0:
        why = f" ({profile.parse_errors:,} row(s) did not parse)" if profile.parse_errors else ""
        raise InvalidInputError(f"{names}: no rows to profile{why}")
    return profile


def _text_schema(
    spark: SparkSession, reader: SourceReader, uris: list[str], config: TableConfig
) -> tuple[T.StructType | None, bool]:
    """The types text values parse to: the config's `schema:`, else inferred from the text
    files (columns parquet files of the sample also hold keep the parquet type, so that
    the files line up as in one drop). (None, False) when no file is text."""
    if config.columns:
        return declared_schema(spark, config.columns), False
    by_format = reader.by_format(uris)
    if set(by_format) <= {PARQUET}:
        return None, False
    fields: list[T.StructField] = []
    for kind in (CSV, JSONL):
        for found in _inferred(spark, reader, kind, by_format.get(kind, [])):
            fields = _merged(fields, found)
    if PARQUET in by_format:
        fixed = list(read_sources(spark, by_format[PARQUET], reader).schema.fields)
        have = {f.name.casefold() for f in fixed}
        fields = fixed + [f for f in fields if f.name.casefold() not in have]
    return T.StructType(fields), True


def _inferred(
    spark: SparkSession, reader: SourceReader, kind: str, uris: list[str]
) -> list[T.StructField]:
    if not uris:
        return []
    paths = [hadoop_fs.literal_path(uri) for uri in uris]
    if kind == CSV:
        options = {**csv_read_options(reader.csv, reader.parse), "inferSchema": "true"}
        schema = spark.read.options(**options).csv(paths).schema
        fields = list(schema.fields)
    else:
        options = {"inferTimestamp": "true", **datetime_options(reader.parse)}
        schema = spark.read.options(**options).json(paths).schema
        first = _first_keys(spark, paths)
        fields = sorted(
            (f for f in schema.fields if f.name != CORRUPT_RECORD),
            key=lambda f: (first.index(f.name) if f.name in first else len(first), f.name),
        )
        if reader.parse.timestamp_format is None:
            fields = _dates(spark, paths, fields)
    return [T.StructField(f.name, _widened(f.dataType), True) for f in fields]


def _dates(
    spark: SparkSession, paths: list[str], fields: list[T.StructField]
) -> list[T.StructField]:
    """JSON has no dates, and Spark infers `2026-11-25` as a timestamp: a timestamp column
    whose every value is a date alone is typed `date`."""
    stamps = [f.name for f in fields if isinstance(f.dataType, T.TimestampType)]
    if not stamps:
        return fields
    raw = F.from_json(
        F.col("value"), T.StructType([T.StructField(name, T.StringType()) for name in stamps])
    )
    lines = spark.read.text(paths).where(F.trim(F.col("value")) != "").select(raw.alias("r"))
    counts = lines.agg(
        *(
            F.count_if(~F.col("r").getField(name).rlike(r"^\d{4}-\d{2}-\d{2}$")).alias(f"t{i}")
            for i, name in enumerate(stamps)
        )
    ).collect()[0]
    dates = {name for i, name in enumerate(stamps) if counts[f"t{i}"] == 0}
    return [T.StructField(f.name, T.DateType(), True) if f.name in dates else f for f in fields]


def _first_keys(spark: SparkSession, paths: list[str]) -> list[str]:
    """The keys of the first JSON object, in their order (Spark's inference sorts them)."""
    lines = spark.read.text(paths[0]).where(F.trim(F.col("value")) != "").limit(1).collect()
    try:
        first = json.loads(lines[0]["value"]) if lines else {}
    except ValueError:
        return []
    return list(first) if isinstance(first, dict) else []


def _widened(data_type: T.DataType) -> T.DataType:
    """An inferred type that also holds a later file's larger values."""
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType)):
        return T.LongType()
    if isinstance(data_type, T.FloatType):
        return T.DoubleType()
    return data_type


def _merged(fields: list[T.StructField], new: T.StructField) -> list[T.StructField]:
    """`fields` with `new` added, or the same column (by name, any case) typed to hold both
    (two kinds of number: the wider number; anything else: string)."""
    for i, field in enumerate(fields):
        if field.name.casefold() != new.name.casefold():
            continue
        if field.dataType == new.dataType:
            return fields
        if _is_number(field) and _is_number(new):
            integers = isinstance(field.dataType, INTEGERS) and isinstance(new.dataType, INTEGERS)
            wider = T.LongType() if integers else T.DoubleType()
        else:
            wider = T.StringType()
        return [*fields[:i], T.StructField(field.name, wider, True), *fields[i + 1 :]]
    return [*fields, new]


def _is_number(field: T.StructField) -> bool:
    return isinstance(field.dataType, NUMBERS)


def _profile(
    frame: DataFrame, files: tuple[str, ...], inferred: bool, required: set[str]
) -> Profile:
    """One aggregation over every column (the rows that did not parse counted apart), then
    one collecting the few values of low-cardinality string columns."""
    text = has_parse_errors_column(frame)
    parsed = F.col(PARSE_ERROR).isNull() if text else F.lit(True)
    fields = data_schema(frame).fields
    aggregates = [F.count_if(parsed).alias("rows")]
    if text:  # reads (and so parses) every column, as the job's write does
        aggregates += [F.count_if(~parsed).alias("bad"), every_column(frame).alias("every")]
    for i, field in enumerate(fields):
        value = F.when(parsed, F.col(quote(field.name)))
        aggregates.append(F.count(value).alias(f"n{i}"))
        if isinstance(field.dataType, COUNTED):
            aggregates.append(F.count_distinct(value).alias(f"d{i}"))
        if isinstance(field.dataType, ORDERED):
            aggregates += [_bound(F.min(value), field).alias(f"lo{i}")]
            aggregates += [_bound(F.max(value), field).alias(f"hi{i}")]
        if isinstance(field.dataType, (T.FloatType, T.DoubleType)):
            aggregates.append(F.count_if(parsed & F.isnan(F.col(quote(field.name)))).alias(f"x{i}"))
    row = frame.agg(*aggregates).collect()[0].asDict()
    rows = row["rows"]
    few = [
        field.name
        for i, field in enumerate(fields)
        if isinstance(field.dataType, T.StringType) and 0 < row[f"d{i}"] <= MAX_VALUES
    ]
    values = _few_values(frame.where(parsed), few)
    columns = tuple(
        ColumnProfile(
            name=field.name,
            type=field.dataType.simpleString(),
            nulls=rows - row[f"n{i}"],
            distinct=row.get(f"d{i}"),
            minimum=_python(row.get(f"lo{i}"), field),
            maximum=_python(row.get(f"hi{i}"), field),
            nan=row.get(f"x{i}", 0),
            values=values.get(field.name),
            required=field.name in required,
        )
        for i, field in enumerate(fields)
    )
    return Profile(files, rows, columns, row.get("bad", 0), inferred)


def _bound(value: Column, field: T.StructField) -> Column:
    """A min/max as it leaves Spark unchanged: a timestamp as microseconds since the epoch
    (a collected timestamp would be converted to this machine's zone), one without a zone
    as its text."""
    if isinstance(field.dataType, T.TimestampType):
        return F.unix_micros(value)
    if isinstance(field.dataType, T.TimestampNTZType):
        return value.cast("string")
    return value


def _python(value: Any, field: T.StructField) -> Any:
    if value is None:
        return None
    if isinstance(field.dataType, T.TimestampType):
        return EPOCH + timedelta(microseconds=value)
    if isinstance(field.dataType, T.TimestampNTZType):
        return timestamps.parse_datetime(value)
    return value


def _few_values(frame: DataFrame, names: list[str]) -> dict[str, tuple[Any, ...]]:
    if not names:
        return {}
    sets = [F.array_sort(F.collect_set(F.col(quote(name)))) for name in names]
    row = frame.agg(*(values.alias(f"v{i}") for i, values in enumerate(sets))).collect()[0]
    return {name: tuple(row[f"v{i}"]) for i, name in enumerate(names)}
