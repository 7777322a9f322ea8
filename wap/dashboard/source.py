"""What each dashboard page reads, fetched in one go through the `wap` operations layer.

Each loader opens the backend the CLI would open (the embedded stack over the home,
read-only, or a deployed stack), gathers everything its page shows into plain data,
and closes it again, so a page always shows the current state and the Streamlit
script can cache the result. No Streamlit here.
"""

from __future__ import annotations

import dataclasses
import threading
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from contracts.layout import CONFIG_SUFFIX, TABLES_PREFIX
from contracts.metric_history import CHECK, SCOPE_TABLE, is_metrics_table, metrics_table_name
from contracts.report import AuditReport
from ingestion import constants as c
from ingestion.arrivals import SubjectFreshness
from ingestion.exceptions import WapError
from ingestion.naming import utcnow
from lakeview import iceberg
from lakeview.exceptions import TableReadError
from wap.exceptions import DashboardError, OpsError
from wap.ops import operations as ops
from wap.ops.arrivals import list_freshness
from wap.ops.backend import Backend
from wap.ops.backends import NoLocalState, Target, open_backend
from wap.runtime.embedded_stack import tables_dir_from_env
from wap.runtime.home import HomeError, WapHome

# The embedded stack runs moto, whose patching is process-wide: one local backend at a time.
_LOCAL_OPEN = threading.Lock()
# The table page marks this many of the latest failed drops on its metric charts (one
# report read each).
FAILED_REPORTS = 20


def describe(target: Target) -> str:
    """Where the dashboard reads from, for its header (never credentials)."""
    if target.is_aws:
        who = f"profile {target.profile}" if target.profile else "default AWS credentials"
        where = f", {target.region}" if target.region else ""
        return f"deployed stack {target.stack} ({who}{where})"
    return f"local stack in {WapHome.resolve(target.home).root}"


def _with_backend(target: Target, work: Any) -> Any:
    """Run `work(backend)` on a freshly opened backend; expected errors become DashboardError."""
    lock = nullcontext() if target.is_aws else _LOCAL_OPEN
    try:
        with lock, open_backend(target) as backend:
            return work(backend)
    except NoLocalState:
        raise
    except (OpsError, TableReadError, WapError, HomeError) as exc:  # WapError: the Nessie client's
        raise DashboardError(" ".join(str(exc).split())) from exc


# ---- overview ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Overview:
    """Everything the overview shows; `no_state` set when the local home has nothing yet."""

    runs: list[ops.RunRow] = field(default_factory=list)
    batches: list[ops.BatchRow] = field(default_factory=list)
    branches: list[ops.BranchRow] = field(default_factory=list)
    locks: list[dict[str, Any]] = field(default_factory=list)
    # Tables (and datasets) whose config expects drops, late ones first (issue 42).
    freshness: list[SubjectFreshness] = field(default_factory=list)
    loaded_at: datetime | None = None
    no_state: str | None = None


def load_overview(target: Target) -> Overview:
    """Ingests (newest first), open branches with age, table locks and queues."""

    def work(backend: Backend) -> Overview:
        now = utcnow()
        locks = [
            {
                "table": lock.table,
                "active": lock.active,
                "queue": list(lock.queue),
                "batch": list(lock.batch),
            }
            for lock in backend.ledger.list_locks()
        ]
        return Overview(
            runs=ops.list_runs(backend),
            batches=ops.list_batches(backend),
            branches=ops.list_branches(backend, now=now),
            locks=locks,
            freshness=list_freshness(backend, now=now),
            loaded_at=now,
        )

    try:
        return _with_backend(target, work)
    except NoLocalState as exc:
        return Overview(no_state=str(exc), loaded_at=utcnow())


# ---- one ingest -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IngestPage:
    """One ingest: `wap show`'s view plus the Nessie UI base URL for links."""

    view: ops.IngestView
    nessie_ui_url: str | None
    counts_error: str | None = None
    local_catalog: bool = False  # the UI is ours (`wap serve`), with its /diff page


