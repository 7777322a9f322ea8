"""The audit engine: metrics first, then one aggregation pass, then samples if needed.

1. every check tries to settle from the snapshot's file metrics (no data read);
2. the rest take their counts from ONE aggregation pass over exactly the new rows:
   preferably the pass the write itself made (`observation_aggregates`, computed by
   Spark's `observe` as the rows streamed into the table, trusted only when its row
   count equals the snapshot's `added-records`, so a retried task cannot have counted
   twice), otherwise one `agg` over an incremental scan of the snapshot (Spark prunes
   it to the referenced columns);
3. only when something failed, one more query picks up to `SAMPLES` violating
   rows per failed check; it is LIMITed, so with many violations Spark stops after a
   fraction of the data (see `_samples` for the rare case that needs a second one).
`unique` with `against_main` also looks the batch's keys up on main: that needs
main's rows, so it is its own query, run only when such a check is configured.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import math
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from contracts.report import ERROR, FAILED, SCAN, WRITE, CheckResult
from spark_jobs.checks import Check, col
from spark_jobs.errors import INFRASTRUCTURE, as_job_error, classify, describe
from spark_jobs.identifiers import quote
from spark_jobs.metrics import SnapshotStats
from spark_jobs.profile import Measured, Profile

log = logging.getLogger(__name__)
SAMPLES = 5
ROWS = "__rows"
SAMPLE_COLUMNS = 20
SAMPLE_LEADING_COLUMNS = 3
SAMPLE_SCAN_LIMIT = 50  # violating rows read per failed check before the scan stops
SAMPLE_SCAN_CAP = 20000
SAMPLE_TEXT = 200


def job_group_ids(label: str) -> dict[str, str]:
    """Spark job groups of the audit's queries, so tests and the UI can count them."""
    return {
        "scan": f"wap-audit-scan-{label}",
        "samples": f"wap-audit-samples-{label}",
        "main": f"wap-audit-main-{label}",
    }


@contextmanager
def job_group(spark, group: str, description: str):
    """Run the block's Spark jobs under `group`, then restore the caller's group."""
    sc = spark.sparkContext
    keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    previous = {key: sc.getLocalProperty(key) for key in keys}
    sc.setJobGroup(group, description)
    try:
        yield
    finally:
        for key, value in previous.items():
            sc.setLocalProperty(key, value)


def observed_checks(checks: list[Check]) -> list[int]:
    """Indexes of the checks counted during the write: those file metrics will not
    decide anyway (a check metrics cannot settle after all, e.g. a range some values
    break, goes to the scan pass)."""
    return [
        index
        for index, check in enumerate(checks)
        if check.observable and not check.metrics_may_settle()
    ]


def count_aggregates(
    checks: list[Check], indexes: list[int], profile: Profile | None = None
) -> list[Column]:
    """The row count (`ROWS`), the aggregates of `checks[i]` for each index, aliased
    `c<i>_...`, and the profile's: what one pass over the new rows computes, by scan or
    by observation."""
    aggregates = [F.count(F.lit(1)).alias(ROWS)]
    for index in indexes:
        aggregates += checks[index].aggregates(f"c{index}_")
    return aggregates + (profile.aggregates() if profile is not None else [])


def observation_aggregates(checks: list[Check], profile: Profile | None = None) -> list[Column]:
    """Aggregates of `observed_checks` and the profile, for `DataFrame.observe` on the
    write."""
    return count_aggregates(checks, observed_checks(checks), profile)


