"""The audit report: written by the Spark job for every outcome, read by job_status, the
alert, `wap show` and the dashboard (docs/contracts.md, "Audit report")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts.fields import ContractError, Reader

REPORT_VERSION = 1
KNOWN_REPORT_VERSIONS = (1,)

# Report outcomes.
PASSED = "passed"
FAILED = "failed"
REJECTED = "rejected"
ERROR = "error"  # infrastructure, not the input: retried, then JOB_FAILED
# The reason code of a `failed` run: error-severity checks did not pass (the reason lists them).
AUDIT_FAILED_CODE = "audit_failed"
OUTCOMES = (PASSED, FAILED, REJECTED, ERROR)

# Check statuses (`error`: the check itself could not be evaluated), severities, and
# what settled a check.
CHECK_STATUSES = (PASSED, FAILED, ERROR)
# A failing `error` check holds the drop; a `warn` one is reported and published.
SEVERITY_ERROR, SEVERITY_WARN = "error", "warn"
SEVERITIES = (SEVERITY_ERROR, SEVERITY_WARN)
# By the snapshot's file metrics, the write's own observation of the rows, or a scan.
METRICS, WRITE, SCAN = "metrics", "write", "scan"
SETTLED_BY = (METRICS, WRITE, SCAN)


# What the job decided about one source file of its run (`sources`).
SOURCE_PASSED = "passed"
SOURCE_FAILED = "failed"  # its own rows fail a blocking check
SOURCE_REJECTED = "rejected"  # unreadable, or a schema the table refuses: not written
SOURCE_STATUSES = (SOURCE_PASSED, SOURCE_FAILED, SOURCE_REJECTED)


# The check of rows that did not parse (text sources): its samples are lines of the
# uploaded files (`line`, `file`, `text`), not table rows.
PARSE_ERRORS_KIND = "parse_errors"


def samples_title(kind: str) -> str:
    """What a check's samples are called wherever they are shown (alert, CLI, UI)."""
    return (
        "Unparsable lines (file, line, text)"
        if kind == PARSE_ERRORS_KIND
        else "Sample violating rows"
    )


class ReportError(ContractError):
    """A report does not match the contract (the message names the field)."""


@dataclass(frozen=True)
class SourceVerdict:
    """One entry of the report's `sources`: one source file's own verdict in the run."""

    uri: str
    status: str
    rows: int | None = None
    failed_checks: tuple[str, ...] = ()
    reason: str | None = None
    # Rows of this source set aside in the quarantine table (issue 40), not in `rows`;
    # None when the table quarantines nothing (and in reports from before).
    quarantined_rows: int | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str = "source") -> SourceVerdict:
        """Parse and check one source verdict; raise ReportError naming the field."""
        read = Reader(data, where, ReportError)
        return cls(
            uri=read.string("uri"),
            status=read.choice("status", SOURCE_STATUSES),
            rows=read.integer("rows", required=False, minimum=0),
            failed_checks=read.strings("failed_checks"),
            reason=read.text("reason"),
            quarantined_rows=read.integer("quarantined_rows", required=False, minimum=0),
        )

    @property
    def why(self) -> str:
        """What held the file back: its failed checks, else the reason, else its status."""
        return ", ".join(self.failed_checks) or self.reason or self.status

    def to_dict(self) -> dict[str, Any]:
        data = {
            "uri": self.uri,
            "status": self.status,
            "rows": self.rows,
            "failed_checks": list(self.failed_checks),
            "reason": self.reason,
        }
        if self.quarantined_rows is not None:  # only where the table quarantines
            data["quarantined_rows"] = self.quarantined_rows
        return data


