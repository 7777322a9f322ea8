"""A run that reuses the snapshot its ingest already appended on the branch (its first
run's report was lost, the job was retried) judges the sources' bytes as that first run
did, so a file the first run rejected is never published by the second.

The first run learns of bad text bytes while writing (a gzip stream that ends early fails
the write; U+FFFD in a written value means a UTF-8 source may hold invalid bytes); a reuse
does not write, so it asks the same questions of what it has: each gzip'd text source's
stream, in a batch that leaves bad files out (elsewhere such a file stops the write, and
no snapshot exists to reuse); and the snapshot's rows, for U+FFFD, before any UTF-8
source is streamed. A reuse of parquet sources, or of text without U+FFFD, reads no
source file again.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark_jobs.per_source import Usable, leave_out
from spark_jobs.text_sources import (
    PARQUET,
    SourceReader,
    damaged_text_error,
    encoding_error,
    replaced_text_count,
)
from spark_jobs.writer import AppendResult, CatalogTable, rows_added


def recheck_reused(spark: SparkSession, ref: CatalogTable, reused: AppendResult,
                   usable: Usable, reader: SourceReader, leaves_out: bool) -> bool:
    """The first run's verdict on the text sources' bytes, for a run reusing `reused`:
    with `leaves_out` (a batch that is not all-or-nothing), each gzip'd text source whose
    stream is damaged is left out of `usable` with the first run's reason; then, when the
    snapshot's rows hold U+FFFD, InputRejectedError for the first UTF-8 source with bytes
    UTF-8 does not allow. Returns whether a source was left out (the caller reads the
    rest again)."""
    text = [uri for uri in usable.uris if reader.format(uri).kind != PARQUET]
    if not text:
        return False
    bad: dict[str, str] = {}
    if leaves_out:
        for uri in text:
            if reader.format(uri).gzip:
                damaged = damaged_text_error(spark, reader, [uri])
                if damaged is not None:
                    bad[uri] = str(damaged)
    left_out = leave_out(usable, bad)
    rows = rows_added(spark, ref, reused)
    if rows.select(replaced_text_count(rows)).first()[0]:
        invalid = encoding_error(spark, reader, usable.uris)
        if invalid is not None:
            raise invalid
    return left_out
