"""Quarantine (issue 40): rows that fail a check with `on_fail: quarantine` are set aside
in the table's quarantine table (`<ns>.<table>__quarantine`) on the ingest's branch, with
their source file, the names of every check they failed, the ingest id and the time
(rows that did not parse: their raw text); every other row goes to the table. The merge
that publishes the branch publishes both.

Each row lands on exactly one side: one array column of the names of the checks it
fails is computed once per row (a predicate that is NULL counts as passed, as the audit
counts it), and the two sides are `size(...) = 0` and `size(...) > 0` of that same
value. The table's write observes how many rows fail and, for a parquet drop up to
`CAPTURE_MAX_BYTES`, keeps those rows already shaped for the quarantine table (an
observed `collect_list`): the quarantine table is written from them, and its samples and
per-file counts taken, without reading the sources again. A larger drop, or one with
text sources, reads them once more when a row failed, keeping only those rows
(`localCheckpoint`: few, by the gate). A clean drop pays for the flags column and one
null per row (caching the flagged rows for a second write instead made a clean
million-row drop about twice as slow; the cost of a dirty one is in docs/benchmarks.md,
bench/quarantine_bench.py). The second read must find exactly the rows the first one
counted, else the run stops before anything is published: an expression that answers
differently each time (`rand()`, `current_timestamp()`) cannot split rows. Kept rows
come from the one pass that split them, so there the split holds whatever the check.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.utils import AnalysisException

from contracts.properties import INGEST_ID_PROPERTY
from contracts.report import FAILED, PASSED, SEVERITY_ERROR, SEVERITY_WARN, WRITE, CheckResult
from contracts.table_config import (
    QUARANTINE,
    QUARANTINE_COLUMNS,
    QUARANTINE_GATE,
    QuarantineGate,
    quarantine_table_name,
)
from spark_jobs.audit import SAMPLE_COLUMNS, SAMPLES, jsonable_row
from spark_jobs.checks import Check, ParseErrorsCheck
from spark_jobs.errors import TableConfigError, as_job_error, describe
from spark_jobs.identifiers import quote
from spark_jobs.schema_policy import SchemaPlan
from spark_jobs.text_sources import (
    CSV,
    JSONL,
    PARSE_ERROR,
    data_schema,
    has_parse_errors_column,
)
from spark_jobs.writer import (
    CatalogTable,
    create_namespace,
    find_ingest_snapshot,
    load_table,
    rows_added,
    spark_schema,
    sql_type,
)

log = logging.getLogger(__name__)


class QuarantineSplitError(TableConfigError):
    """The quarantine checks did not answer the same twice on the same rows: the config's
    fault (a non-deterministic check), found before anything is published."""


FAILED_COLUMN = "__wap_failed"
FILE_COLUMN = "__wap_file"
ROW_COLUMN = "__wap_row"
HELPER_COLUMNS = (FAILED_COLUMN, FILE_COLUMN, ROW_COLUMN)  # the split's, never the table's
QUARANTINED = "__wap_quarantined"
QUARANTINE_TYPES = {
    "array<string>": T.ArrayType(T.StringType()),
    "bigint": T.LongType(),
    "string": T.StringType(),
    "timestamp": T.TimestampType(),
}
FILE_KEY_PATTERN = r"^([A-Za-z][A-Za-z0-9+.-]*:)?/*"  # hadoop_fs.path_key, in Spark SQL
# monotonically_increasing_id(): the partition's index above bit 33, its row count below.
ROW_IN_PARTITION = (1 << 33) - 1
# Read with both, a file is one partition of its own, read whole (`whole_files`).
WHOLE_FILE_CONFS = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
WHOLE_FILE_BYTES = str(1 << 50)
# The rows set aside are written in files of about this many rows (few rows: one file).
ROWS_PER_FILE = 1_000_000
# Parquet drops up to this size keep the failing rows as the table's write reads them
# (observed, in the driver: at worst every row of the drop), so setting them aside reads
# the sources no more; a larger drop, or one with text sources, reads them again.
CAPTURE_MAX_BYTES = 64 * 1024 * 1024
CAPTURED = "__wap_captured"
# How long to wait for the captured rows after the write (they come with its counts).
CAPTURE_WAIT_S = 30.0


@dataclass
class Split:
    """How one write divides its rows between the table and its quarantine table."""

    table: CatalogTable  # the quarantine table
    ingest_id: str
    checks: list[tuple[str, Column]]  # (name, violation predicate) of each quarantine check
    parse_errors: str | None = None  # the parse_errors check's name when it quarantines
    origins: dict[str, str] = field(default_factory=dict)  # path_key(file) -> uploaded object
    # path_key(file) -> the line its first row is on, for text sources (`first_lines`).
    lines: dict[str, int] = field(default_factory=dict)
    quarantined_at: dt.datetime | None = None
    # Filled in by the write: rows set aside, in all and per check (None: not counted),
    # and up to SAMPLES of them per check (the report's samples of that check).
    counts: dict[str, int] | None = None
    samples: dict[str, list[dict]] = field(default_factory=dict)
    # Set by `flag`: the rows' indexes are counted per partition, so the rows set aside
    # are read with each file whole (`whole_files`).
    counted_per_partition: bool = False
    # The quarantine table's snapshot of the ingest's rows (`writer.AppendResult`), once
    # written or found.
    written: object | None = None
    # Seconds setting the rows aside after the table's write (the report's `quarantine_s`).
    seconds: float = 0.0
    # The rows this run set aside: as the write kept them (`capture`), else kept
    # (`localCheckpoint`) from the one read that found them; None before, or when a
    # re-run found them written.
    aside: DataFrame | None = None
    # Whether the table's write keeps the failing rows (`CAPTURE_MAX_BYTES`), the
    # observation that holds them and the struct each is kept as.
    capture: bool = False
    captured: Observation | None = None
    captured_row: Column | None = None

    def failed_checks(self, text: bool) -> Column:
        """The names of the quarantine checks a row fails (each predicate once; NULL is
        not a failure); for a row that did not parse, the parse_errors check alone."""
        names = [F.when(F.coalesce(pred, F.lit(False)), F.lit(name)) for name, pred in self.checks]
        parsed = F.array_compact(F.array(*names)) if names else F.array().cast("array<string>")
        if not text:
            return parsed
        unparsed = (
            F.array(F.lit(self.parse_errors))
            if self.parse_errors
            else F.array().cast("array<string>")
        )
        return F.when(F.col(PARSE_ERROR).isNull(), parsed).otherwise(unparsed)

    def fails(self, text: bool) -> Column:
        """True for a row `failed_checks` names a check for: the same predicates, as one
        boolean (cheaper than building the names, for a query that keeps few rows)."""
        parsed = F.lit(False)
        for _, pred in self.checks:
            parsed = parsed | F.coalesce(pred, F.lit(False))
        if not text:
            return parsed
        return F.when(F.col(PARSE_ERROR).isNull(), parsed).otherwise(
            F.lit(self.parse_errors is not None)
        )

    def flag(self, frame: DataFrame, projection: list[Column]) -> DataFrame:
        """`frame`'s rows shaped for the table (`projection`), with the failed checks, the
        file each came from and, for text sources, `PARSE_ERROR`."""
        text = has_parse_errors_column(frame)
        extra = [F.col(PARSE_ERROR)] if text else []
        index, self.counted_per_partition = row_index(frame)
        shaped = frame.select(
            *projection,
            *extra,
            F.input_file_name().alias(FILE_COLUMN),
            index.alias(ROW_COLUMN),
        )
        flagged = shaped.select("*", self.failed_checks(text).alias(FAILED_COLUMN))
        return flagged

    def counting(self) -> list[Column]:
        """Aggregates observed over every flagged row: the rows set aside, in all and
        per check."""
        failed = F.col(FAILED_COLUMN)
        return [F.count_if(F.size(failed) > 0).alias(QUARANTINED)] + [
            F.count_if(F.array_contains(failed, name)).alias(name) for name in self.names
        ]

    @property
    def names(self) -> list[str]:
        """Every quarantine check's name, in config order."""
        return [name for name, _ in self.checks] + (
            [self.parse_errors] if self.parse_errors else []
        )

    def published(
        self, flagged: DataFrame, observation: Observation, target: T.StructType
    ) -> DataFrame:
        """The rows that go to the table (they parsed and fail no quarantine check), with
        the quarantine counts observed on the way."""
        kept = F.size(F.col(FAILED_COLUMN)) == 0
        if PARSE_ERROR in flagged.columns:  # a row that did not parse goes nowhere else
            kept = kept & F.col(PARSE_ERROR).isNull()
        table_columns = [c for c in flagged.columns if c not in (*HELPER_COLUMNS, PARSE_ERROR)]
        observed = flagged.observe(observation, *self.counting())
        if self.capture and not self.counted_per_partition and PARSE_ERROR not in flagged.columns:
            # The failing rows as they stream by, already shaped for the quarantine table
            # (a struct only for them; nulls are not collected): a clean drop pays one
            # null per row, a dirty one no query to shape or keep them after the write.
            self.captured = Observation(f"wap_quarantine_rows_{self.ingest_id}:{self.table.table}")
            self.captured_row = F.struct(*self.quarantine_columns(flagged, target))
            failing = F.when(F.size(F.col(FAILED_COLUMN)) > 0, self.captured_row)
            observed = observed.observe(self.captured, F.collect_list(failing).alias(CAPTURED))
        return observed.where(kept).select(*[F.col(quote(c)) for c in table_columns])

    def set_aside(
        self, spark: SparkSession, observed: dict | None, flagged: DataFrame, target: T.StructType
    ) -> None:
        """After the table's write: the counts (`observed` by it, else counted by one
        query), then, when a row failed, those rows written to the quarantine table and
        sampled from it."""
        start = time.perf_counter()
        try:
            self._set_aside(spark, observed, flagged, target)
        finally:
            self.seconds += time.perf_counter() - start

    def _set_aside(
        self, spark: SparkSession, observed: dict | None, flagged: DataFrame, target: T.StructType
    ) -> None:
        self.counts = count_set_aside(observed, self, flagged)
        if self.counts[QUARANTINED]:
            written = self._write(spark, flagged, target)
            if written.rows_written != self.counts[QUARANTINED]:
                raise QuarantineSplitError(
                    f"the quarantine checks {', '.join(self.names)} counted "
                    f"{self.counts[QUARANTINED]} failing row(s) while the table was written, "
                    f"then found {written.rows_written} when setting them aside: a check "
                    "that answers differently on the same row (rand(), current_timestamp(), "
                    "...) cannot quarantine; make it deterministic or use on_fail: hold"
                )
            self.written = written
            self.samples = self.sample(spark, written, target)

    def _write(self, spark: SparkSession, flagged: DataFrame, target: T.StructType):
        """The quarantine table's snapshot of the ingest's rows: found (a re-run: its
        first run set them aside), else written now."""
        try:
            existing = load_table(spark, self.table)
            found = find_ingest_snapshot(existing, self.ingest_id) if existing else None
            if found is not None:
                return found
            kept = self._captured_rows(spark, flagged)
            if kept is not None:  # as the table's write read them: rows in the driver
                self.aside = kept
            else:
                # One read of the sources, keeping only the rows set aside (few): the
                # write, its samples and per-file counts then read those.
                with whole_files(spark, self.counted_per_partition):
                    self.aside = self.quarantined(flagged, target).localCheckpoint(eager=True)
        except Exception as exc:
            raise as_job_error(
                exc, f"setting the quarantined rows aside failed: {describe(exc)}"
            ) from exc
        files = max(1, self.counts[QUARANTINED] // ROWS_PER_FILE)
        return write_quarantined(spark, self, self.aside.coalesce(files))

    def _captured_rows(self, spark: SparkSession, flagged: DataFrame) -> DataFrame | None:
        """The failing rows the table's write kept (`capture`), shaped for the quarantine
        table: a frame of rows in the driver, built in the JVM (no Python rows); None when
        it kept none, or they did not come."""
        if self.captured is None:
            return None
        jo = self.captured._jo
        try:
            metrics = jo.getClass().getDeclaredField("metrics")
            metrics.setAccessible(True)
            deadline = time.monotonic() + CAPTURE_WAIT_S
            while not metrics.get(jo).isDefined():
                if time.monotonic() > deadline:
                    log.warning("the failing rows kept by the write did not arrive")
                    return None
                time.sleep(0.01)
            rows = jo.getAsJava().get(CAPTURED)
            jvm = spark._jvm
            listed = jvm.scala.collection.JavaConverters.seqAsJavaListConverter(rows).asJava()
            # The kept struct's type as the JVM has it (no JSON of it through py4j).
            kept_type = flagged.select(self.captured_row)._jdf.schema().fields()[0].dataType()
            return DataFrame(spark._jsparkSession.createDataFrame(listed, kept_type), spark)
        except Exception:
            log.exception("cannot read the failing rows kept by the write; reading again")
            return None

    def _written_rows(self, spark: SparkSession, written) -> DataFrame:
        """The rows set aside: as this run kept them, else (a re-run) as the quarantine
        table's snapshot of the ingest holds them."""
        return self.aside if self.aside is not None else rows_added(spark, self.table, written)

    def by_origin(self, spark: SparkSession) -> dict[str, int]:
        """The rows set aside per uploaded object (`_wap_source_file`): one grouped count
        of the rows just written, asked only by a batch (each file's record counts its
        own)."""
        if self.written is None:
            return {}
        rows = self._written_rows(spark, self.written)
        return {
            row["_wap_source_file"]: int(row["count"])
            for row in rows.groupBy("_wap_source_file").count().collect()
        }

    def sample(self, spark: SparkSession, written, target: T.StructType) -> dict[str, list[dict]]:
        """Up to SAMPLES rows set aside per check (the table's leading columns), from one
        LIMITed read of the rows set aside."""
        columns = [f.name for f in target.fields][:SAMPLE_COLUMNS]
        picked = (
            self._written_rows(spark, written)
            .select(*[F.col(quote(c)) for c in columns], F.col("_wap_failed_checks"))
            .limit(SAMPLES * len(self.names))
            .collect()
        )
        samples: dict[str, list[dict]] = {name: [] for name in self.names}
        for row in picked:
            record = row.asDict(recursive=True)
            for name in record.pop("_wap_failed_checks"):
                if len(samples[name]) < SAMPLES:
                    samples[name].append(jsonable_row(record))
        return samples

    def quarantined(self, flagged: DataFrame, target: T.StructType) -> DataFrame:
        """The rows set aside, shaped for the quarantine table."""
        # The boolean first, the names for the rows it keeps alone (unused, the flagged
        # names are pruned from this query).
        text = PARSE_ERROR in flagged.columns
        failing = (
            flagged.drop(FAILED_COLUMN)
            .where(self.fails(text))
            .select("*", self.failed_checks(text).alias(FAILED_COLUMN))
        )
        return failing.select(*self.quarantine_columns(failing, target))

    def quarantine_columns(self, flagged: DataFrame, target: T.StructType) -> list[Column]:
        """A flagged row's columns in the quarantine table: the table's, then the
        quarantine's own (`QUARANTINE_COLUMNS`)."""
        key = F.regexp_replace(F.expr(f"url_decode({FILE_COLUMN})"), FILE_KEY_PATTERN, "/")
        # One map lookup per row, not a CASE WHEN per file: a batch of 500 files nested
        # 500 deep and overflowed the JVM's stack planning the table's write.
        source = F.col(FILE_COLUMN)
        if self.origins:
            source = F.coalesce(F.try_element_at(_literal_map(self.origins), key), source)
        line = F.lit(None).cast("bigint")
        if self.lines:
            first = F.try_element_at(_literal_map(self.lines), key)
            line = (F.col(ROW_COLUMN) + first).cast("bigint")
        raw = F.col(PARSE_ERROR) if PARSE_ERROR in flagged.columns else F.lit(None).cast("string")
        if self.quarantined_at is None:  # one time for every row of the run
            self.quarantined_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)  # noqa: UP017
        at = self.quarantined_at
        metadata = {
            "_wap_failed_checks": F.col(FAILED_COLUMN),
            "_wap_source_file": source,
            "_wap_raw_text": raw,
            "_wap_ingest_id": F.lit(self.ingest_id),
            "_wap_quarantined_at": F.lit(at).cast("timestamp"),
            "_wap_source_row": F.col(ROW_COLUMN),
            "_wap_source_line": line,
        }
        columns = [F.col(quote(f.name)) for f in target.fields]
        return columns + [metadata[name].alias(name) for name, _, _ in QUARANTINE_COLUMNS]


