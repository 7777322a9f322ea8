"""The audit report (`contracts.report.AuditReport`, `report_version: 1`): built up during
a run, written for every outcome through Hadoop's FileSystem (s3:// on EMR, file:// locally).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from typing import Any

from contracts import report as contract
from contracts.metric_history import HISTORY_KEY
from contracts.table_config import MONITOR_KINDS, QUARANTINE_GATE
from spark_jobs import hadoop_fs
from spark_jobs.errors import ReportWriteError, WapJobError, as_job_error, describe

REPORT_VERSION = contract.REPORT_VERSION
PASSED, FAILED_OUTCOME, REJECTED = contract.PASSED, contract.FAILED, contract.REJECTED
# Not the input's fault (storage, Nessie, the cluster, anything unknown): worth a retry.
ERROR_OUTCOME = contract.ERROR
ERROR_REASON_PREFIX = "job error: "


def utc_now() -> dt.datetime:
    """Naive UTC now (the job compares naive UTC values throughout)."""
    # Not dt.UTC: EMR Serverless images run Python 3.9 (see README).
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)  # noqa: UP017


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Report:
    """One run's report as it is built up; `to_report` gives the contract's AuditReport."""

    ingest_id: str
    table: str
    source_uris: list[str]
    branch: str
    started_at: dt.datetime = field(default_factory=utc_now)
    branch_hash: str | None = None
    snapshot_id: int | None = None
    rows_written: int = 0
    reused_snapshot: bool = False
    schema_changes: list[dict] = field(default_factory=list)
    # The table's columns after this run's write (name, Spark type), for lineage.
    table_schema: list[dict] = field(default_factory=list)
    checks: list[contract.CheckResult] = field(default_factory=list)
    outcome: str | None = None
    reason: str | None = None
    reason_code: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # Each source's own verdict, in source order (filled in by `judge`).
    sources: list[contract.SourceVerdict] = field(default_factory=list)
    # A multi-table dataset: what it wrote to each table (spark_jobs/dataset_job.py).
    tables: list[contract.TableWrite] = field(default_factory=list)
    # Rows set aside in the quarantine table by checks with `on_fail: quarantine`.
    quarantined_rows: int = 0
    _clock: float = field(default_factory=time.perf_counter)

    def timed(self, key: str, since: float) -> float:
        """Record seconds since `since` under `key`; return now."""
        now = time.perf_counter()
        self.timings[key] = round(now - since, 3)
        return now

    def settle(self) -> None:
        """Outcome from the checks: failed iff an error-severity check failed or errored."""
        bad = [c for c in self.checks if c.blocking]
        if not bad:
            self.outcome, self.reason, self.reason_code = PASSED, None, None
            return
        self.outcome, self.reason_code = FAILED_OUTCOME, contract.AUDIT_FAILED_CODE
        parts = [
            f"{c.name} ({c.message})"
            if _learned(c)
            else f"{c.name} ({c.status}"
            + (f", {c.violations} violation(s)" if c.violations is not None else "")
            + ")"
            for c in bad
        ]
        self.reason = f"{len(bad)} error-severity check(s) did not pass: " + "; ".join(parts)

    def fail(self, exc: BaseException, table: str | None = None) -> None:
        """Record why the run stopped: `rejected` when the input caused `exc` (errors.py
        decides), `error` with reason "job error: <cause>" otherwise. `table`: the table of
        a dataset it stopped on, named in the reason ("job error: <table>: <cause>"), which
        is read without the report."""
        if not isinstance(exc, WapJobError):
            exc = as_job_error(exc, describe(exc))
        cause = f"{table}: {exc}" if table else str(exc)
        if exc.infrastructure:
            self.outcome, self.reason = ERROR_OUTCOME, f"{ERROR_REASON_PREFIX}{cause}"
        else:
            self.outcome, self.reason = REJECTED, cause
        self.reason_code = exc.reason_code

    def judge(self, verdicts: dict[str, contract.SourceVerdict]) -> None:
        """Record each source's verdict (`verdicts` by source URI; a source without one
        follows the run's outcome). A run whose checks pass fails when a source fails its
        checks on its own."""
        failing = [v for v in verdicts.values() if v.status == contract.SOURCE_FAILED]
        if failing and self.outcome == PASSED:
            named = "; ".join(f"{_name(v.uri)} ({v.why})" for v in failing[:10])
            self.outcome, self.reason_code = FAILED_OUTCOME, contract.AUDIT_FAILED_CODE
            self.reason = (
                f"{len(failing)} of {len(self.source_uris)} source files fail "
                f"their checks on their own: {named}"
            )
        self.sources = [verdicts.get(uri) or self._own_verdict(uri) for uri in self.source_uris]
        self.sources = [v for v in self.sources if v is not None]

    def _own_verdict(self, uri: str) -> contract.SourceVerdict | None:
        """A single source's verdict: the run's outcome (none for an infrastructure error)."""
        status = {
            PASSED: contract.SOURCE_PASSED,
            FAILED_OUTCOME: contract.SOURCE_FAILED,
            REJECTED: contract.SOURCE_REJECTED,
        }.get(self.outcome or "")
        if status is None or len(self.source_uris) != 1:
            return None
        failed = tuple(c.name for c in self.checks if c.blocking)
        return contract.SourceVerdict(
            uri=uri,
            status=status,
            rows=self.rows_written,
            failed_checks=failed if status != REJECTED else (),
            reason=self.reason if status == REJECTED else None,
        )

    def to_report(self) -> contract.AuditReport:
        """The finished report (its `total_s` timing is taken now).

        Built, not parsed: checking it here could only lose the report of a run that
        went wrong; its readers check it (`AuditReport.from_dict`).
        """
        if self.outcome is None:  # settle() or fail() ends every run; never write a null
            self.fail(RuntimeError("the run ended without settling an outcome"))
        self.timings.setdefault("total_s", round(time.perf_counter() - self._clock, 3))
        return contract.AuditReport(
            ingest_id=self.ingest_id,
            table=self.table,
            source_uris=tuple(self.source_uris),
            sources=tuple(self.sources),
            branch=self.branch,
            branch_hash=self.branch_hash,
            snapshot_id=self.snapshot_id,
            rows_written=self.rows_written,
            quarantined_rows=self.quarantined_rows,
            reused_snapshot=self.reused_snapshot,
            schema_changes=tuple(self.schema_changes),
            table_schema=tuple(self.table_schema),
            checks=tuple(self.checks),
            outcome=self.outcome,
            reason=self.reason,
            reason_code=self.reason_code,
            timings=dict(self.timings),
            started_at=_iso(self.started_at),
            finished_at=_iso(utc_now()),
            tables=tuple(self.tables),
        )

    def to_dict(self) -> dict[str, Any]:
        """The report's JSON (docs/contracts.md)."""
        return self.to_report().to_dict()


def _learned(check: contract.CheckResult) -> bool:
    """A check judged against published history (its message says the value, the
    expected range and where it came from), or the quarantine gate (how many rows of
    how many, above which bound): the message is the reason people need."""
    learned = check.kind in (*MONITOR_KINDS, QUARANTINE_GATE) or (
        isinstance(check.threshold, dict) and HISTORY_KEY in check.threshold
    )
    return learned and bool(check.message)


def _name(uri: str) -> str:
    return uri.rstrip("/").rsplit("/", 1)[-1]


def write_report(spark, uri: str, report: dict) -> None:
    """Write `report` as JSON to `uri`; raise ReportWriteError when that fails."""
    data = json.dumps(report, indent=2, sort_keys=False, default=str).encode()
    try:
        hadoop_fs.write_bytes(spark, uri, data)
    except Exception as exc:
        raise ReportWriteError(f"cannot write the report to {uri}: {describe(exc)}") from exc
