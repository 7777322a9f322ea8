"""The state machine's payloads (statemachine/ingest.asl.json; docs/contracts.md,
"State machine payloads").

The execution input is built by whoever starts an ingest; each task receives the whole
state (`ExecutionState`) and returns one part of it: job_status and publish the
`outcome`, retry_job a new `run`, finish `FinishResult`. The ASL reads
`outcome.status`, `outcome.retry_in_seconds`, `outcome.run`, `finish.alert_needed` and
`finish.alert`; the Pass states write `{"status": "JOB_FAILED"}` and
`{"status": "PUBLISH_FAILED"}` as the outcome themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from contracts.alert import AlertEvent
from contracts.fields import ContractError, Reader, drop_none
from contracts.lifecycle import (  # noqa: F401 (the final outcomes, re-exported)
    AUDIT_FAILED,
    FINAL_STATUSES,
    JOB_FAILED,
    PUBLISH_FAILED,
    PUBLISHED,
    REJECTED,
    RUNNING,
)

STATE_VERSION = 1
KNOWN_STATE_VERSIONS = (1,)

# `outcome.status`. The final ones are the ledger's statuses of a finished ingest
# (contracts/lifecycle.py); the others are only the state machine's.
PASSED = "PASSED"
JOB_ERROR = "JOB_ERROR"  # an infrastructure error: retry after `retry_in_seconds`
REBASED = "REBASED"  # main moved: publish started a new run on a fresh branch
OUTCOME_STATUSES = (RUNNING, PASSED, JOB_ERROR, REBASED, *FINAL_STATUSES)


class StateError(ContractError):
    """A state machine payload does not match the contract (the message names the field)."""


def _snapshot_id(read: Reader, name: str) -> str | None:
    """A snapshot id as a decimal string: 64-bit ids exceed a JSON double's exact range.
    An integer is accepted (and turned into the string) from payloads built by hand."""
    value = read.data.get(name)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return value
    raise read.fail(name, "a snapshot id (a string of digits) or null")


def _snapshots(read: Reader, name: str) -> dict[str, str] | None:
    """`{"ns.table": "<snapshot id>"}`: each value a snapshot id as `_snapshot_id` reads it."""
    value = read.mapping(name)
    if value is None:
        return None
    result = {}
    for table, snapshot in value.items():
        parsed = _snapshot_id(
            Reader({"id": snapshot}, f"{read.where}.{name}.{table}", StateError), "id"
        )
        if parsed is None:
            raise read.fail(name, "snapshot ids (strings of digits) by table")
        result[str(table)] = parsed
    return result


@dataclass(frozen=True)
class Run:
    """The job run the state machine waits for: `attempt` counts rebases (a fresh branch
    each), `job_try` retries on the same branch."""

    attempt: int
    branch: str
    job_run_id: str
    report_uri: str
    started_at: str
    job_try: int = 1
    log_uri: str | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str = "run") -> Run:
        """Parse and check a run descriptor; raise StateError naming the field."""
        read = Reader(data, where, StateError)
        return cls(
            attempt=read.integer("attempt", minimum=1),
            job_try=read.integer("job_try", required=False, default=1, minimum=1),
            branch=read.string("branch"),
            job_run_id=read.string("job_run_id"),
            report_uri=read.string("report_uri"),
            started_at=read.string("started_at"),
            log_uri=read.string("log_uri", required=False),
        )

    def to_dict(self) -> dict[str, Any]:
        """The `run` object of the state."""
        return {
            "attempt": self.attempt,
            "job_try": self.job_try,
            "branch": self.branch,
            "job_run_id": self.job_run_id,
            "report_uri": self.report_uri,
            "log_uri": self.log_uri,
            "started_at": self.started_at,
        }


def _hours(read: Reader, name: str) -> float | None:
    """A non-negative number of unit-hours (JSON int or float), or None."""
    value = read.data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise read.fail(name, "a number >= 0 or null")
    return float(value)


@dataclass(frozen=True)
class JobUsage:
    """What EMR Serverless says of a job run that ended (GetJobRun): the resources it
    billed (`billedResourceUtilization`) and its state times (ISO 8601, UTC): created
    (submitted), started (RUNNING), ended. A value EMR did not give is None."""

    vcpu_hours: float | None = None
    memory_gb_hours: float | None = None
    storage_gb_hours: float | None = None
    created_at: str | None = None
    started_at: str | None = None
    ended_at: str | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str = "job_usage") -> JobUsage:
        """Parse and check; raise StateError naming the field."""
        read = Reader(data, where, StateError)
        return cls(
            vcpu_hours=_hours(read, "vcpu_hours"),
            memory_gb_hours=_hours(read, "memory_gb_hours"),
            storage_gb_hours=_hours(read, "storage_gb_hours"),
            created_at=read.string("created_at", required=False),
            started_at=read.string("started_at", required=False),
            ended_at=read.string("ended_at", required=False),
        )

    def to_dict(self) -> dict[str, Any]:
        """The `job_usage` object (fields without a value are left out): every field is a
        plain value, so the object is the fields themselves."""
        return drop_none(asdict(self))

    @property
    def billed(self) -> bool:
        """Whether EMR reported the billed resources (only for a run that ended)."""
        return self.vcpu_hours is not None


@dataclass(frozen=True)
class Outcome:
    """The `outcome` of the state: job_status' answer, then publish's (which adds
    `main_hash`, `branch_deleted`, and `run` when it REBASED). Unknown values are absent."""

    status: str
    reason: str | None = None
    job_run_id: str | None = None
    job_state: str | None = None
    report_uri: str | None = None
    log_uri: str | None = None
    branch_hash: str | None = None
    snapshot_id: str | None = None
    rows_written: int | None = None
    # Rows the job set aside in the table's quarantine table (issue 40); None when none.
    quarantined_rows: int | None = None
    retry_in_seconds: int | None = None
    main_hash: str | None = None
    branch_deleted: bool | None = None
    run: Run | None = None
    # A multi-table dataset: the audited snapshot of every table it wrote (decimal strings),
    # each verified at `branch_hash` before the one merge.
    snapshots: Mapping[str, str] | None = None
    # The ended job run's billed resources and state times (job_status reads them; publish
    # carries them on), for the ingest's cost and where its time went.
    job_usage: JobUsage | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str = "outcome") -> Outcome:
        """Parse and check an outcome; raise StateError naming the field."""
        read = Reader(data, where, StateError)
        status = read.choice("status", OUTCOME_STATUSES)
        retry_in = read.integer("retry_in_seconds", required=status == JOB_ERROR, minimum=0)
        run = read.mapping("run")
        usage = read.mapping("job_usage")
        if status == REBASED and run is None:
            raise read.fail("run", "the new run (status REBASED)")
        return cls(
            status=status,
            reason=read.text("reason"),
            job_run_id=read.string("job_run_id", required=False),
            job_state=read.string("job_state", required=False),
            report_uri=read.string("report_uri", required=False),
            log_uri=read.string("log_uri", required=False),
            branch_hash=read.string("branch_hash", required=False),
            snapshot_id=_snapshot_id(read, "snapshot_id"),
            rows_written=read.integer("rows_written", required=False, minimum=0),
            quarantined_rows=read.integer("quarantined_rows", required=False, minimum=0),
            retry_in_seconds=retry_in,
            main_hash=read.string("main_hash", required=False),
            branch_deleted=read.flag("branch_deleted", default=None),
            run=None if run is None else Run.from_dict(run, f"{where}.run"),
            snapshots=_snapshots(read, "snapshots"),
            job_usage=None if usage is None else JobUsage.from_dict(usage, f"{where}.job_usage"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The `outcome` object (fields without a value are left out)."""
        return drop_none(
            {
                "status": self.status,
                "reason": self.reason,
                "job_run_id": self.job_run_id,
                "job_state": self.job_state,
                "report_uri": self.report_uri,
                "log_uri": self.log_uri,
                "branch_hash": self.branch_hash,
                "snapshot_id": self.snapshot_id,
                "rows_written": self.rows_written,
                "quarantined_rows": self.quarantined_rows,
                "retry_in_seconds": self.retry_in_seconds,
                "main_hash": self.main_hash,
                "branch_deleted": self.branch_deleted,
                "run": None if self.run is None else self.run.to_dict(),
                "snapshots": None if self.snapshots is None else dict(self.snapshots),
                "job_usage": None if self.job_usage is None else self.job_usage.to_dict(),
            }
        )