def _literal_map(mapping: dict) -> Column:
    """`mapping` as a Spark map literal."""
    return F.create_map(*[F.lit(item) for pair in mapping.items() for item in pair])


def row_index(frame: DataFrame) -> tuple[Column, bool]:
    """Each row's 0-based index in its file, and whether it is counted per partition.

    Parquet: the reader's `_metadata.row_index` (counted as it reads, no extra pass).
    Text sources (and a drop mixing parquet and text, whose union drops the metadata
    column): the row's count within its partition, which is its index in its file only
    when the file is read whole, one partition to itself; the rows set aside are read so
    (`whole_files`). The table's write reads in splits as before and does not use it (a
    split starts mid-file, where the reader does not know the line)."""
    try:
        _ = frame.select(F.col("_metadata.row_index")).schema  # the analyser alone decides
    except AnalysisException:
        return F.monotonically_increasing_id().bitwiseAND(F.lit(ROW_IN_PARTITION)), True
    return F.col("_metadata.row_index"), False


_WHOLE_FILES_LOCK = threading.Lock()
_whole_files_users: list = [0, {}]  # how many are within, and the confs they replaced


@contextmanager
def whole_files(spark: SparkSession, wanted: bool = True) -> Iterator[None]:
    """Within: queries read each source file whole as a partition of its own (no split,
    no two small files packed together), so a row's count in its partition is its index
    in its file. Only the rows set aside are read so (only when a row failed): one task
    per file, where the table's write split a large file across tasks. A session-wide
    setting: a multi-table dataset's tables, written side by side, share it, the first
    one in setting it and the last one out restoring it."""
    if not wanted:
        yield
        return
    with _WHOLE_FILES_LOCK:
        if _whole_files_users[0] == 0:
            _whole_files_users[1] = {name: spark.conf.get(name) for name in WHOLE_FILE_CONFS}
            for name in WHOLE_FILE_CONFS:
                spark.conf.set(name, WHOLE_FILE_BYTES)
        _whole_files_users[0] += 1
    try:
        yield
    finally:
        with _WHOLE_FILES_LOCK:
            _whole_files_users[0] -= 1
            if _whole_files_users[0] == 0:
                for name, value in _whole_files_users[1].items():
                    spark.conf.set(name, value)


