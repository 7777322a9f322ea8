"""A run that reuses the snapshot its ingest already appended on the branch (its first
run's report was lost, the job was retried) judges the sources as that first run did,
so a file the first run rejected is never published, nor called passed, by the second.

The first run learns of bad bytes while writing: a file whose rows do not decode (a
parquet page, a gzip stream that ends early) fails the write, and in a batch is left out
of a second write; U+FFFD in a written value means a UTF-8 text source may hold invalid
bytes. A reuse does not write, so it asks what it has: the snapshot names the sources it
holds (`wap.source`), and only when that is not what this run would write does it search
for the files to leave out again (the first run's search, its reasons); and the
snapshot's rows are counted for U+FFFD (and for line breaks, behind which a CSV's quoted
value may never close) before any source is streamed. A sound
reuse reads no source file again.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from contracts.properties import SOURCE_PROPERTY
from spark_jobs.per_source import Usable, leave_out_undecodable, sources_rejected
from spark_jobs.text_sources import (
    PARQUET,
    SourceReader,
    encoding_error,
    line_break_count,
    replaced_text_count,
    unclosed_quote_error,
)
from spark_jobs.writer import MAX_SOURCE_PROPERTY, AppendResult, CatalogTable, rows_added


def recheck_reused(
    spark: SparkSession,
    ref: CatalogTable,
    reused: AppendResult,
    usable: Usable,
    reader: SourceReader,
    recorded: list[str],
    leaves_out: bool,
) -> bool:
    """The first run's verdict on the sources, for a run reusing `reused`. `recorded`:
    what this run's write would name in `wap.source`; with `leaves_out` (a batch that is
    not all-or-nothing) and a snapshot that names less, the files whose rows do not
    decode are left out of `usable` with the first run's reasons. Then, when the
    snapshot's rows hold U+FFFD, InputRejectedError for the first UTF-8 text source with
    bytes UTF-8 does not allow; when they hold a line break, SourcesRejectedError for the
    CSVs whose quoted value is never closed. Returns whether a source was left out (the caller reads
    the rest again)."""
    left_out = False
    if leaves_out and _recorded(reused) != ",".join(recorded)[:MAX_SOURCE_PROPERTY]:
        left_out = leave_out_undecodable(spark, usable, reader)
    if any(reader.format(uri).kind != PARQUET for uri in usable.uris):
        rows = rows_added(spark, ref, reused)
        seen = rows.select(replaced_text_count(rows), line_break_count(rows)).first()
        replaced, line_breaks = seen[0], seen[1]
        if replaced:
            invalid = encoding_error(spark, reader, usable.uris)
            if invalid is not None:
                raise invalid
        unclosed = unclosed_quote_error(spark, reader, usable.uris) if line_breaks else {}
        if unclosed:
            raise sources_rejected(usable, unclosed)
    return left_out


def _recorded(reused: AppendResult) -> str | None:
    """The sources the reused snapshot names (`wap.source`)."""
    snapshot = reused.table.snapshot(reused.snapshot_id)
    return snapshot.summary().get(SOURCE_PROPERTY) if snapshot is not None else None