def load_ingest(target: Target, ref: str) -> IngestPage:
    """The ingest behind an ingest id or branch name (validated by the operations layer)."""

    def work(backend: Backend) -> IngestPage:
        try:
            view = ops.show(backend, ref)
            problem = None
        # Counts unreadable (Iceberg files, or Nessie down): still show the record and report.
        except (TableReadError, WapError) as exc:
            record = ops.find_ingest(backend, ref)
            report = ops.read_report(backend, record)
            view = ops.IngestView(
                record=record,
                report=report,
                branch_open=False,
                main_rows=None,
                branch_rows=None,
                tables=ops.dataset_tables(record, report),
            )
            problem = str(exc)
        return IngestPage(
            view=view,
            nessie_ui_url=backend.nessie_ui_url,
            counts_error=problem,
            local_catalog=backend.kind == "local",
        )

    try:
        return _with_backend(target, work)
    except NoLocalState as exc:
        raise DashboardError(str(exc)) from exc


# ---- one table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TablePage:
    """One table: main's snapshot lineage, its configured checks, its ingests."""

    table: str
    snapshots: list[dict[str, Any]]
    current_snapshot_id: int | None
    on_main: bool
    config_text: str | None
    config_uri: str | None
    runs: list[ops.RunRow]
    # The latest garbage collection's summary (ingestion/maintenance/health.py), if any ran.
    gc_summary: dict[str, Any] | None = None
    # Table-scope rows of main's metrics table (its published drops), and the audit
    # reports of the latest failed drops by ingest id: the metric charts' data.
    metric_rows: list[dict[str, Any]] = field(default_factory=list)
    failed_reports: dict[str, AuditReport] = field(default_factory=dict)
    metrics_error: str | None = None  # the metrics table could not be read


def load_table(target: Target, table: str) -> TablePage:
    """Snapshots of `table` on main (pyiceberg, no JVM), its config file, its ingests."""
    try:
        name = ops.parse_table(table).qualified
    except OpsError as exc:
        raise DashboardError(str(exc)) from exc

    def work(backend: Backend) -> TablePage:
        location = backend.nessie.metadata_location(c.MAIN_BRANCH, name)
        snapshots, current = (
            ([], None)
            if location is None
            else _read_snapshots(location, backend.iceberg_properties())
        )
        configs = _ConfigStore(backend)
        runs = ops.list_runs(backend, table=name)
        try:
            metric_rows, metrics_error = _read_metric_rows(backend, name), None
        except TableReadError as exc:  # the page still shows the rest
            metric_rows, metrics_error = [], str(exc)
        return TablePage(
            table=name,
            snapshots=snapshots,
            current_snapshot_id=current,
            on_main=location is not None,
            config_text=configs.read(name),
            config_uri=configs.location(name),
            runs=runs,
            gc_summary=_gc_summary(backend),
            metric_rows=metric_rows,
            failed_reports=_failed_reports(backend, runs),
            metrics_error=metrics_error,
        )

    try:
        return _with_backend(target, work)
    except NoLocalState as exc:
        raise DashboardError(str(exc)) from exc


def list_tables(target: Target) -> list[str]:
    """Tables with ingests in the ledger or a config file, sorted; never a metrics table
    (`<ns>.<table>__audit_metrics`: its table's page charts it)."""

    def work(backend: Backend) -> list[str]:
        names = {r.table for r in ops.list_runs(backend) if r.table}
        for stem in _ConfigStore(backend).stems():
            try:
                names.add(ops.parse_table(stem).qualified)
            except OpsError:
                continue  # not a table config (README, stray file)
        return sorted(name for name in names if not is_metrics_table(name))

    try:
        return _with_backend(target, work)
    except NoLocalState:
        return []


