"""The WAP job: write one ingest to its Nessie branch, audit the new rows, write the report.

Runs unchanged under `spark-submit` on EMR Serverless and locally:

    spark-submit --py-files job.zip spark_jobs/wap_job.py \\
        --source s3://src/sales/orders/f.parquet --table sales.orders \\
        --branch wap_sales_orders_20261122T101500_01234567 --ingest-id 0123456789abcdef \\
        --report-uri s3://reports/0123456789abcdef.json \\
        --table-config-uri s3://artifacts/tables/sales.orders.yaml

Catalog settings come from Spark conf `spark.sql.catalog.<catalog>.*` (docs/contracts.md).
The job exits 0 whenever it wrote a report (whatever the outcome), 1 when it could not.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

if __package__ in (None, ""):  # `spark-submit spark_jobs/wap_job.py` without the zip
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StringType, StructType

from contracts.job_args import (
    CompactionArgs,
    JobArgs,
    JobArgsError,
    SmokeArgs,
    parse_run_args,
)
from contracts.layout import table_config_key
from contracts.report import FAILED, SCAN, SOURCE_REJECTED, WRITE, SourceVerdict
from contracts.table_config import (
    MONITOR_KINDS,
    QUARANTINE,
    TableConfig,
    config_text,
    default_config,
    parse_table_config_text,
    too_large_text,
)
from spark_jobs import catalog_secret, compaction, hadoop_fs
from spark_jobs.audit import ROWS, observation_aggregates, run_audit
from spark_jobs.catalog import configure_run_catalog, nessie_branch_hash
from spark_jobs.checks import (
    ParseErrorsCheck,
    compile_checks,
    expression_failing_on,
    parse_errors_check,
)
from spark_jobs.errors import (
    EVALUATION_ERROR_CLASSES,
    InputRejectedError,
    ReportWriteError,
    TableConfigError,
    WapJobError,
    classify,
)
from spark_jobs.history import HistoryRead, kept_drops, metric_rows, record_metrics
from spark_jobs.identifiers import (
    split_table_name,
    validate_branch,
    validate_identifier,
    validate_ingest_id,
)
from spark_jobs.metrics import snapshot_stats
from spark_jobs.monitors import (
    check_monitored_columns,
    explain_bounds,
    history_needs,
    judge_monitors,
    resolve_history_bounds,
    uses_history_bounds,
)
from spark_jobs.per_source import (
    judge_sources,
    leave_out_undecodable,
    rejected_verdicts,
    rejected_verdicts_of,
    sources_rejected,
    usable_sources,
)
from spark_jobs.profile import Profile
from spark_jobs.quarantine import (
    CAPTURE_MAX_BYTES,
    QUARANTINED,
    Split,
    counts_of_reused,
    first_lines,
    judge_quarantine,
    prepare_quarantine_table,
    split_for,
)
from spark_jobs.report import REJECTED, Report, utc_now, write_report
from spark_jobs.reuse import recheck_reused
from spark_jobs.schema_policy import plan_schema
from spark_jobs.sources import read_sources, read_strict
from spark_jobs.text_sources import (
    SourceReader,
    check_parse_options,
    damaged_text_error,
    data_schema,
    encoding_error,
    every_column,
    has_parse_errors_column,
    parse_error_count,
    parse_error_samples,
    parsed_rows,
    unclosed_quote_error,
)
from spark_jobs.writer import (
    AppendResult,
    CatalogTable,
    append,
    check_iceberg_types,
    check_partitioning,
    declared_schema,
    find_ingest_snapshot,
    load_table,
    prepare_table,
    rows_added,
    spark_schema,
)

T = TypeVar("T")
log = logging.getLogger("wap_job")
OBSERVE_CONF = "spark.wap.audit.observe-on-write"  # auto (default) | true | false
OBSERVE_MAX_BYTES_CONF = "spark.wap.audit.observe-max-bytes"
METRIC_HISTORY_CONF = "spark.wap.audit.metric-history"  # true (default) | false
# Where observing during the write and a separate scan cost the same on clean data
# (TPC-H lineitem, local Spark; docs/benchmarks.md, "Analysis").
DEFAULT_OBSERVE_MAX_BYTES = 64 * 1024 * 1024


def parse_args(argv: list[str] | None = None) -> JobArgs:
    """Parse an ingest's spark-submit arguments (contracts/job_args.py); exits 2 on
    malformed usage, naming the argument."""
    return _or_exit(JobArgs.from_args, sys.argv[1:] if argv is None else argv)


def _or_exit(parse: Callable[[list[str]], T], argv: list[str]) -> T:
    """`parse(argv)`, or exit 2 with the message on stderr as argparse would: malformed
    arguments are the caller's mistake, found before Spark starts."""
    try:
        return parse(argv)
    except JobArgsError as exc:
        print(f"usage error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


def _set_aside_per_source(
    spark: SparkSession, split: Split, verdicts: dict[str, SourceVerdict], args: JobArgs
) -> dict[str, SourceVerdict]:
    """A batch's verdicts with each written source's rows set aside in the quarantine
    table (`quarantined_rows`) and its `rows` the rest, those published."""
    counts = split.by_origin(spark) if (split.counts or {}).get(QUARANTINED) else {}
    found = {}
    for uri, verdict in verdicts.items():
        if verdict.status == SOURCE_REJECTED:
            found[uri] = verdict
            continue
        count = counts.get(args.origin(uri), 0)
        rows = None if verdict.rows is None else max(verdict.rows - count, 0)
        found[uri] = replace(verdict, rows=rows, quarantined_rows=count)
    return found


def recorded_sources(args: JobArgs, usable) -> list[str]:
    """What the snapshot's `wap.source` names: the uploaded object version of each written
    source (its `--source-origin`), in order; without origins, the files written."""
    if not args.source_origins:
        return usable.uris
    return list(dict.fromkeys(args.origin(usable.owner[uri]) for uri in usable.uris))


def load_table_config(spark, uri: str | None, table: str) -> TableConfig:
    """The table's config from `uri`; the defaults when there is no file.

    TableConfigError when the file is too big, not UTF-8 or not a valid config; an
    InfrastructureError when the filesystem fails to answer.
    """
    if not uri:
        return default_config()
    if uri.endswith("/"):
        uri = f"{uri}{table}.yaml"
    data = hadoop_fs.read_config(spark, uri, "table config", too_large_text(uri))
    if data is None:
        log.info("no table config at %s; using the defaults", uri)
        return default_config()
    # The Lambdas read and parse it with the same functions (ingestion/batching.py),
    # so they refuse a config this run would refuse, in the same words.
    return parse_table_config_text(config_text(data, uri), uri, yaml=yaml)


def run_ingest(spark, args: JobArgs) -> dict:
    """Write, audit and report one ingest; return the report (also written to report_uri).

    Raises ReportWriteError only when the report itself cannot be written.
    """
    report = Report(
        ingest_id=args.ingest_id,
        table=args.table,
        source_uris=list(args.sources),
        branch=args.branch,
    )
    dataset = bool(args.dataset_config_uri)
    try:
        if dataset:
            from spark_jobs.dataset_job import run_dataset

            run_dataset(spark, args, report, run_table=_run)
        else:
            _run(spark, args, report)
    except Exception as exc:
        report.fail(exc)
        report.judge(rejected_verdicts_of(exc))  # a lone source's verdict: the cause alone
        table = getattr(exc, "dataset_table", None)  # set by dataset_job._on_table
        if table:
            report.fail(exc, table=table)  # the reason names the dataset's table
        kind = "dataset" if dataset else "ingest"
        if report.outcome == REJECTED:  # a dataset's reason names the table
            log.warning(
                "%s %s rejected: %s", kind, args.ingest_id, report.reason if dataset else exc
            )
        else:
            log.exception("%s %s stopped by an error", kind, args.ingest_id)
    result = report.to_dict()
    write_report(spark, args.report_uri, result)
    return result


def _run(spark, args: JobArgs, report: Report):
    """Write and audit one table's sources on the branch; return (table ref, the write)."""
    clock = time.perf_counter()
    namespace, table = split_table_name(args.table)
    validate_branch(args.branch)
    validate_ingest_id(args.ingest_id)
    validate_identifier(args.catalog, "catalog")
    config = load_table_config(spark, args.table_config_uri, args.table)
    conf = configure_run_catalog(spark, args.catalog, args.run_catalog, args.branch)
    # Main's history for the checks that learn (docs/metric-history.md), read while the
    # sources are vetted and written; waited for where it is first needed.
    recording = metric_history_on(spark)
    needs = history_needs(config) if recording else {}
    history = HistoryRead(spark, CatalogTable(args.catalog, namespace, table), needs)
    try:
        return _write_and_audit(spark, args, report, config, conf, recording, history, clock)
    finally:
        history.wait()
        report.timings["history_read_s"] = round(history.seconds, 3)
        report.timings["history_wait_s"] = round(history.waited, 3)


def _write_and_audit(
    spark,
    args: JobArgs,
    report: Report,
    config: TableConfig,
    conf: dict[str, str],
    recording: bool,
    history: HistoryRead,
    clock: float,
):
    """The rest of `_run`, once the config is loaded and main's history is being read."""
    namespace, table = split_table_name(args.table)
    ref = CatalogTable(args.run_catalog, namespace, table)
    current = load_table(spark, ref)
    existing = spark_schema(spark, current) if current is not None else None
    reused = find_ingest_snapshot(current, args.ingest_id) if current is not None else None
    declared_all = declared_schema(spark, config.columns) if config.columns else None
    declared = declared_all if existing is None else None
    base = existing if existing is not None else declared
    reader = source_reader(config, existing, declared_all, args.table)
    check_parse_options(spark, config.parse)

    def plan_for(schema):
        return plan_schema(base, schema, config.schema_policy)

    step = report.timed("vet_s", clock)
    usable, frame = usable_sources(spark, args.sources, plan_for, args.all_or_nothing, reader)
    parse_check = parse_errors_check(config, has_parse_errors_column(frame))
    files = usable.uris
    observe_checks = observe_on_write(spark, sum(info.size for info in usable.files))
    step = report.timed("footer_s", step)
    if reused is not None:
        # A re-run of an ingest that already appended here: audit that snapshot again.
        plan_target, changes = existing, []
    else:
        plan = plan_for(data_schema(frame))
        if declared is not None:  # a new table takes the config's columns
            plan.create = True
            plan.changes = [
                {"change": "create_table", "column": f.name, "type": f.dataType.simpleString()}
                for f in plan.target.fields
            ]
        check_iceberg_types(spark, plan.target)
        check_partitioning(config.partition_by, plan.target)
        plan_target, changes = plan.target, plan.changes
    check_monitored_columns(config, {f.name: f.dataType for f in plan_target.fields})
    # History bounds become numbers before the checks compile: only they wait here.
    if uses_history_bounds(config):
        config, bound_notes = resolve_history_bounds(config, history.result())
    else:
        bound_notes = {}
    checks = compile_checks(spark, config, plan_target)  # config errors before any write
    split = split_for(
        checks,
        parse_check,
        ref,
        args.ingest_id,
        {hadoop_fs.path_key(uri): args.origin(usable.owner[uri]) for uri in usable.uris},
        first_lines(
            {hadoop_fs.path_key(uri): reader.format(uri).kind for uri in usable.uris},
            reader.csv.header,
        ),
    )
    if split is not None:
        split.capture = sum(info.size for info in usable.files) <= CAPTURE_MAX_BYTES
    watched = frozenset(history.wanted)
    profile = Profile(plan_target, watched) if recording else None
    report.table_schema = [
        {"name": f.name, "type": f.dataType.simpleString()} for f in plan_target.fields
    ]
    report.timed("plan_s", step)
    clock = step = report.timed("read_s", clock)

    if reused is None:
        prepare_table(spark, ref, plan, config.partition_by)
        if split is not None:  # the quarantine table follows the table's columns
            prepare_quarantine_table(spark, ref, plan.target)
        step = report.timed("prepare_s", step)
        observe = observation_aggregates(checks, profile) if observe_checks else None
        strict = read_strict(spark, files, reader) if parse_check is not None else None

        def append_checked(frame, files, strict=None):
            return _append_text_checked(
                spark,
                reader,
                files,
                lambda: append(
                    spark,
                    ref,
                    frame,
                    plan,
                    args.ingest_id,
                    files,
                    observe,
                    recorded=recorded_sources(args, usable),
                    strict=strict,
                    split=split,
                ),
            )

        try:
            written = append_checked(frame, files, strict)
        except InputRejectedError as exc:
            if classify(exc.__cause__ or exc).cause in EVALUATION_ERROR_CLASSES:  # a check's sql?
                config_error = expression_failing_on(
                    parsed_rows(frame).select(*plan.projection(data_schema(frame))), checks
                )
                if config_error is not None:
                    raise config_error from exc
            # In a batch, a file whose pages do not decode is left out, not the batch.
            if (
                len(args.sources) == 1
                or args.all_or_nothing
                or not leave_out_undecodable(spark, usable, reader)
            ):
                raise
            frame, files = read_sources(spark, usable.uris, reader), usable.uris
            written = append_checked(frame, files)
        if written.line_breaks:  # a quoted value never closed takes in the lines after it
            unclosed = unclosed_quote_error(spark, reader, files)
            if unclosed:  # the rows written on the branch are never published
                raise sources_rejected(usable, unclosed)
        step = report.timed("append_s", step)
        report.timings["observe_wait_s"] = written.observe_wait_s
    else:
        written = reused
        # The first run judged the sources' bytes while writing: judge them again.
        if recheck_reused(
            spark,
            ref,
            reused,
            usable,
            reader,
            recorded_sources(args, usable),
            leaves_out=len(args.sources) > 1 and not args.all_or_nothing,
        ):
            frame, files = read_sources(spark, usable.uris, reader), usable.uris
        if split is not None:
            split.counts = counts_of_reused(spark, split, frame, plan_target)
    report.snapshot_id, report.rows_written = written.snapshot_id, written.rows_written
    if split is not None:  # within the write's time: the rows set aside, after the table's
        report.timings["quarantine_s"] = round(split.seconds, 3)
    report.reused_snapshot, report.schema_changes = written.reused, changes
    report.branch_hash = nessie_branch_hash(conf, args.run_catalog, args.branch)
    report.timed("hash_s", step)
    clock = report.timed("write_s", clock)

    now, measured = utc_now(), []
    report.checks = _audit(spark, ref, written, checks, args, report, now, profile, measured)
    report.checks = explain_bounds(report.checks, bound_notes)
    if any(spec.kind in MONITOR_KINDS for spec in config.checks):
        report.checks += judge_monitors(config, measured, history.result(), now)
    if parse_check is not None:
        report.checks.insert(
            0, _parse_errors(spark, parse_check, written, frame, usable, args, reader)
        )
    if split is not None:  # its checks' rows were set aside: judged against the gate
        report.checks, report.quarantined_rows = judge_quarantine(
            report.checks, split, config.quarantine, report.rows_written
        )
    report.timed("audit_s", clock)
    report.settle()
    verdicts = rejected_verdicts(usable)
    if len(args.sources) > 1:  # a batch: each written file's own checks, in one pass
        start = time.perf_counter()
        failed = frozenset(check.name for check in report.checks if check.status == FAILED)
        verdicts.update(
            judge_sources(
                spark,
                usable,
                plan_target,
                # A history bound is about the whole drop: each file is judged on the rest;
                # a quarantine check's rows were set aside, not published.
                [
                    check
                    for check in checks
                    if check.spec.name not in bound_notes and check.spec.on_fail != QUARANTINE
                ],
                utc_now(),
                failed_on_main=_main_rows(spark, args, ref),
                batch_failed=failed,
                reader=reader,
                parse_errors=parse_check
                if parse_check is None or parse_check.spec.on_fail != QUARANTINE
                else None,
            )
        )
        if split is not None:
            verdicts = _set_aside_per_source(spark, split, verdicts, args)
        report.timed("audit_per_source_s", start)
    report.judge(verdicts)
    files = (
        {verdict.uri: verdict.rows for verdict in verdicts.values()}
        if len(args.sources) > 1
        else dict.fromkeys(recorded_sources(args, usable), report.rows_written)
    )
    rows = metric_rows(args.ingest_id, now, measured, report.checks, files)
    start = time.perf_counter()
    keep = kept_drops(history.wanted)
    if recording and record_metrics(spark, ref, args.ingest_id, rows, keep):
        # The merge publishes the branch's head: the data and the metrics of its audit.
        report.branch_hash = nessie_branch_hash(conf, args.run_catalog, args.branch)
    report.timed("record_metrics_s", start)
    return ref, written


def _append_text_checked(
    spark, reader: SourceReader, files: list[str], write: Callable[[], AppendResult]
) -> AppendResult:
    """`write()`, with the text sources' bytes as the judge of what went wrong: a write
    that failed for a cause not the input's, behind which a gzip stream is damaged, is
    the file's fault; a write that saw U+FFFD in a value is the file's fault when a UTF-8
    source holds bytes UTF-8 does not allow (Spark replaced them). Both InputRejectedError
    naming the file and where (the rows written on the branch are never published)."""
    try:
        written = write()
    except WapJobError as exc:
        damaged = damaged_text_error(spark, reader, files) if exc.infrastructure else None
        if damaged is not None:
            raise damaged from exc
        raise
    if written.replaced_text:
        invalid = encoding_error(spark, reader, files)
        if invalid is not None:
            raise invalid
    return written


def source_reader(
    config: TableConfig, existing: StructType | None, declared: StructType | None, table: str
) -> SourceReader:
    """How this run reads its sources; text values parse to the table's schema plus
    the columns the config declares that it lacks (or to the declared schema alone)."""
    schema = existing
    if declared is not None:
        have = {f.name.casefold() for f in existing.fields} if existing is not None else set()
        schema = StructType(
            [
                *(existing.fields if existing is not None else []),
                *(f for f in declared.fields if f.name.casefold() not in have),
            ]
        )
    return SourceReader(
        configured=config.format,
        csv=config.csv,
        parse=config.parse,
        schema=schema,
        table=table,
        config_name=table_config_key(table),
    )


def _parse_errors(
    spark,
    check: ParseErrorsCheck,
    written,
    frame: DataFrame,
    usable,
    args: JobArgs,
    reader: SourceReader,
):
    """The parse_errors result: the count the write observed (counted again by one query
    when it did not arrive, or the snapshot was reused), samples with their lines when
    there are any."""
    if not has_parse_errors_column(frame):
        return check.result(0)
    count, settled_by = written.parse_errors, WRITE
    if count is None:
        counted = frame.agg(parse_error_count().alias("n"), every_column(frame)).first()
        count, settled_by = int(counted["n"]), SCAN
    if not count:
        return check.result(0, settled_by=settled_by)
    files = {uri: args.origin(source) for uri, source in usable.owner.items()}
    samples = parse_error_samples(spark, frame, files, reader)
    return check.result(count, tuple(samples), settled_by=settled_by)


def _audit(
    spark,
    ref: CatalogTable,
    written,
    checks,
    args: JobArgs,
    report: Report,
    now,
    profile: Profile | None,
    measured: list,
):
    start = time.perf_counter()
    checked = {name for check in checks for name in check.spec.columns}
    dictionary = {
        check.column
        for check in checks
        if check.spec.kind == "accepted_values"
        and isinstance(check.types[check.column], StringType)
    }
    # Every column's metrics when they are the profile of a drop the write did not observe.
    columns = None if profile is not None and written.observed is None else checked
    stats = snapshot_stats(spark, written.table, written.snapshot_id, columns, dictionary)
    report.timed("audit_metrics_s", start)

    def new_rows():
        return rows_added(spark, ref, written)

    observed = written.observed
    if observed is not None and int(observed[ROWS]) != stats.record_count:
        # A re-executed task (shuffle retry, speculation) counted its rows twice.
        log.warning(
            "write observed %s rows, the snapshot added %s: auditing by scan",
            observed[ROWS],
            stats.record_count,
        )
        observed = None
    return run_audit(
        checks,
        stats,
        new_rows,
        now,
        _main_rows(spark, args, ref),
        label=args.ingest_id,
        timings=report.timings,
        observed=observed,
        profile=profile,
        measured=measured,
    )


def _main_rows(spark, args: JobArgs, ref: CatalogTable) -> Callable[[], DataFrame | None]:
    """main's rows of the table, read when called (None while main has no such table)."""

    def main_rows() -> DataFrame | None:
        main_ref = CatalogTable(args.catalog, ref.namespace, ref.table)
        return spark.table(main_ref.sql) if spark.catalog.tableExists(main_ref.sql) else None

    return main_rows


def metric_history_on(spark) -> bool:
    """Whether the audit records its metrics and reads their history
    (`spark.wap.audit.metric-history`, default true; docs/metric-history.md). Off, the
    learning checks cannot be judged and say so. Raises TableConfigError for a value it
    does not know."""
    mode = spark.conf.get(METRIC_HISTORY_CONF, "true").strip().lower()
    if mode not in ("true", "false"):
        raise TableConfigError(f"{METRIC_HISTORY_CONF} must be true or false, not {mode!r}")
    return mode == "true"


def observe_on_write(spark, source_bytes: int) -> bool:
    """Whether the checks file metrics never settle are counted during the write.

    Observing costs every written row (about 50 ns on local Spark); counting them in
    the scan instead costs one query (about 0.1 s) plus their columns, and nothing
    extra when the scan runs anyway (dirty data). So `auto` observes small inputs only:
    up to `spark.wap.audit.observe-max-bytes` of source parquet. Raises TableConfigError
    for a value it does not know.
    """
    mode = spark.conf.get(OBSERVE_CONF, "auto").strip().lower()
    if mode in ("true", "false"):
        return mode == "true"
    if mode != "auto":
        raise TableConfigError(f"{OBSERVE_CONF} must be auto, true or false, not {mode!r}")
    limit = spark.conf.get(OBSERVE_MAX_BYTES_CONF, str(DEFAULT_OBSERVE_MAX_BYTES)).strip()
    if not limit.isdigit():
        raise TableConfigError(f"{OBSERVE_MAX_BYTES_CONF} must be a number of bytes, not {limit!r}")
    return source_bytes <= int(limit)


INGEST, SMOKE, COMPACT = "ingest", "smoke", "compact"


def _parse(argv: list[str]) -> tuple[str, object]:
    """(which run: an ingest, `wap doctor`'s smoke run or a compaction, its parsed
    arguments); exits 2 on malformed arguments, before Spark starts."""
    from spark_jobs.smoke import check_smoke_args

    args = _or_exit(parse_run_args, argv)
    if isinstance(args, SmokeArgs):
        return SMOKE, check_smoke_args(args)
    if isinstance(args, CompactionArgs):
        return COMPACT, compaction.check_job_args(args)
    return INGEST, args


def run(spark, argv: list[str]) -> dict:
    """One run on `spark`: an ingest, `wap doctor`'s smoke run (`--smoke ...`) or a
    compaction (`--compact ...`)."""
    return _run_parsed(spark, *_parse(argv))


def _run_parsed(spark, kind: str, args) -> dict:
    from spark_jobs.smoke import run_smoke

    # The run's catalog client (its secret's ARN is in the arguments), before any catalog.
    catalog_secret.use_catalog_secret(args.catalog_credentials_secret)

    if kind == SMOKE:
        return run_smoke(spark, args)
    if kind == COMPACT:
        return compaction.run_job(spark, args)
    return run_ingest(spark, args)


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry point: 0 when a report was written (for a smoke run: and every
    step passed), 1 when not."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    argv = sys.argv[1:] if argv is None else argv
    kind, args = _parse(argv)
    from pyspark.sql import SparkSession

    if kind == SMOKE:
        name = "wap-doctor"
    elif kind == COMPACT:
        name = f"wap-compact-{args.run_id}"
    else:
        name = f"wap-{args.ingest_id[:16]}"
    spark = SparkSession.builder.appName(name).getOrCreate()
    try:
        report = _run_parsed(spark, kind, args)
    except ReportWriteError as exc:
        log.error("%s", exc)
        return 1
    if kind == SMOKE:
        return 0 if report["ok"] else 1
    if kind == COMPACT:
        log.info(
            "compaction %s: %s", args.run_id, "passed" if report["passed"] else report["reason"]
        )
        return 0
    log.info(
        "ingest %s: %s%s",
        args.ingest_id,
        report["outcome"],
        f" ({report['reason']})" if report["reason"] else "",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