def first_lines(kinds: dict[str, str], header: bool) -> dict[str, int]:
    """path_key(file) -> the line its first row is on, for each text file of `kinds`
    (path_key -> `csv`, `jsonl` or `parquet`): 2 for a CSV with a header (line 1), else 1.
    A row's line is then its index plus that: JSON Lines' blank lines hold no row and
    are not counted, nor are a CSV's, and a CSV row whose quoted value spans lines
    (`csv: {multiline: true}`) counts as one line."""
    return {
        key: 2 if kind == CSV and header else 1
        for key, kind in kinds.items()
        if kind in (CSV, JSONL)
    }


def split_for(
    checks: list[Check],
    parse_check: ParseErrorsCheck | None,
    ref: CatalogTable,
    ingest_id: str,
    origins: dict[str, str],
    lines: dict[str, int] | None = None,
) -> Split | None:
    """The run's split, None when no check quarantines (the write is then as before)."""
    quarantining = [c for c in checks if c.spec.on_fail == QUARANTINE]
    parse_name = (
        parse_check.spec.name
        if parse_check is not None and parse_check.spec.on_fail == QUARANTINE
        else None
    )
    if not quarantining and parse_name is None:
        return None
    return Split(
        table=quarantine_ref(ref),
        ingest_id=ingest_id,
        checks=[(c.spec.name, c.violation()) for c in quarantining],
        parse_errors=parse_name,
        origins=origins,
        lines=lines or {},
    )