def _gc_summary(backend: Backend) -> dict[str, Any] | None:
    """The latest garbage collection's summary; None when none ran or it cannot be read
    (the page still shows the rest)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from wap.ops.maintenance import gc_summary

    try:
        return gc_summary(backend)
    except (BotoCoreError, ClientError, ValueError):
        return None


def _read_metric_rows(backend: Backend, table: str) -> list[dict[str, Any]]:
    """The table-scope rows of `table`'s metrics table on main (what main published); []
    when there is none yet. TableReadError when it cannot be read."""
    location = backend.nessie.metadata_location(c.MAIN_BRANCH, metrics_table_name(table))
    if location is None:
        return []
    from pyiceberg.expressions import EqualTo, NotEqualTo

    metrics = iceberg.open_table(location, backend.iceberg_properties())
    try:
        scan = metrics.scan(
            row_filter=EqualTo("scope", SCOPE_TABLE) & NotEqualTo("metric", CHECK),
            selected_fields=("ingest_id", "recorded_at", "scope", "column_name", "metric", "value"),
        )
        return scan.to_arrow().to_pylist()
    except (OSError, ValueError, KeyError) as exc:
        raise TableReadError(
            f"cannot read the metric history {location}: {type(exc).__name__}: {exc}"
        ) from exc


def _failed_reports(backend: Backend, runs: list[ops.RunRow]) -> dict[str, AuditReport]:
    """The audit reports of the latest FAILED_REPORTS failed drops (runs newest first), by
    ingest id; a drop of a batch reads the batch's report. Unreadable ones are left out."""
    reports: dict[str, AuditReport] = {}
    for run in runs:
        if len(reports) >= FAILED_REPORTS:
            break
        if run.status != c.AUDIT_FAILED:
            continue
        ingest = run.batch_id or run.ingest_id
        if ingest in reports:
            continue
        try:
            report = ops.read_report(backend, ops.find_ingest(backend, ingest))
        except (OpsError, WapError):
            continue
        if report is not None:
            # A report without its times (older tools): the drop is where the ledger puts it.
            if not (report.finished_at or report.started_at) and run.when:
                report = dataclasses.replace(report, finished_at=run.when)
            reports[ingest] = report
    return reports


def _read_snapshots(
    location: str, properties: dict[str, str]
) -> tuple[list[dict[str, Any]], int | None]:
    from pyiceberg.table import StaticTable

    try:
        metadata = StaticTable.from_metadata(location, properties).metadata
    except (OSError, ValueError) as exc:
        raise TableReadError(
            f"cannot read Iceberg metadata {location}: {type(exc).__name__}: {exc}"
        ) from exc
    snapshots = []
    for s in metadata.snapshots:
        summary = s.summary
        snapshots.append(
            {
                "snapshot_id": s.snapshot_id,
                "parent_id": s.parent_snapshot_id,
                "timestamp_ms": s.timestamp_ms,
                "operation": summary.operation.value if summary is not None else None,
                "summary": dict(summary.additional_properties) if summary is not None else {},
            }
        )
    return snapshots, metadata.current_snapshot_id


class _ConfigStore:
    """Where the table configs the job reads live: a directory locally, S3 on AWS."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.bucket: str | None = None
        self.directory: Path | None = None
        outputs = getattr(backend, "outputs", None)  # AwsBackend: the stack outputs
        if isinstance(outputs, dict) and outputs.get("ArtifactsBucketName"):
            self.bucket = outputs["ArtifactsBucketName"]
        else:  # LocalBackend: the directory the embedded stack uploads for ingests
            options = getattr(getattr(backend, "stack", None), "options", None)
            self.directory = getattr(options, "tables_dir", None) or tables_dir_from_env()

    def location(self, table: str) -> str:
        name = f"{table}{CONFIG_SUFFIX}"
        if self.bucket:
            return f"s3://{self.bucket}/{TABLES_PREFIX}{name}"
        return str(Path(self.directory or ".") / name)

    def read(self, table: str) -> str | None:
        if self.bucket:
            body = self.backend.read_object(self.location(table))
            return body.decode("utf-8", "replace") if body is not None else None
        path = Path(self.location(table))
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    def stems(self) -> list[str]:
        """Names of the config files without `.yaml`."""
        if self.bucket:
            pages = (
                self.backend.s3()
                .get_paginator("list_objects_v2")
                .paginate(Bucket=self.bucket, Prefix=TABLES_PREFIX)
            )
            keys = [o["Key"][len(TABLES_PREFIX) :] for p in pages for o in p.get("Contents", [])]
        else:
            directory = Path(self.directory or ".")
            keys = (
                [p.name for p in directory.glob(f"*{CONFIG_SUFFIX}")] if directory.is_dir() else []
            )
        return [k[: -len(CONFIG_SUFFIX)] for k in keys if k.endswith(CONFIG_SUFFIX)]
