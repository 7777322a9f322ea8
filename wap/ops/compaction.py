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
   (`ingestion.ingest.release_and_start_next`, as the finish step does).

The rules of 1 and 3 are `ingestion.compaction`'s, shared with the maintenance Lambda
that compacts on AWS (`wap --aws maintain`, lambdas/maintenance/compaction.py).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from contracts.catalog_authorization import MAINTENANCE
from contracts.compaction import CompactionVerdict
from contracts.table_config import MaintenanceOptions
from ingestion import compaction as rules
from ingestion import constants as c
from ingestion.compaction_runs import outcome_json
from ingestion.exceptions import TableBusyError, UnknownTableError
from ingestion.ledger import Ledger
from ingestion.nessie import NessieClient
from wap.exceptions import NotAllowedError, UnknownTargetError
from wap.ops.backends import DEFAULT_STACK

SOURCE = rules.SOURCE

_log = logging.getLogger(__name__)


def compact_table(
    *,
    ledger: Ledger,
    nessie: NessieClient,
    spark: Any,
    table: str,
    options: MaintenanceOptions,
    alert: Callable[[dict], Any],
    start_next: Callable[[str, str], Any],
    template_catalog: str = "lake",
    meanwhile: Callable[[], None] | None = None,
    rewrite: Any = None,
    lineage: Callable[[list], Any] | None = None,
) -> rules.CompactionOutcome:
    """Compact `table` on a branch, publish it only when its content is unchanged.

    `start_next(table, run_id)` frees the table and starts the ingests that queued;
    `alert(event)` sends an alert event (contracts.alert); `meanwhile` runs while the run
    holds the table, before the rewrite (tests drop a file there); `rewrite` replaces
    Iceberg's procedure (tests inject a faulty one); `lineage(events)` sends the run's
    OpenLineage events (job `compaction.<table>`: START, then COMPLETE or FAIL). Raises
    `UnknownTargetError` for a table main does not have and `NotAllowedError` while
    another run holds it. The rules are ingestion.compaction's, as on AWS.
    """
    from spark_jobs.compaction import compact, iceberg_rewrite
    from wap.ops.ingests import parse_table

    table = parse_table(table).qualified
    try:
        start = rules.begin(ledger, nessie, table)
    except UnknownTableError as exc:
        raise UnknownTargetError(str(exc)) from exc
    except TableBusyError as exc:
        raise NotAllowedError(str(exc)) from exc
    run_id, branch = start.run_id, start.branch
    try:
        _send(lineage, lambda: [rules.start_event(DEFAULT_STACK, start)])
        rules.open_branch(ledger, nessie, start)
        if meanwhile is not None:
            meanwhile()
        verdict, job_error = None, None
        try:
            result = compact(
                spark,
                template=template_catalog,
                run_catalog=f"wap_{run_id[:8]}",
                table=table,
                branch=branch,
                target_file_size=options.target_file_size,
                min_files=options.min_files,
                rewrite=rewrite or iceberg_rewrite,
            )
            verdict = CompactionVerdict.from_dict(result.to_dict())
        except Exception as exc:
            job_error = f"{type(exc).__name__}: {exc}"
        return rules.conclude(
            ledger,
            nessie,
            start,
            verdict=verdict,
            job_error=job_error,
            alert=lambda event: alert(event.to_dict()),
        )
    finally:
        _send(lineage, lambda: [rules.outcome_event(DEFAULT_STACK, ledger, start)])
        start_next(table, run_id)


def _send(lineage: Callable[[list], Any] | None, build: Callable[[], list]) -> None:
    """Send the events `build` makes; never raises (the run's outcome is recorded)."""
    if lineage is None:
        return
    try:
        lineage(build())
    except Exception:
        _log.exception("a compaction's OpenLineage event was not sent")


def stack_hooks(
    aws_stack: Any, ledger: Ledger, nessie: NessieClient
) -> tuple[Callable[[dict], Any], Callable[[str, str], Any]]:
    """`alert` and `start_next` of a local stack (`local.aws.stack.LocalAwsStack`): the
    alert Lambda sends the alert; the table is released and the next ingest started as the
    finish Lambda does, inside its sandbox (its environment and role)."""
    from ingestion.config import load_settings
    from ingestion.ingest import release_and_start_next
    from ingestion.nessie import client_for

    dispatcher = aws_stack.dispatcher

    def alert(event: dict) -> Any:
        return dispatcher.invoke("alert", event)

    def start_next(table: str, run_id: str) -> Any:
        with dispatcher.sandboxes["finish"].running():
            settings = load_settings()
            # The finish Lambda's client (its role), not the caller's.
            return release_and_start_next(settings, ledger, client_for(settings), table, run_id)

    return alert, start_next


