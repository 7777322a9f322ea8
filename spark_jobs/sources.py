"""Find, vet and read the source files, turning every failure into a reason.

Cheap checks on the driver come first (exists, not empty, bytes that match the file's
format: a CSV renamed to `.parquet`, a parquet file named `.csv` fail here), then Spark
reads the parquet footers, and CSV / JSON Lines through `text_sources`.

The sources are staged copies the trigger has just made, so one that is missing or
cannot be listed or read is an infrastructure error; only what the bytes say (empty,
not parquet, a footer or schema that does not decode) rejects the input.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from contracts.formats import CSV, PARQUET, SNIFF_BYTES, content_problem
from spark_jobs import hadoop_fs
from spark_jobs.errors import InfrastructureError, InputRejectedError, as_job_error, describe
from spark_jobs.parquet_footer import named_columns
from spark_jobs.text_sources import (
    SourceReader,
    read_csv_strict,
    read_text,
    union_all,
)

PARQUET_READER = SourceReader()


def expand_sources(
    spark: SparkSession, uris: list[str], reader: SourceReader = PARQUET_READER
) -> list[hadoop_fs.FileInfo]:
    """Every data file under the source URIs (with its size), each vetted.

    InputRejectedError for a file whose bytes do not match its format; InfrastructureError
    when a source is missing, cannot be listed or read, or is a directory without files.
    """
    if not uris:
        raise InputRejectedError("no source given")
    files = []
    for uri in uris:
        try:
            found = hadoop_fs.list_files(spark, uri)
        except Exception as exc:  # FileNotFoundException and friends arrive via py4j
            raise as_job_error(exc, f"source {uri} cannot be listed: {describe(exc)}") from exc
        if not found:
            raise InfrastructureError(f"source {uri} contains no files")
        for info in found:
            _vet(spark, info, reader)
            files.append(info)
    return files


def read_sources(
    spark: SparkSession, files: list[str], reader: SourceReader = PARQUET_READER
) -> DataFrame:
    """The rows of `files` as one DataFrame: parquet schemas merged across files, text
    parsed to the reader's schema; with text sources, the frame carries `PARSE_ERROR`
    (text_sources.py)."""
    by_format = reader.by_format(files)
    parquet = by_format.pop(PARQUET, [])
    frames = [_read_parquet(spark, parquet)] if parquet else []
    if by_format:  # union_all leaves PARSE_ERROR null in parquet rows: they always parse
        frames.append(read_text(spark, reader, by_format))
    return union_all(frames)


def read_strict(
    spark: SparkSession, files: list[str], reader: SourceReader = PARQUET_READER
) -> DataFrame | None:
    """The rows of `files` for a write that stops at the first CSV row that does not
    parse (no `PARSE_ERROR` column); None unless every text source is CSV."""
    by_format = reader.by_format(files)
    parquet = by_format.pop(PARQUET, [])
    if set(by_format) != {CSV}:
        return None
    frames = [_read_parquet(spark, parquet)] if parquet else []
    frames += [read_csv_strict(spark, reader, uri) for uri in by_format[CSV]]
    return union_all(frames)


def _read_parquet(spark: SparkSession, files: list[str]) -> DataFrame:
    try:
        reader = spark.read.option("mergeSchema", "true") if len(files) > 1 else spark.read
        frame = reader.parquet(*(hadoop_fs.literal_path(uri) for uri in files))
        schema = frame.schema  # forces the footer read here, where errors get a reason
    except Exception as exc:
        raise as_job_error(
            exc,
            f"cannot read the parquet footer/schema of {', '.join(files)}: "
            f"{describe(exc)}{named_columns(spark, exc, files)}",
        ) from exc
    if not schema.fields:  # Spark reads it, then fails deep in the write or CREATE TABLE
        raise InputRejectedError(
            f"{', '.join(files)} has no columns: there is nothing to "
            "write (a parquet file with a schema but no fields)"
        )
    return frame


def _vet(spark: SparkSession, info: hadoop_fs.FileInfo, reader: SourceReader) -> None:
    """The rule the trigger applies too (contracts/formats.py), on the staged bytes."""
    if info.size == 0:
        raise InputRejectedError(f"source {info.uri} is empty (0 bytes)")
    fmt = reader.format(info.uri)
    try:
        head = hadoop_fs.read_range(spark, info.uri, 0, min(info.size, SNIFF_BYTES))
        tail = hadoop_fs.read_range(spark, info.uri, max(info.size - 4, 0), min(info.size, 4))
    except Exception as exc:
        raise as_job_error(exc, f"source {info.uri} cannot be read: {describe(exc)}") from exc
    problem = content_problem(info.uri, fmt, head, tail, info.size)
    if problem:
        raise InputRejectedError(problem)