@dataclass(frozen=True)
class ExecutionInput:
    """The input of one execution (named after the ingest id)."""

    ingest_id: str
    table: str
    run: Run
    source_uri: str | None = None  # the object the user dropped, for display
    staged_uri: str | None = None  # what the job reads: the staged copy of that version
    state_version: int = STATE_VERSION

    @classmethod
    def from_dict(cls, data: Any, where: str = "execution input") -> ExecutionInput:
        """Parse and check an execution input; raise StateError naming the field."""
        read = Reader(data, where, StateError)
        return cls(**_input_fields(read, where))

    def to_dict(self) -> dict[str, Any]:
        """The JSON the execution starts with."""
        return {
            "state_version": self.state_version,
            "ingest_id": self.ingest_id,
            "table": self.table,
            "source_uri": self.source_uri,
            "staged_uri": self.staged_uri,
            "run": self.run.to_dict(),
        }


def _input_fields(read: Reader, where: str) -> dict[str, Any]:
    return {
        # Executions started before the field existed carry none: they are version 1.
        "state_version": read.version("state_version", KNOWN_STATE_VERSIONS, default=1),
        "ingest_id": read.string("ingest_id"),
        "table": read.string("table"),
        "source_uri": read.string("source_uri", required=False),
        "staged_uri": read.string("staged_uri", required=False),
        "run": Run.from_dict(read.data.get("run"), f"{where}.run"),
    }


