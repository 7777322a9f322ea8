"""`wap maintain TABLE`: compaction as Write-Audit-Publish, holding the table like an ingest.

1. The run is a ledger record (source `maintenance:compaction`, so `wap runs` lists it) that
   takes the table's lock as an ingest does; a busy table is refused, and ingests that
   arrive while it runs queue behind it.
2. A branch `wap_<ns>_<table>_<time>_<id8>` from main; `spark_jobs.compaction.compact`
   rewrites the small files there and audits the content against the snapshot before.
3. Passed: main merges exactly the audited head (`NessieClient.merge_into_main`, the
   publish path of ingests) and the branch goes. Failed: nothing is merged, the branch
   stays (`wap branches`, `wap discard`), the record is AUDIT_FAILED and an alert is sent.
4. The table is released and whoever queued meanwhile is started
   (`lambdas.common.ingest.release_and_start_next`, as the finish step does).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contracts.naming import hex_id
from contracts.table_config import MaintenanceOptions
from lambdas.common import constants as c
from lambdas.common.alerts import alert_event
from lambdas.common.ledger import LOCK_ACTIVE, Ledger
from lambdas.common.lineage import events
from lambdas.common.lineage.record import outcome_of
from lambdas.common.naming import branch_name, iso, utcnow
from lambdas.common.nessie import MergeMeta, NessieClient
from wap.exceptions import NotAllowedError, UnknownTargetError
from wap.ops.backends import DEFAULT_STACK

SOURCE = c.MAINTENANCE_SOURCE
AUTHOR = "wap maintain"

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionRun:
    """What `wap maintain` did to one table."""

    run_id: str
    table: str
    branch: str
    status: str  # PUBLISHED (merged, or nothing to rewrite), AUDIT_FAILED, JOB_FAILED
    result: Any  # spark_jobs.compaction.CompactionResult, None when the job failed
    reason: str | None
    main_hash: str | None = None  # main after the merge


def compact_table(
    *, ledger: Ledger, nessie: NessieClient, spark: Any, table: str,
    options: MaintenanceOptions, alert: Callable[[dict], Any],
    start_next: Callable[[str, str], Any], template_catalog: str = "lake",
    meanwhile: Callable[[], None] | None = None, rewrite: Any = None,
    lineage: Callable[[list], Any] | None = None,
) -> CompactionRun:
    """Compact `table` on a branch, publish it only when its content is unchanged.

    `start_next(table, run_id)` frees the table and starts the ingests that queued;
    `alert(event)` sends an alert event (contracts.alert); `meanwhile` runs while the run
    holds the table, before the rewrite (tests drop a file there); `rewrite` replaces
    Iceberg's procedure (tests inject a faulty one); `lineage(events)` sends the run's
    OpenLineage events (job `compaction.<table>`: START, then COMPLETE or FAIL). Raises
    `UnknownTargetError` for a table main does not have and `NotAllowedError` while
    another run holds it.
    """
    from spark_jobs.compaction import compact, iceberg_rewrite
    from wap.ops.operations import parse_table

    ref = parse_table(table)
    table = ref.qualified
    if nessie.metadata_location(c.MAIN_BRANCH, table) is None:
        raise UnknownTargetError(f"main has no table {table}")
    now = utcnow()
    run_id = hex_id(f"{SOURCE}/{table}/{iso(now)}")
    branch = branch_name(ref, now, run_id)
    if ledger.get_lock(table).active is not None:
        raise NotAllowedError(f"{table} is busy (an ingest holds it): try again when it is free")
    ledger.create_ingest(run_id, {"table": table, "status": c.RECEIVED, "source_uri": SOURCE})
    if ledger.acquire_or_enqueue(table, run_id) != LOCK_ACTIVE:
        ledger.release(table, run_id)  # out of the queue: an ingest must not start it
        ledger.update_ingest(run_id, {"status": c.REJECTED, "finished_at": iso(utcnow()),
                                      "error": "the table was busy"})
        raise NotAllowedError(f"{table} is busy (an ingest took it): try again when it is free")
    try:
        ledger.update_ingest(run_id, {"status": c.RUNNING, "branch": branch})
        _send(lineage, lambda: [events.start_event(
            namespace=DEFAULT_STACK, ingest_id=run_id, table=table, inputs=[], branch=branch,
            attempt=1, at=utcnow(), kind=events.COMPACTION)])
        base = nessie.ensure_branch_from_main(branch)
        if meanwhile is not None:
            meanwhile()
        try:
            result = compact(spark, template=template_catalog, run_catalog=f"wap_{run_id[:8]}",
                             table=table, branch=branch,
                             target_file_size=options.target_file_size,
                             min_files=options.min_files, rewrite=rewrite or iceberg_rewrite)
        except Exception as exc:
            reason = f"compaction job failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
            return _failed(ledger, alert, run_id, table, branch, c.JOB_FAILED, reason[:500], None)
        if not result.passed:
            return _failed(ledger, alert, run_id, table, branch, c.AUDIT_FAILED, result.reason,
                           result)
        head = nessie.branch_hash(branch) or base
        merged = None
        if result.changed:
            merged = nessie.merge_into_main(branch, head, MergeMeta(
                message=f"compaction of {table}: {result.before.data_files} -> "
                        f"{result.after.data_files} data files",
                author=AUTHOR,
                properties={"wap.ingest-id": run_id, "wap.maintenance": "compaction"}))
        nessie.delete_branch(branch, head)
        done = iso(utcnow())
        ledger.update_ingest(run_id, {
            "status": c.PUBLISHED, "finished_at": done, "branch_deleted_at": done,
            "audited_hash": head, "published_hash": merged, "rows_written": 0,
            "error": None if result.changed else "nothing to rewrite"})
        return CompactionRun(run_id, table, branch, c.PUBLISHED, result,
                             None if result.changed else "nothing to rewrite", merged)
    finally:
        _send(lineage, lambda: [events.outcome_event(
            namespace=DEFAULT_STACK, ingest_id=run_id, table=table, inputs=[],
            outcome=outcome_of(ledger.get_ingest(run_id)), report=None, at=utcnow(),
            kind=events.COMPACTION)])
        start_next(table, run_id)


def _send(lineage: Callable[[list], Any] | None, build: Callable[[], list]) -> None:
    """Send the events `build` makes; never raises (the run's outcome is recorded)."""
    if lineage is None:
        return
    try:
        lineage(build())
    except Exception:
        _log.exception("a compaction's OpenLineage event was not sent")


def _failed(ledger: Ledger, alert: Callable[[dict], Any], run_id: str, table: str, branch: str,
            status: str, reason: str | None, result: Any) -> CompactionRun:
    ledger.update_ingest(run_id, {"status": status, "error": reason,
                                  "finished_at": iso(utcnow())})
    record = ledger.get_ingest(run_id)
    if record is not None:
        alert(alert_event(record, outcome=status, reason=reason).to_dict())
    return CompactionRun(run_id, table, branch, status, result, reason)


def stack_hooks(aws_stack: Any, ledger: Ledger, nessie: NessieClient
                ) -> tuple[Callable[[dict], Any], Callable[[str, str], Any]]:
    """`alert` and `start_next` of a local stack (`local.aws.stack.LocalAwsStack`): the
    alert Lambda sends the alert; the table is released and the next ingest started as the
    finish Lambda does, inside its sandbox (its environment and role)."""
    from lambdas.common.config import load_settings
    from lambdas.common.ingest import release_and_start_next

    dispatcher = aws_stack.dispatcher

    def alert(event: dict) -> Any:
        return dispatcher.invoke("alert", event)

    def start_next(table: str, run_id: str) -> Any:
        with dispatcher.sandboxes["finish"].running():
            return release_and_start_next(load_settings(), ledger, nessie, table, run_id)

    return alert, start_next


def compact_on(backend: Any, table: str, options: MaintenanceOptions | None = None
               ) -> CompactionRun:
    """`compact_table` on a local backend opened with `run_ingests` (its SparkSession and
    Lambdas); the table's `maintenance:` settings unless `options` are given."""
    from wap.exceptions import BackendError
    from wap.ops.maintenance import table_maintenance

    stack = getattr(backend, "stack", None)
    if backend.kind != "local" or stack is None or stack.spark is None:
        raise BackendError("wap maintain runs on the local stack for now: on AWS, the "
                           "compaction job is not deployed yet (docs/maintenance.md)")
    from wap.ops.operations import parse_table

    table = parse_table(table).qualified
    options = options or table_maintenance(backend).get(table) or MaintenanceOptions()
    alert, start_next = stack_hooks(stack.aws, backend.ledger, backend.nessie)
    try:
        return compact_table(ledger=backend.ledger, nessie=backend.nessie, spark=stack.spark,
                             table=table, options=options, alert=alert, start_next=start_next,
                             lineage=backend.send_lineage)
    finally:
        backend.settle(600)  # the ingests it started, before the command saves the home


def run_json(run: CompactionRun) -> dict[str, Any]:
    """One run of `wap maintain --json` (docs/cli-schemas/maintain.json)."""
    result = run.result.to_dict() if run.result is not None else None
    return {"run_id": run.run_id, "table": run.table, "status": run.status,
            "branch": run.branch, "reason": run.reason, "main_hash": run.main_hash,
            "files_before": result["before"]["data_files"] if result else None,
            "files_after": result["after"]["data_files"] if result else None,
            "rows": result["after"]["rows"] if result else None}


def run_line(run: CompactionRun) -> str:
    """One run of `wap maintain`, in a line."""
    result = run.result
    if run.status == c.PUBLISHED and result is not None and result.changed:
        return (f"PUBLISHED {run.table}: {result.before.data_files} -> "
                f"{result.after.data_files} data files, {result.after.rows} rows unchanged "
                f"(run {run.run_id})")
    if run.status == c.PUBLISHED:
        return f"{run.table}: nothing to rewrite (run {run.run_id})"
    return (f"{run.status} {run.table}: {run.reason}; nothing was published, the branch "
            f"{run.branch} is left for inspection (run {run.run_id})")
