"""One ingest's audit report as `wap show` and the dashboard show it: its checks (status,
violations, threshold, samples), its files' verdicts, its tables, outcome and reason.

Built once from the typed report (contracts/report.py) or, for a report kept as JSON
(older tools, the dashboard's tests), from that JSON, tolerating what a report of an
ingest that stopped early lacks. The CLI and the dashboard only format what is here: how
a value is written (`null` or `-`, redacted or not) is theirs, what the report says is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts.report import (
    PASSED,
    SOURCE_PASSED,
    SOURCE_REJECTED,
    AuditReport,
    CheckResult,
    SourceVerdict,
    samples_title,
)
from ingestion.ledger import Record

# The job's reason code for a file whose schema the table's schema policy refuses
# (spark_jobs.errors.SchemaPolicyError).
SCHEMA_POLICY_CODE = "schema_policy"
QUARANTINED_SAMPLES_TITLE = "Quarantined rows (set aside, not published)"
_WRITTEN_OUTCOMES = ("passed", "failed")  # the run wrote its rows, then audited them
# Failures first: error-severity before warn (a check whose severity is unknown, last).
_SEVERITY_RANK = {"error": 0, "failed": 0}


@dataclass(frozen=True)
class CheckLine:
    """One check of the report."""

    name: str | None
    kind: str | None
    severity: str | None
    status: str | None
    columns: tuple[str, ...] = ()
    violations: int | None = None  # None: not counted (or not a count)
    threshold: Any = None
    observed: Any = None
    samples: tuple[Any, ...] = ()
    message: str | None = None
    quarantined_rows: int | None = None  # a quarantine check: the rows it set aside

    @classmethod
    def of(cls, check: CheckResult | Mapping[str, Any]) -> CheckLine:
        if isinstance(check, CheckResult):
            return cls(
                check.name,
                check.kind,
                check.severity,
                check.status,
                check.columns,
                check.violations,
                check.threshold,
                check.observed,
                check.samples,
                check.message,
                check.quarantined_rows,
            )
        violations = check.get("violations")
        quarantined = check.get("quarantined_rows")
        return cls(
            check.get("name"),
            check.get("kind"),
            check.get("severity"),
            check.get("status"),
            tuple(check.get("columns") or ()),
            violations if isinstance(violations, int) else None,
            check.get("threshold"),
            check.get("observed"),
            tuple(check.get("samples") or ()),
            check.get("message"),
            quarantined if isinstance(quarantined, int) else None,
        )

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def finding(self) -> str:
        """What the check found, in one line: its message when it has one (a learned
        band, a history bound), else its count of violating rows."""
        if self.message:
            return self.message
        return f"{self.violations} row(s)" if self.violations is not None else str(self.status)

    @property
    def samples_title(self) -> str:
        """What its samples are called (violating rows, unparsable lines, or rows a quarantine
        check set aside) and its name."""
        if self.quarantined_rows:
            return f"{QUARANTINED_SAMPLES_TITLE}: {self.name}"
        return f"{samples_title(str(self.kind))}: {self.name}"

    @property
    def sample_columns(self) -> list[str]:
        """Every key of its samples, in the order they first appear."""
        return list(dict.fromkeys(key for row in self.samples for key in row))


@dataclass(frozen=True)
class FileLine:
    """One source file's own verdict in a run over several files."""

    uri: str | None
    status: str | None
    rows: int | None = None
    failed_checks: tuple[str, ...] = ()
    reason: str | None = None

    @classmethod
    def of(cls, verdict: SourceVerdict | Mapping[str, Any]) -> FileLine:
        if isinstance(verdict, SourceVerdict):
            return cls(
                verdict.uri, verdict.status, verdict.rows, verdict.failed_checks, verdict.reason
            )
        rows = verdict.get("rows")
        return cls(
            verdict.get("uri"),
            verdict.get("status"),
            rows if isinstance(rows, int) else None,
            tuple(verdict.get("failed_checks") or ()),
            verdict.get("reason"),
        )

    @property
    def passed(self) -> bool:
        return self.status == SOURCE_PASSED

    @property
    def cause(self) -> str | None:
        """What held the file back: its failed checks, else the job's reason."""
        return ", ".join(self.failed_checks) or self.reason

    @property
    def why(self) -> str:
        """`cause`, else its verdict."""
        return self.cause or str(self.status)