def run_audit(
    checks: list[Check],
    stats: SnapshotStats | None,
    new_rows: Callable[[], DataFrame],
    now: dt.datetime,
    main_rows: Callable[[], DataFrame | None] | None = None,
    label: str = "run",
    timings: dict | None = None,
    observed: dict | None = None,
    profile: Profile | None = None,
    measured: list[Measured] | None = None,
) -> list[CheckResult]:
    """Evaluate `checks` on the rows of one snapshot; results in config order.

    `observed`: the values of `observation_aggregates(checks, profile)` from the write,
    only when they cover exactly this snapshot's rows. `profile`: its metrics go to
    `measured`, from the observation or else from the one aggregation pass (which then
    runs even when no check needs it). Queries run in the job groups of
    `job_group_ids(label)`; seconds per phase go to `timings`.
    """
    queries = _Queries(job_group_ids(label), timings if timings is not None else {})
    results, pending = _settle_without_reading(checks, stats, now, observed)
    profiled = measured if measured is not None else []
    scan_profile = None
    if profile is not None and observed is not None:
        profiled.extend(profile.measure(observed, int(observed[ROWS])))
    elif profile is not None:
        # Too large to observe: exact file metrics, then the watched columns by scan.
        from_files = profile.from_file_metrics(stats) if stats is not None else []
        profiled.extend(from_files)
        covered = {(m.metric, m.column) for m in from_files}
        scan_profile = profile.for_scan(covered) if stats is not None else profile
    failed_before_scan = _failed_predicates(checks, results)
    rows = new_rows() if pending or failed_before_scan or scan_profile else None
    early = _sample_alongside_scan(rows, checks, failed_before_scan, pending, queries)
    if pending or scan_profile:
        results.update(_scan(checks, pending, rows, now, queries, early, scan_profile, profiled))
        results.update(_look_up_on_main(checks, pending, results, rows, main_rows, queries))
    _add_samples(checks, results, rows, early, queries)
    # The scan's value of a metric replaces the file metrics' (one per metric and column).
    profiled[:] = {(m.metric, m.column): m for m in profiled}.values()
    return [results[index] for index in range(len(checks))]


@dataclass(frozen=True)
class _Queries:
    """Runs each audit query under its Spark job group (`groups[phase]`) and adds its
    seconds to `timings["audit_<phase>_s"]`. A phase can run more than once (sampling
    alongside the scan and after it, a lookup per check against main): its times add up."""

    groups: dict[str, str]
    timings: dict

    @contextmanager
    def run(self, rows: DataFrame, phase: str, description: str):
        with job_group(rows.sparkSession, self.groups[phase], description):
            start = time.perf_counter()
            try:
                yield
            finally:
                key = f"audit_{phase}_s"
                self.timings[key] = round(
                    self.timings.get(key, 0.0) + time.perf_counter() - start, 3
                )


def _settle_without_reading(
    checks: list[Check], stats: SnapshotStats | None, now: dt.datetime, observed: dict | None
) -> tuple[dict[int, CheckResult], list[int]]:
    """The checks the snapshot's file metrics or the write's observation decide, and the
    indexes of the rest. A check against main is always left pending: its batch count
    is only half of its answer."""
    results: dict[int, CheckResult] = {}
    pending = []
    in_observation = set(observed_checks(checks)) if observed is not None else set()
    for index, check in enumerate(checks):
        settled = check.settle(stats, now) if stats is not None else None
        if settled is None and index in in_observation:
            settled = replace(
                check.finish(observed, f"c{index}_", int(observed[ROWS]), now), settled_by=WRITE
            )
        if settled is None or check.needs_main:
            pending.append(index)
        else:
            results[index] = settled
    return results, pending


def _scan(
    checks: list[Check],
    pending: list[int],
    rows: DataFrame,
    now: dt.datetime,
    queries: _Queries,
    early: Future | None,
    profile: Profile | None = None,
    measured: list[Measured] | None = None,
) -> dict[int, CheckResult]:
    """The pending checks' counts (and the profile's metrics, into `measured`) from one
    aggregation pass over the new rows."""
    try:
        with queries.run(rows, "scan", "audit: one aggregation pass"):
            return _one_pass(checks, pending, rows, now, profile, measured)
    except Exception as exc:  # e.g. an expression that fails at runtime under ANSI mode
        log.exception("audit aggregation failed")
        raise_if_infrastructure(exc, "the audit scan failed", early)
        return {
            index: _errored(checks[index], f"evaluation failed: {describe(exc)}")
            for index in pending
        }


def _look_up_on_main(
    checks: list[Check],
    pending: list[int],
    results: dict[int, CheckResult],
    rows: DataFrame,
    main_rows: Callable[[], DataFrame | None] | None,
    queries: _Queries,
) -> dict[int, CheckResult]:
    """The checks against main, their batch counts completed with the keys on main
    (a check whose batch count already errored stays as it is)."""
    looked_up = {}
    for index in pending:
        check = checks[index]
        if not check.needs_main or results[index].status == ERROR:
            continue
        try:
            with queries.run(rows, "main", "audit: keys already on main"):
                looked_up[index] = _against_main(check, results[index], rows, main_rows)
        except Exception as exc:
            log.exception("lookup against main failed")
            raise_if_infrastructure(exc, "the lookup of keys on main failed")
            looked_up[index] = _errored(check, f"lookup on main failed: {describe(exc)}")
    return looked_up


