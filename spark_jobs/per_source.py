"""A verdict per source file when one run writes several (a batch; docs/batches.md).

Two parts:
- `usable_sources`: a source the job cannot use (not parquet, a footer that does not
  decode, a schema the table's policy refuses) is left out and rejected on its own, so
  the other files go on. The cheap path runs first (one merged read, one plan); only
  when it fails is each source read and planned on its own to find the culprits.
- `judge_sources`: the checks evaluated per source file in ONE aggregation over the
  written sources (the staged parquet files, which do not change), grouped by
  `input_file_name()`. `unique ... against_main` that failed for the batch looks each
  file's keys up on main too (one grouped join), so a re-uploaded file fails alone
  instead of sending the whole batch to run file by file.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from contracts.report import (
    SEVERITY_ERROR,
    SOURCE_FAILED,
    SOURCE_PASSED,
    SOURCE_REJECTED,
    SourceVerdict,
)
from spark_jobs import hadoop_fs
from spark_jobs.audit import ROWS, count_aggregates, keys_on_main, raise_if_infrastructure
from spark_jobs.checks import Check, ParseErrorsCheck
from spark_jobs.errors import InputRejectedError, as_job_error, describe
from spark_jobs.hadoop_fs import FileInfo
from spark_jobs.schema_policy import SchemaPlan
from spark_jobs.sources import PARQUET_READER, expand_sources, read_sources
from spark_jobs.text_sources import (
    SourceReader,
    damaged_text_error,
    data_schema,
    every_column,
    has_parse_errors_column,
    parse_error_count,
    parsed_rows,
)

log = logging.getLogger(__name__)
SOURCE_COLUMN = "__wap_source"


@dataclass
class Usable:
    """The sources a run writes (their files) and those it left out, with the reason."""

    files: list[FileInfo] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)  # file URI -> its source URI
    rejected: dict[str, str] = field(default_factory=dict)  # source URI -> reason

    @property
    def uris(self) -> list[str]:
        return [info.uri for info in self.files]


def usable_sources(
    spark: SparkSession,
    sources: list[str],
    plan: Callable[[T.StructType], object],
    all_or_nothing: bool = False,
    reader: SourceReader = PARQUET_READER,
) -> tuple[Usable, DataFrame]:
    """The sources to write and their merged rows; the rest rejected one by one.

    `plan(schema)` is the table's schema plan for rows of that schema (raises
    SchemaPolicyError). With one source, or `all_or_nothing`, the first problem rejects
    the run (InputRejectedError) as it always did. Infrastructure errors propagate.
    """
    usable = Usable()
    if len(sources) == 1 or all_or_nothing:
        usable.files = expand_sources(spark, sources, reader)
        usable.owner = {info.uri: _owner(info.uri, sources) for info in usable.files}
        return usable, read_sources(spark, usable.uris, reader)
    for source in sources:
        try:
            found = expand_sources(spark, [source], reader)
        except InputRejectedError as exc:
            usable.rejected[source] = str(exc)
            continue
        usable.files += found
        usable.owner.update({info.uri: source for info in found})
    if not usable.files:
        raise _none_usable(usable)
    try:
        frame = read_sources(spark, usable.uris, reader)
        plan(data_schema(frame))
        return usable, frame
    except InputRejectedError:
        log.warning("the merged sources cannot be used; checking each on its own")
    for info in list(usable.files):
        try:
            plan(data_schema(read_sources(spark, [info.uri], reader)))
        except InputRejectedError as exc:
            usable.rejected[usable.owner.pop(info.uri)] = str(exc)
            usable.files.remove(info)
    if not usable.files:
        raise _none_usable(usable)
    # What is left still conflicts (e.g. two new files that disagree on a type): the run
    # is rejected, and the orchestration runs each file alone.
    return usable, read_sources(spark, usable.uris, reader)


def leave_out_undecodable(
    spark: SparkSession, usable: Usable, reader: SourceReader = PARQUET_READER
) -> bool:
    """After a write the rows refused (a page that does not decode behind a valid footer,
    a gzip stream that ends early):
    find the files whose rows do not decode, by halves, and leave their sources out.

    A group decodes in one read (Spark's `noop` sink decodes every column without writing);
    a group that does not is split in two, so k bad files of n cost about 2·k·log2(n)
    reads of ever smaller groups, inside this run. Returns whether any source was left
    out (False: the write failed for another reason, which the caller raises).
    """
    bad: dict[str, str] = {}

    def search(files: list[str]) -> None:
        try:
            read_sources(spark, files, reader).write.format("noop").mode("overwrite").save()
            return
        except InputRejectedError as exc:
            reason = str(exc)
        except Exception as exc:
            error = as_job_error(exc, f"the rows of {files[0]} do not decode: {describe(exc)}")
            if not isinstance(error, InputRejectedError):
                # A gzip stream that ends early fails as an IOException would.
                error = damaged_text_error(spark, reader, files) or error
            if not isinstance(error, InputRejectedError):
                raise error from exc
            reason = str(error)
        if len(files) == 1:
            bad[files[0]] = reason
            return
        middle = len(files) // 2
        search(files[:middle])
        search(files[middle:])

    search(usable.uris)
    for uri in bad:  # a source with several files goes as a whole
        source = usable.owner.get(uri)
        if source is not None and source not in usable.rejected:
            usable.rejected[source] = bad[uri]
    left_out = {uri for uri, source in usable.owner.items() if source in usable.rejected}
    usable.files = [info for info in usable.files if info.uri not in left_out]
    for uri in left_out:
        usable.owner.pop(uri, None)
    if bad and not usable.files:
        raise _none_usable(usable)
    return bool(bad)


def judge_sources(
    spark: SparkSession,
    usable: Usable,
    target: T.StructType,
    checks: list[Check],
    now: dt.datetime,
    *,
    failed_on_main: Callable[[], DataFrame | None] | None = None,
    batch_failed: frozenset[str] = frozenset(),
    reader: SourceReader = PARQUET_READER,
    parse_errors: ParseErrorsCheck | None = None,
) -> dict[str, SourceVerdict]:
    """Each written source's verdict from one aggregation grouped by source file; the
    checks against main that failed for the batch (`batch_failed`, by name) also look
    each file's keys up on main (`failed_on_main` gives main's rows). With text sources,
    one more grouped count finds each file's rows that did not parse (`parse_errors`)."""
    read = read_sources(spark, usable.uris, reader)
    frame = read.select("*", F.input_file_name().alias(SOURCE_COLUMN))
    shaped = parsed_rows(frame).select(
        *SchemaPlan(target=target).projection(data_schema(read)), SOURCE_COLUMN
    )
    by_path = {hadoop_fs.path_key(uri): source for uri, source in usable.owner.items()}
    unparsed = (
        _unparsed_by_source(frame, by_path)
        if has_parse_errors_column(frame) and parse_errors is not None
        else {}
    )
    indexes = list(range(len(checks)))
    try:
        grouped = shaped.groupBy(SOURCE_COLUMN).agg(*count_aggregates(checks, indexes)).collect()
    except Exception as exc:
        raise_if_infrastructure(exc, "the per-source audit failed")
        log.exception("per-source audit failed")
        reason = f"its checks could not be evaluated on their own: {describe(exc)}"
        return {
            source: SourceVerdict(uri=source, status=SOURCE_FAILED, reason=reason)
            for source in set(usable.owner.values())
        }
    groups = {}
    for group in grouped:
        values = group.asDict()
        source = by_path.get(hadoop_fs.path_key(values[SOURCE_COLUMN]))
        if source is None:
            raise RuntimeError(
                f"the per-source audit read {values[SOURCE_COLUMN]}, which is "
                "not one of the run's sources"
            )
        groups.setdefault(source, []).append(values)
    if len(groups) < len(set(usable.owner.values())):
        # A file without rows has no group: judge it on the aggregates of no rows.
        empty = shaped.limit(0).agg(*count_aggregates(checks, indexes)).first().asDict()
    rows: dict[str, int] = {}
    failed: dict[str, list[str]] = {}
    for source in dict.fromkeys(usable.owner.values()):
        for values in groups.get(source) or [empty]:
            count = int(values[ROWS] or 0)
            rows[source] = rows.get(source, 0) + count
            for index, check in enumerate(checks):
                result = check.finish(values, f"c{index}_", count, now)
                if result.blocking:
                    failed.setdefault(source, []).append(check.spec.name)
    for source, count in unparsed.items():
        if parse_errors.result(count).blocking:
            failed.setdefault(source, []).append(parse_errors.spec.name)
    for check in checks:
        if (
            check.needs_main
            and check.spec.severity == SEVERITY_ERROR
            and (check.spec.name in batch_failed)
        ):
            for source in _sources_with_keys_on_main(shaped, check, failed_on_main, by_path):
                failed.setdefault(source, []).append(check.spec.name)
    verdicts = {}
    for source in dict.fromkeys(usable.owner.values()):
        names = tuple(dict.fromkeys(failed.get(source, [])))
        verdicts[source] = SourceVerdict(
            uri=source,
            status=SOURCE_FAILED if names else SOURCE_PASSED,
            rows=rows.get(source, 0),
            failed_checks=names,
        )
    return verdicts