@dataclass(frozen=True)
class ReportView:
    """What a report says, for display. `ReportView.of(None)` is the view of no report."""

    present: bool
    outcome: str | None = None
    reason: str | None = None
    reason_code: str | None = None
    rows_written: int | None = None
    checks: tuple[CheckLine, ...] = ()
    files: tuple[FileLine, ...] = ()
    schema_changes: tuple[Any, ...] = ()
    # A multi-table dataset: the rows the run wrote to each table.
    written_per_table: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, report: AuditReport | Mapping[str, Any] | None) -> ReportView:
        if report is None:
            return cls(present=False)
        if isinstance(report, AuditReport):
            return cls(
                present=True,
                outcome=report.outcome,
                reason=report.reason,
                reason_code=report.reason_code,
                rows_written=report.rows_written,
                checks=tuple(map(CheckLine.of, report.checks)),
                files=tuple(map(FileLine.of, report.sources)),
                schema_changes=report.schema_changes,
                written_per_table={t.table: t.rows_written for t in report.tables},
            )
        return cls(
            present=bool(report),
            outcome=report.get("outcome"),
            reason=report.get("reason"),
            reason_code=report.get("reason_code"),
            rows_written=report.get("rows_written"),
            checks=tuple(map(CheckLine.of, report.get("checks") or ())),
            files=tuple(map(FileLine.of, report.get("sources") or ())),
            schema_changes=tuple(report.get("schema_changes") or ()),
            written_per_table={t["table"]: t.get("rows_written") for t in report["tables"]}
            if report.get("tables")
            else {},
        )

    @property
    def failed_checks(self) -> list[CheckLine]:
        """The checks that did not pass (failed, or could not be evaluated), in report order."""
        return [check for check in self.checks if not check.passed]

    @property
    def published_text(self) -> str:
        """How a published run went: how many checks it passed, and its warnings (a
        check that did not pass but only warns); never "every check" when none ran."""
        if not self.present:
            return "published"
        if not self.checks:
            return "no check ran"
        warnings = self.failed_checks
        passed = f"passed {len(self.checks) - len(warnings)} of {len(self.checks)} check(s)"
        if not warnings:
            return f"passed all {len(self.checks)} check(s)"
        return f"{passed}; warning: " + "; ".join(
            f"{check.name}: {check.finding}" for check in warnings
        )

    @property
    def sampled_checks(self) -> list[CheckLine]:
        """The checks that did not pass and came with sample rows (or lines)."""
        return [check for check in self.failed_checks if check.samples]

    def checks_failures_first(self) -> list[CheckLine]:
        """The checks, failures first (error before warn), then in report order."""

        def rank(item: tuple[int, CheckLine]) -> tuple[int, int, int]:
            index, check = item
            if check.passed:
                return (1, 0, index)
            return (0, _SEVERITY_RANK.get(check.severity or "", 1), index)

        return [check for _, check in sorted(enumerate(self.checks), key=rank)]

    @property
    def batch_files(self) -> tuple[FileLine, ...]:
        """The files of a run over several files (none for a run over one)."""
        return self.files if len(self.files) >= 2 else ()

    @property
    def refused_by_schema_policy(self) -> bool:
        return self.reason_code == SCHEMA_POLICY_CODE

    @property
    def wrote_rows(self) -> bool:
        """Whether the run wrote its rows (then audited them), so compared the schemas."""
        return self.outcome in _WRITTEN_OUTCOMES

    @property
    def rejected_files(self) -> list[FileLine]:
        return [verdict for verdict in self.files if verdict.status == SOURCE_REJECTED]


def reason_of(record: Record, report: ReportView) -> str | None:
    """Why the ingest ended as it did: the ledger's reason, else the report's."""
    return record.error or report.reason


def rows_written_of(record: Record, report: ReportView) -> int | None:
    """The rows the ingest wrote: the ledger's count, else the report's."""
    return report.rows_written if record.rows_written is None else record.rows_written