def quarantine_ref(ref: CatalogTable) -> CatalogTable:
    """The quarantine table of `ref`, in the same catalog and namespace."""
    return replace(ref, table=quarantine_table_name(ref.table))


def quarantine_schema(target: T.StructType) -> T.StructType:
    """The table's columns (all optional: a row set aside may lack a required value)
    followed by the quarantine's own."""
    own = [
        T.StructField(name, QUARANTINE_TYPES[kind], nullable)
        for name, kind, nullable in QUARANTINE_COLUMNS
    ]
    return T.StructType([_optional(f) for f in target.fields] + own)


def _optional(column: T.StructField) -> T.StructField:
    """`column`, nullable."""
    return T.StructField(column.name, column.dataType, True, column.metadata)


def prepare_quarantine_table(spark: SparkSession, ref, target: T.StructType) -> None:
    """Create the quarantine table beside the table on the branch, or add to it the
    columns the table gained and widen the ones it widened (its columns follow the
    table's)."""
    table = quarantine_ref(ref)
    wanted = quarantine_schema(target)
    try:
        existing = load_table(spark, table)
        if existing is None:
            create_namespace(spark, table)
            columns = ", ".join(
                f"{quote(f.name)} {sql_type(spark, f.dataType)}"
                + ("" if f.nullable else " NOT NULL")
                for f in wanted.fields
            )
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS {table.sql} ({columns}) USING iceberg "
                "TBLPROPERTIES ('format-version'='2')"
            )
            return
        have = {f.name: f.dataType for f in spark_schema(spark, existing).fields}
        for column in wanted.fields:
            type_ = sql_type(spark, column.dataType)
            if column.name not in have:
                spark.sql(f"ALTER TABLE {table.sql} ADD COLUMNS ({quote(column.name)} {type_})")
            elif have[column.name].simpleString() != column.dataType.simpleString():
                spark.sql(f"ALTER TABLE {table.sql} ALTER COLUMN {quote(column.name)} TYPE {type_}")
    except Exception as exc:
        raise as_job_error(
            exc, f"preparing the quarantine table {table.table} failed: {describe(exc)}"
        ) from exc