def _add_samples(
    checks: list[Check],
    results: dict[int, CheckResult],
    rows: DataFrame | None,
    early: Future | None,
    queries: _Queries,
) -> None:
    """Put up to SAMPLES violating rows on each failed check, ahead of any rows the
    lookup on main found."""
    failed = _failed_predicates(checks, results)
    if not failed:
        return
    try:
        picked = early.result() if early is not None else None
        with queries.run(rows, "samples", "audit: violating rows"):
            found = _samples(
                rows, checks, failed, {i: results[i].violations for i in failed}, picked
            )
    except Exception:  # samples help a human; their absence must not hide the counts
        log.exception("sampling violating rows failed")
        found = {}
    for index, samples in found.items():
        result = results[index]
        results[index] = replace(result, samples=(*samples, *result.samples)[:SAMPLES])


def raise_if_infrastructure(exc: BaseException, what: str, early: Future | None = None) -> None:
    """An audit query that storage or the catalog broke decided nothing about the data:
    the run is an error, not a failed check. Only causes known to be infrastructure
    count here; others (a check's SQL failing on a value under ANSI mode) stay errors
    of that check."""
    verdict = classify(exc)
    if verdict.kind == INFRASTRUCTURE and verdict.known:
        if early is not None:
            early.result()  # no query of this run may outlive it (local mode reuses Spark)
        raise as_job_error(exc, f"{what}: {describe(exc)}") from exc


def _errored(check: Check, message: str) -> CheckResult:
    return replace(check.result(None, SCAN), status=ERROR, message=message)


def _one_pass(
    checks: list[Check],
    pending: list[int],
    rows: DataFrame,
    now: dt.datetime,
    profile: Profile | None = None,
    measured: list[Measured] | None = None,
) -> dict[int, CheckResult]:
    values = rows.agg(*count_aggregates(checks, pending, profile)).first().asDict()
    if profile is not None and measured is not None:
        measured.extend(profile.measure(values, int(values[ROWS])))
    return {
        index: checks[index].finish(values, f"c{index}_", int(values[ROWS]), now)
        for index in pending
    }


def keys_on_main(check: Check, rows: DataFrame, main: DataFrame) -> DataFrame:
    """The rows of `rows` whose key (the unique check's columns) is already on main."""
    condition = None
    for key in check.spec.columns:
        equal = F.col("b." + quote(key)) == F.col("m." + quote(key))
        condition = equal if condition is None else condition & equal
    main_keys = main.select(*[col(key) for key in check.spec.columns]).distinct().alias("m")
    return rows.where(check._keys_present()).alias("b").join(main_keys, condition, "left_semi")


def _against_main(
    check: Check,
    batch: CheckResult,
    rows: DataFrame,
    main_rows: Callable[[], DataFrame | None] | None,
) -> CheckResult:
    """Add the batch rows whose key is already on main to the batch's duplicates."""
    main = main_rows() if main_rows is not None else None
    if main is None:
        return batch
    hits = keys_on_main(check, rows, main)
    found = hits.count()
    if not found:
        return batch
    violations = (batch.violations or 0) + found
    return replace(
        batch,
        violations=violations,
        observed=violations,
        status=FAILED,
        settled_by=SCAN,
        samples=tuple(
            jsonable_row(row.asDict(recursive=True)) for row in hits.limit(SAMPLES).collect()
        ),
    )


@dataclass
class _Picked:
    """What one LIMITed sampling query returned: rows with a `__v<i>` flag per check."""

    checks: set[int]
    columns: list[str]
    records: list[dict]
    complete: bool  # fewer rows than the limit: every violating row was seen


def _failed_predicates(checks: list[Check], results: dict[int, CheckResult]) -> dict[int, Column]:
    """The violation predicate of each decided check that failed and has one."""
    return {
        index: checks[index].violation()
        for index, result in sorted(results.items())
        if result.status == FAILED and checks[index].violation() is not None
    }


def _sample_alongside_scan(
    rows: DataFrame | None,
    checks: list[Check],
    known: dict[int, Column],
    pending: list[int],
    queries: _Queries,
) -> Future | None:
    """Start the sampling query in the background when a check has already failed.

    Its samples are needed whatever the scan finds, and the sampling query is mostly
    Spark's fixed cost per query, which then overlaps the scan. The pending checks
    ride along in case they fail too (their rows are then sampled by the same query).
    """
    if rows is None or not pending or not known:
        return None
    riders = {
        index: checks[index].violation()
        for index in pending
        if checks[index].per_row_violation
        and not checks[index].needs_main
        and checks[index].violation() is not None
    }
    predicates = dict(sorted({**known, **riders}.items()))

    def pick() -> _Picked | None:
        try:
            with queries.run(rows, "samples", "audit: violating rows"):
                return _pick(rows, checks, predicates)
        except Exception:  # the audit then samples after the scan, as without this
            log.exception("sampling violating rows alongside the scan failed")
            return None

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wap-audit-samples")
    try:
        return pool.submit(pick)
    finally:
        pool.shutdown(wait=False)