@dataclass(frozen=True)
class TableWrite:
    """One entry of a multi-table dataset's report `tables`: what the run wrote to one
    table on the dataset's branch (issue 27; docs/datasets.md)."""

    table: str
    snapshot_id: int | None = None
    rows_written: int = 0
    source_uris: tuple[str, ...] = ()
    schema_changes: tuple[Mapping[str, Any], ...] = ()
    # Rows set aside in this table's quarantine table (issue 40); 0 in older reports.
    quarantined_rows: int = 0

    @classmethod
    def from_dict(cls, data: Any, where: str = "table") -> TableWrite:
        """Parse and check one table entry; raise ReportError naming the field."""
        read = Reader(data, where, ReportError)
        return cls(
            table=read.string("table"),
            snapshot_id=read.integer("snapshot_id", required=False),
            rows_written=read.integer("rows_written", required=False, default=0, minimum=0),
            source_uris=read.strings("source_uris"),
            schema_changes=read.objects("schema_changes"),
            quarantined_rows=read.integer("quarantined_rows", required=False, default=0, minimum=0),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "rows_written": self.rows_written,
            "source_uris": list(self.source_uris),
            "schema_changes": [dict(change) for change in self.schema_changes],
            "quarantined_rows": self.quarantined_rows,
        }


@dataclass(frozen=True)
class CheckResult:
    """One entry of the report's `checks`."""

    name: str
    kind: str
    severity: str
    status: str
    columns: tuple[str, ...] = ()
    violations: int | None = None
    threshold: Any = None
    observed: Any = None
    settled_by: str | None = None
    samples: tuple[Mapping[str, Any], ...] = ()
    message: str | None = None
    # A check with `on_fail: quarantine`: the rows it set aside (its samples are some of
    # them); None for every other check, and in reports from before quarantine.
    quarantined_rows: int | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str = "check") -> CheckResult:
        """Parse and check one check entry; raise ReportError naming the field."""
        read = Reader(data, where, ReportError)
        return cls(
            name=read.string("name"),
            kind=read.string("kind"),
            severity=read.choice("severity", SEVERITIES),
            status=read.choice("status", CHECK_STATUSES),
            columns=read.strings("columns"),
            violations=read.integer("violations", required=False, minimum=0),
            threshold=data.get("threshold"),
            observed=data.get("observed"),
            settled_by=read.choice("settled_by", SETTLED_BY, required=False),
            samples=read.objects("samples"),
            message=read.text("message"),
            quarantined_rows=read.integer("quarantined_rows", required=False, minimum=0),
        )

    @property
    def blocking(self) -> bool:
        """True when this check keeps the ingest off main (error severity, not passed)."""
        return self.severity == SEVERITY_ERROR and self.status != PASSED

    def to_dict(self) -> dict[str, Any]:
        """The JSON object in the report."""
        return {
            "name": self.name,
            "kind": self.kind,
            "columns": list(self.columns),
            "severity": self.severity,
            "status": self.status,
            "violations": self.violations,
            "threshold": self.threshold,
            "observed": self.observed,
            "settled_by": self.settled_by,
            "samples": [dict(sample) for sample in self.samples],
            "message": self.message,
            # Only on a quarantine check: other checks' entries stay as they were.
            **(
                {} if self.quarantined_rows is None else {"quarantined_rows": self.quarantined_rows}
            ),
        }