def write_quarantined(spark: SparkSession, split: Split, rows: DataFrame):
    """Append `rows`, those set aside (`Split.quarantined`), to the quarantine table on
    the branch, stamped with the ingest; return that snapshot (`writer.AppendResult`).
    The caller looked first for a snapshot of the ingest (a re-run appends nothing)."""
    table = split.table
    try:
        rows.writeTo(table.sql).option(
            f"snapshot-property.{INGEST_ID_PROPERTY}", split.ingest_id
        ).append()
        found = find_ingest_snapshot(load_table(spark, table), split.ingest_id)
        if found is None:
            raise RuntimeError(f"no snapshot of {table.table} carries the ingest {split.ingest_id}")
        return found
    except Exception as exc:
        raise as_job_error(
            exc, f"writing the quarantined rows to {table.table} failed: {describe(exc)}"
        ) from exc


def count_set_aside(values: dict | None, split: Split, flagged: DataFrame) -> dict[str, int]:
    """The rows set aside in all (`QUARANTINED`) and per check: as observed by the write,
    else counted by one query."""
    if values is None:
        values = flagged.agg(*split.counting()).first().asDict()
    return {name: int(values[name] or 0) for name in [QUARANTINED, *split.names]}


def recount(spark: SparkSession, split: Split) -> dict[str, int] | None:
    """A re-run that reuses the ingest's snapshot: the counts from the rows its first run
    set aside (None when it set none aside, or the table is not there)."""
    existing = load_table(spark, split.table)
    found = find_ingest_snapshot(existing, split.ingest_id) if existing is not None else None
    if found is None:
        return None
    split.written = found
    rows = rows_added(spark, split.table, found)
    failed = F.col("_wap_failed_checks")
    values = (
        rows.agg(
            F.count(F.lit(1)).alias(QUARANTINED),
            *[F.count_if(F.array_contains(failed, name)).alias(name) for name in split.names],
        )
        .first()
        .asDict()
    )
    return {name: int(values[name] or 0) for name in [QUARANTINED, *split.names]}