def _sample_columns(rows: DataFrame, checks: list[Check], indexes) -> list[str]:
    """The checked columns plus the table's leading columns (usually its keys): wide
    columns such as comments would make sampling much dearer than the aggregation."""
    wanted: list[str] = []
    for index in indexes:
        wanted += [c for c in checks[index].sample_columns() if c not in wanted]
    leading = [c for c in rows.columns[:SAMPLE_LEADING_COLUMNS] if c not in wanted]
    return leading[: max(0, SAMPLE_COLUMNS - len(wanted))] + wanted


def _pick(rows: DataFrame, checks: list[Check], predicates: dict) -> _Picked:
    """The LIMITed query: Spark stops reading once it holds SAMPLE_SCAN_LIMIT violating
    rows per check, for data with many violations a fraction of one partition."""
    columns = _sample_columns(rows, checks, predicates)
    limit = min(SAMPLE_SCAN_LIMIT * len(predicates), SAMPLE_SCAN_CAP)
    records = [
        row.asDict(recursive=True)
        for row in _flagged(rows, columns, predicates).limit(limit).collect()
    ]
    return _Picked(set(predicates), columns, records, complete=len(records) < limit)


def _samples(
    rows: DataFrame,
    checks: list[Check],
    predicates: dict,
    violations: dict[int, int | None],
    picked: _Picked | None = None,
) -> dict[int, list[dict]]:
    """Up to SAMPLES violating rows per failed check.

    First the LIMITed query (`picked`, when it already ran alongside the scan for these
    checks and columns). Only when that limit was hit and a check (with rare violations
    next to frequent ones) is still short, one more query picks exactly SAMPLES per
    such check.
    """
    wanted = _sample_columns(rows, checks, predicates)
    if picked is None or not (
        set(predicates) <= picked.checks and set(wanted) <= set(picked.columns)
    ):
        picked = _pick(rows, checks, predicates)
    samples: dict[int, list[dict]] = {index: [] for index in predicates}
    for record in picked.records:
        shown = {name: record[name] for name in wanted}
        for index in predicates:
            if record[f"__v{index}"] and len(samples[index]) < SAMPLES:
                samples[index].append(jsonable_row(shown))
    if picked.complete:
        return samples
    short = {
        index: pred
        for index, pred in predicates.items()
        if len(samples[index]) < min(SAMPLES, violations.get(index) or SAMPLES)
    }
    if short:
        exploded = _flagged(rows, wanted, short).select(
            *[col(c) for c in wanted],
            F.explode(
                F.array_compact(F.array(*[F.when(F.col(f"__v{i}"), F.lit(i)) for i in short]))
            ).alias("__check"),
        )
        per_check = Window.partitionBy("__check").orderBy("__check")
        for index in short:
            samples[index] = []
        for row in (
            exploded.withColumn("__n", F.row_number().over(per_check))
            .where(F.col("__n") <= SAMPLES)
            .collect()
        ):
            record = row.asDict(recursive=True)
            index = record.pop("__check")
            record.pop("__n")
            samples[index].append(jsonable_row(record))
    return samples


def _flagged(rows: DataFrame, wanted: list[str], predicates: dict) -> DataFrame:
    """`wanted` columns plus a `__v<i>` flag per check, violating rows only."""
    flags = [F.col(f"__v{i}") for i in predicates]
    any_flag = flags[0]
    for flag in flags[1:]:
        any_flag = any_flag | flag
    return rows.select(
        *[col(c) for c in wanted], *[pred.alias(f"__v{i}") for i, pred in predicates.items()]
    ).where(any_flag)


def jsonable_row(row: dict) -> dict:
    """A sampled row as the report keeps it (see `_jsonable`)."""
    return {key: _jsonable(value) for key, value in row.items()}


def _jsonable(value: Any) -> Any:
    """Report-safe values: ISO dates, exact decimals, no NaN, short strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return "base64:" + base64.b64encode(bytes(value[:SAMPLE_TEXT])).decode()
    if isinstance(value, str) and len(value) > SAMPLE_TEXT:
        return value[:SAMPLE_TEXT] + "..."
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