def _unparsed_by_source(frame: DataFrame, by_path: dict[str, str]) -> dict[str, int]:
    """How many rows of each text source did not parse (one grouped count; it reads
    every column, so each value is parsed as the write parsed it)."""
    counts: dict[str, int] = {}
    for row in (
        frame.groupBy(SOURCE_COLUMN)
        .agg(parse_error_count().alias("n"), every_column(frame).alias("_"))
        .collect()
    ):
        source = by_path.get(hadoop_fs.path_key(row[SOURCE_COLUMN]))
        if source is not None:
            counts[source] = counts.get(source, 0) + int(row["n"])
    return counts


def _sources_with_keys_on_main(
    shaped: DataFrame,
    check: Check,
    main_rows: Callable[[], DataFrame | None] | None,
    by_path: dict[str, str],
) -> list[str]:
    """The sources with a key already on main: one join, grouped by source file. A lookup
    that fails leaves the files as they were (the batch's own result still stands)."""
    main = main_rows() if main_rows is not None else None
    if main is None:
        return []
    try:
        hits = keys_on_main(check, shaped, main).groupBy(SOURCE_COLUMN).count().collect()
    except Exception as exc:
        raise_if_infrastructure(exc, "the per-source lookup on main failed")
        log.exception("per-source lookup on main failed")
        return []
    found = (by_path.get(hadoop_fs.path_key(row[SOURCE_COLUMN])) for row in hits)
    return [source for source in found if source is not None]