def judge_quarantine(
    results: list[CheckResult],
    split: Split,
    gate: QuarantineGate,
    published: int,
) -> tuple[list[CheckResult], int]:
    """The report's checks with each quarantine check's rows set aside (a warning, not a
    hold: its rows are not in the table) and the gate's verdict appended; and the number
    of rows set aside."""
    counts = split.counts or {}
    quarantined = int(counts.get(QUARANTINED, 0))
    # `ns.t__quarantine`, as the alert and the docs name it (the catalog is the job's own).
    quarantine = f"{split.table.namespace}.{split.table.table}"
    judged = []
    for result in results:
        if result.name in split.names and result.name in counts:
            count = counts[result.name]
            result = replace(
                result,
                severity=SEVERITY_WARN,
                status=FAILED if count else PASSED,
                violations=count,
                observed=count,
                quarantined_rows=count,
                settled_by=WRITE,
                # Rows that did not parse keep their own samples (file, line, text).
                samples=result.samples
                if result.name == split.parse_errors
                else tuple(split.samples.get(result.name, ())),
                message=(
                    f"{count} row(s) set aside in {quarantine}, not published"
                    if count
                    else result.message
                ),
            )
        judged.append(result)
    total = published + quarantined
    over = gate.exceeded(quarantined, total)
    fraction = round(quarantined / total, 6) if total else 0.0
    judged.append(
        CheckResult(
            name=QUARANTINE_GATE,
            kind=QUARANTINE_GATE,
            severity=SEVERITY_ERROR,
            status=FAILED if over else PASSED,
            violations=quarantined,
            threshold={"max_fraction": gate.max_fraction, "max_rows": gate.max_rows},
            observed={"rows": quarantined, "fraction": fraction},
            settled_by=WRITE,
            message=f"{gate.why(quarantined, total)}: nothing is published" if over else None,
        )
    )
    return judged, quarantined


def counts_of_reused(
    spark: SparkSession, split: Split, frame: DataFrame, target: T.StructType
) -> dict[str, int]:
    """A re-run that reuses the ingest's snapshot of the table: the counts of the rows
    its first run set aside; when that run stopped before setting them aside (its
    quarantine table has no snapshot of the ingest), flag the sources again and set them
    aside now."""
    found = recount(spark, split)
    if found is not None:
        split.samples = split.sample(spark, split.written, target)  # as the first run's
        return found
    flagged = split.flag(frame, SchemaPlan(target=target).projection(data_schema(frame)))
    split.set_aside(spark, None, flagged, target)
    return split.counts
