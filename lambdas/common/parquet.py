"""The parquet check made before any Spark runs: a parquet file starts and ends with `PAR1`.

One definition for the trigger and the `wap` tools (the job, which runs alone on EMR,
checks the same bytes in spark_jobs/hadoop_fs.py)."""

from __future__ import annotations

PARQUET_MAGIC = b"PAR1"
# Magic, a 4-byte footer length and the magic again: nothing shorter can be parquet.
MIN_PARQUET_BYTES = 12


def magic_bytes_problem(name: str, head: bytes, tail: bytes, size: int | None) -> str | None:
    """Why `name` (its first and last 4 bytes, its size) is not a parquet file, or None."""
    if len(head) < 4 or len(tail) < 4 or (size is not None and size < MIN_PARQUET_BYTES):
        return f"not a parquet file: {name} is too short to hold a parquet footer"
    if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        return (f"not a parquet file: {name} does not start and end with the parquet magic "
                "bytes PAR1 (is it a CSV or another format renamed .parquet?)")
    return None