@dataclass(frozen=True)
class AuditReport:
    """One job run's report (`report_version` 1)."""

    ingest_id: str
    table: str
    branch: str
    outcome: str
    source_uris: tuple[str, ...] = ()
    # One verdict per source (in `source_uris` order); absent from reports before batches.
    sources: tuple[SourceVerdict, ...] = ()
    # Nessie hash after the write; None when nothing was written.
    branch_hash: str | None = None
    snapshot_id: int | None = None
    rows_written: int = 0
    # Rows the run set aside in the table's quarantine table (`<table>__quarantine`,
    # checks with `on_fail: quarantine`) instead of writing them to the table; 0 in
    # reports from before quarantine.
    quarantined_rows: int = 0
    reused_snapshot: bool = False
    schema_changes: tuple[Mapping[str, Any], ...] = ()
    # The table's columns after the write (`{"name", "type"}` each, in order), when the job
    # reports them: what the OpenLineage `schema` facet carries. Older reports have none.
    table_schema: tuple[Mapping[str, Any], ...] = ()
    checks: tuple[CheckResult, ...] = ()
    reason: str | None = None
    reason_code: str | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    # A multi-table dataset: every table it wrote on the branch (`table` is the first);
    # its checks are named `<ns.table>: <check>`, its relations by their own names.
    tables: tuple[TableWrite, ...] = ()
    started_at: str | None = None
    finished_at: str | None = None
    report_version: int = REPORT_VERSION

    @classmethod
    def from_dict(cls, data: Any, where: str = "audit report") -> AuditReport:
        """Parse and check a report; raise ReportError naming the first bad field.

        A report of a version this code does not know is refused.
        """
        read = Reader(data, where, ReportError)
        version = read.version("report_version", KNOWN_REPORT_VERSIONS)
        timings = read.mapping("timings") or {}
        for key, value in timings.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise read.fail("timings", f"seconds as numbers (timings.{key})")
        return cls(
            report_version=version,
            ingest_id=read.string("ingest_id"),
            table=read.string("table"),
            branch=read.string("branch"),
            outcome=read.choice("outcome", OUTCOMES),
            source_uris=read.strings("source_uris"),
            sources=tuple(
                SourceVerdict.from_dict(source, f"{where}.sources[{index}]")
                for index, source in enumerate(read.objects("sources"))
            ),
            branch_hash=read.string("branch_hash", required=False),
            snapshot_id=read.integer("snapshot_id", required=False),
            rows_written=read.integer("rows_written", required=False, default=0, minimum=0),
            quarantined_rows=read.integer("quarantined_rows", required=False, default=0, minimum=0),
            reused_snapshot=bool(read.flag("reused_snapshot")),
            schema_changes=read.objects("schema_changes"),
            table_schema=_columns(read.objects("table_schema"), f"{where}.table_schema"),
            checks=tuple(
                CheckResult.from_dict(check, f"{where}.checks[{index}]")
                for index, check in enumerate(read.objects("checks"))
            ),
            reason=read.text("reason"),
            reason_code=read.string("reason_code", required=False),
            timings=dict(timings),
            started_at=read.string("started_at", required=False),
            finished_at=read.string("finished_at", required=False),
            tables=tuple(
                TableWrite.from_dict(entry, f"{where}.tables[{index}]")
                for index, entry in enumerate(read.objects("tables"))
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON the job writes (key order as in docs/contracts.md)."""
        return {
            "report_version": self.report_version,
            "ingest_id": self.ingest_id,
            "table": self.table,
            "source_uris": list(self.source_uris),
            "sources": [source.to_dict() for source in self.sources],
            "branch": self.branch,
            "branch_hash": self.branch_hash,
            "snapshot_id": self.snapshot_id,
            "rows_written": self.rows_written,
            "quarantined_rows": self.quarantined_rows,
            "reused_snapshot": self.reused_snapshot,
            "schema_changes": [dict(change) for change in self.schema_changes],
            "table_schema": [dict(column) for column in self.table_schema],
            "checks": [check.to_dict() for check in self.checks],
            "outcome": self.outcome,
            "reason": self.reason,
            "reason_code": self.reason_code,
            "timings": dict(self.timings),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            **({"tables": [entry.to_dict() for entry in self.tables]} if self.tables else {}),
        }

    @property
    def snapshots(self) -> dict[str, int]:
        """The snapshot the run committed to each table it wrote (one entry for a
        single-table run that wrote)."""
        if self.tables:
            return {
                entry.table: entry.snapshot_id
                for entry in self.tables
                if entry.snapshot_id is not None
            }
        return {} if self.snapshot_id is None else {self.table: self.snapshot_id}

    @property
    def quarantining_checks(self) -> tuple[CheckResult, ...]:
        """The checks that set rows aside in a quarantine table, in report order."""
        return tuple(check for check in self.checks if check.quarantined_rows)

    @property
    def blocking_checks(self) -> tuple[CheckResult, ...]:
        """The checks that keep the ingest off main, in report order."""
        return tuple(check for check in self.checks if check.blocking)


def _columns(
    columns: tuple[Mapping[str, Any], ...],
    where: str,
) -> tuple[Mapping[str, Any], ...]:
    """`table_schema` entries: each names a column and its type (strings)."""
    for index, column in enumerate(columns):
        read = Reader(column, f"{where}[{index}]", ReportError)
        read.string("name")
        read.string("type")
    return columns
