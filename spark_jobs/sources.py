"""Find, vet and read the source parquet files, turning every failure into a reason.

Cheap checks on the driver come first (exists, not empty, parquet magic at both
ends: a CSV renamed to `.parquet` fails here), then Spark reads the footers.

The sources are staged copies the trigger has just made, so one that is missing or
cannot be listed or read is an infrastructure error; only what the bytes say (empty,
not parquet, a footer or schema that does not decode) rejects the input.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from spark_jobs import hadoop_fs
from spark_jobs.errors import InfrastructureError, InputRejectedError, as_job_error, describe
from spark_jobs.parquet_footer import named_columns

MAGIC = hadoop_fs.PARQUET_MAGIC
# Smallest possible parquet file: magic + footer length (4) + magic.
MIN_PARQUET_SIZE = 12


def expand_sources(spark: SparkSession, uris: list[str]) -> list[hadoop_fs.FileInfo]:
    """Every data file under the source URIs (with its size), each vetted.

    InputRejectedError for a file that is not parquet; InfrastructureError when a
    source is missing, cannot be listed or read, or is a directory without files.
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
            _vet(spark, info)
            files.append(info)
    return files


def read_sources(spark: SparkSession, files: list[str]) -> DataFrame:
    """The rows of `files` as one DataFrame, schemas merged across files."""
    try:
        reader = spark.read.option("mergeSchema", "true") if len(files) > 1 else spark.read
        frame = reader.parquet(*(hadoop_fs.literal_path(uri) for uri in files))
        schema = frame.schema  # forces the footer read here, where errors get a reason
    except Exception as exc:
        raise as_job_error(exc, f"cannot read the parquet footer/schema of {', '.join(files)}: "
                                f"{describe(exc)}{named_columns(spark, exc, files)}") from exc
    if not schema.fields:  # Spark reads it, then fails deep in the write or CREATE TABLE
        raise InputRejectedError(f"{', '.join(files)} has no columns: there is nothing to "
                                 "write (a parquet file with a schema but no fields)")
    return frame


def _vet(spark: SparkSession, info: hadoop_fs.FileInfo) -> None:
    if info.size == 0:
        raise InputRejectedError(f"source {info.uri} is empty (0 bytes)")
    if info.size < MIN_PARQUET_SIZE:
        raise InputRejectedError(f"source {info.uri} is not a parquet file "
                                 f"(only {info.size} bytes)")
    try:
        head = hadoop_fs.read_range(spark, info.uri, 0, 4)
        tail = hadoop_fs.read_range(spark, info.uri, info.size - 4, 4)
    except Exception as exc:
        raise as_job_error(exc, f"source {info.uri} cannot be read: {describe(exc)}") from exc
    if head != MAGIC or tail != MAGIC:
        hint = " (it looks like text, e.g. CSV or JSON)" if _looks_like_text(head) else ""
        raise InputRejectedError(f"source {info.uri} is not a parquet file: it does not start "
                                 f"and end with the parquet magic bytes PAR1{hint}")


def _looks_like_text(data: bytes) -> bool:
    return bool(data) and all(32 <= b < 127 or b in (9, 10, 13) for b in data)