def rejected_verdicts(usable: Usable) -> dict[str, SourceVerdict]:
    """The verdicts of the sources the run left out."""
    return _rejected(usable.rejected)


def rejected_verdicts_of(exc: BaseException) -> dict[str, SourceVerdict]:
    """The verdicts an error that stopped the run knows (the sources it rejected), or none."""
    return _rejected(exc.rejected) if isinstance(exc, SourcesRejectedError) else {}


def _rejected(reasons: dict[str, str]) -> dict[str, SourceVerdict]:
    return {
        source: SourceVerdict(uri=source, status=SOURCE_REJECTED, rows=0, reason=reason)
        for source, reason in reasons.items()
    }


class SourcesRejectedError(InputRejectedError):
    """The run is rejected for these of its sources (`rejected`: source URI -> reason),
    each REJECTED on its own; a batch's other files run again (docs/batches.md)."""

    def __init__(self, message: str, rejected: dict[str, str]):
        super().__init__(message)
        self.rejected = rejected


class NoUsableSourceError(SourcesRejectedError):
    """Every source of the run was rejected (`rejected`: source URI -> reason)."""


def sources_rejected(usable: Usable, reasons: dict[str, str]) -> SourcesRejectedError:
    """The run rejected for its files with `reasons` (file URI -> reason), by source."""
    rejected = {usable.owner.get(uri, uri): reason for uri, reason in reasons.items()}
    return SourcesRejectedError("; ".join(rejected.values()), rejected)


def _none_usable(usable: Usable) -> NoUsableSourceError:
    return NoUsableSourceError(
        "no source can be used: " + "; ".join(usable.rejected.values()), dict(usable.rejected)
    )


def _owner(file_uri: str, sources: list[str]) -> str:
    """The source a file came from (a source may be a directory of files)."""
    path = hadoop_fs.path_key(file_uri)
    for source in sources:
        root = hadoop_fs.path_key(source)
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return source
    return sources[0]