def maintain(backend: Any, table: str) -> dict[str, Any]:
    """`wap maintain TABLE` on either backend: one run as `outcome_json` shows it. Locally the
    job runs in-process (`compact_on`); on AWS the stack's maintenance Lambda starts it on EMR
    Serverless and is asked until the run ended (`compact_via_lambda`)."""
    if backend.kind == "aws":
        from wap.ops.ingests import parse_table

        return compact_via_lambda(
            lambda_invoker(backend.session.client("lambda"), backend.maintenance_function()),
            parse_table(table).qualified,
        )
    return outcome_json(compact_on(backend, table))


def compact_on(
    backend: Any, table: str, options: MaintenanceOptions | None = None
) -> rules.CompactionOutcome:
    """`compact_table` on a local backend opened with `run_ingests` (its SparkSession and
    Lambdas); the table's `maintenance:` settings unless `options` are given."""
    from wap.exceptions import BackendError
    from wap.ops.maintenance import table_maintenance

    stack = getattr(backend, "stack", None)
    if backend.kind != "local" or stack is None or stack.spark is None:
        raise BackendError("compact_on runs the job in-process, on the local stack only")
    from wap.ops.ingests import parse_table

    table = parse_table(table).qualified
    options = options or table_maintenance(backend).get(table) or MaintenanceOptions()
    # The maintenance Lambda's work, in-process: as its role (the job's catalog is wap-job's).
    nessie = stack.catalog_client(MAINTENANCE)
    alert, start_next = stack_hooks(stack.aws, backend.ledger, nessie)
    try:
        return compact_table(
            ledger=backend.ledger,
            nessie=nessie,
            spark=stack.spark,
            table=table,
            options=options,
            alert=alert,
            start_next=start_next,
            lineage=backend.send_lineage,
        )
    finally:
        backend.settle(600)  # the ingests it started, before the command saves the home


def compact_via_lambda(
    invoke: Callable[[dict], dict],
    table: str,
    *,
    timeout: float = 3 * 3600,
    poll_seconds: float = 15,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Ask the maintenance Lambda to compact `table`, then to finish the run until its job
    ended; the outcome (`outcome_json`'s shape). `OpsError` when it still runs after `timeout`
    (it goes on: the daily run finishes it)."""
    from wap.exceptions import OpsError

    answer = invoke({"action": "compact", "table": table})
    deadline = clock() + timeout
    while answer.get("status") == "RUNNING":
        if clock() >= deadline:
            raise OpsError(
                f"compaction {answer['run_id']} of {table} still runs after "
                f"{timeout:.0f} s; the daily maintenance run publishes it when its "
                "job ends (wap runs shows it)"
            )
        sleep(poll_seconds)
        answer = invoke({"action": "compact_finish", "run_id": answer["run_id"]})
    return answer


def lambda_invoker(client: Any, function_name: str) -> Callable[[dict], dict]:
    """`invoke(event)`: the function's answer; its errors as the CLI's (a busy table
    `NotAllowedError`, an unknown one `UnknownTargetError`, else `BackendError`)."""
    from wap.exceptions import BackendError

    def invoke(event: dict) -> dict:
        response = client.invoke(FunctionName=function_name, Payload=json.dumps(event).encode())
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError") or not isinstance(payload, dict):
            error = payload if isinstance(payload, dict) else {}
            kind, message = error.get("errorType"), error.get("errorMessage", payload)
            if kind == "TableBusyError":
                raise NotAllowedError(str(message))
            if kind == "UnknownTableError":
                raise UnknownTargetError(str(message))
            raise BackendError(f"{function_name} failed: {kind}: {message}")
        return payload

    return invoke


def line_of(run: dict[str, Any]) -> str:
    """One run of `wap maintain` (`outcome_json`'s shape, from either backend), in a line."""
    table, run_id = run["table"], run["run_id"]
    if run["status"] == c.PUBLISHED and run.get("reason") is None:
        return (
            f"PUBLISHED {table}: {run['files_before']} -> {run['files_after']} data "
            f"files, {run['rows']} rows unchanged (run {run_id})"
        )
    if run["status"] == c.PUBLISHED:
        return f"{table}: nothing to rewrite (run {run_id})"
    return (
        f"{run['status']} {table}: {run['reason']}; nothing was published, the branch "
        f"{run['branch']} is left for inspection (run {run_id})"
    )