@dataclass(frozen=True)
class ExecutionState(ExecutionInput):
    """The state a task receives: the input plus what earlier states added (`config` from
    Configure, the `outcome`, a Catch's `error`)."""

    job_timeout_seconds: int | None = None  # config.job_timeout_seconds
    outcome: Outcome | None = None
    error: Mapping[str, Any] | None = None  # a Catch's {"Error", "Cause"}

    @classmethod
    def from_dict(cls, data: Any, where: str = "state") -> ExecutionState:
        """Parse and check the state; raise StateError naming the field."""
        read = Reader(data, where, StateError)
        config = Reader(read.mapping("config") or {}, f"{where}.config", StateError)
        outcome = read.mapping("outcome")
        return cls(
            **_input_fields(read, where),
            job_timeout_seconds=config.integer("job_timeout_seconds", required=False, minimum=1),
            outcome=None if outcome is None else Outcome.from_dict(outcome, f"{where}.outcome"),
            error=read.mapping("error"),
        )


@dataclass(frozen=True)
class FinishResult:
    """What finish returns (`$.finish`): the recorded status and the alert to send."""

    status: str
    alert: AlertEvent | None = None
    next_ingest_id: str | None = None

    @property
    def alert_needed(self) -> bool:
        """What the state machine's `Alert?` choice reads."""
        return self.alert is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON the state machine stores under `finish` (every key present)."""
        return {
            "status": self.status,
            "alert_needed": self.alert_needed,
            "alert": None if self.alert is None else self.alert.to_dict(),
            "next_ingest_id": self.next_ingest_id,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "finish") -> FinishResult:
        """Parse and check finish's result; raise StateError naming the field."""
        read = Reader(data, where, StateError)
        alert = read.mapping("alert")
        result = cls(
            status=read.string("status"),
            alert=None if alert is None else AlertEvent.from_dict(alert),
            next_ingest_id=read.string("next_ingest_id", required=False),
        )
        if read.flag("alert_needed", default=None) is not result.alert_needed:
            raise read.fail(
                "alert_needed",
                f"{str(result.alert_needed).lower()} (as the alert is "
                + ("present" if result.alert else "null")
                + ")",
            )
        return result
