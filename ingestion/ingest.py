"""Starting an ingest: Nessie branch, EMR Serverless job run, state machine execution.

Used by the trigger (first start), finish (the next queued ingest), publish
(a rebase re-runs the job) and the sweeper. Every step is idempotent: the
branch name is stored once in the ledger before the branch is created, the job
run is deduplicated by `clientToken`, the execution by its name.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from datetime import datetime
from typing import Any

from contracts import naming as rules
from contracts.job_args import CompactionArgs, JobArgs, RunArgs, SmokeArgs
from contracts.state import ExecutionInput, Run
from ingestion import aws
from ingestion import constants as c
from ingestion.batching import (
    open_batch,
    queue_taker,
    reject_for_config,
    settle_members,
    table_intake,
)
from ingestion.config import Settings
from ingestion.exceptions import NessieError
from ingestion.ledger import (
    BatchRecord,
    Changes,
    IngestRecord,
    Ledger,
    LedgerRecord,
    Record,
    is_multi_table,
    started_at_field,
    tables_of,
)
from ingestion.lifecycle import settle
from ingestion.lineage import record as lineage
from ingestion.log import logger
from ingestion.naming import TableRef, branch_name, iso, utcnow
from ingestion.nessie import NessieClient


def client_token(ingest_id: str, attempt: int, job_try: int = 1) -> str:
    """The EMR `clientToken` of a run: the ingest id itself for the first one.

    `attempt` counts rebases (a fresh branch), `job_try` retries on the same branch.
    """
    token = ingest_id if attempt == 1 else f"{ingest_id}-r{attempt}"
    return token if job_try == 1 else f"{token}-t{job_try}"


def reader_uris(record: LedgerRecord) -> list[str]:
    """What the job reads for an ingest: its staged copy of the exact object version (for
    a batch: each member's, in arrival order)."""
    staged = list(record.reader_uris) or [None]
    if not all(staged) or not record.staged_at:
        raise ValueError(f"ingest {record.ingest_id} has no staged copy of its source")
    return [uri for uri in staged if uri]


def job_arguments(
    settings: Settings,
    *,
    source_uris: list[str],
    table: str,
    branch: str,
    ingest_id: str,
    report_uri: str,
    all_or_nothing: bool = False,
    source_origins: list[str] | None = None,
    dataset: str | None = None,
    source_tables: list[str] | None = None,
    dataset_config_uri: str | None = None,
) -> JobArgs:
    """The job's arguments for an ingest (contracts/job_args.py). A multi-table `dataset`
    gives each source's table (`source_tables`), the config its trigger froze when it took
    the locks (`dataset_config_uri`; the deployed one for a batch recorded without it) and
    reads its table configs by prefix."""
    dataset_uri = None
    if dataset:
        dataset_uri = dataset_config_uri or settings.dataset_config_uri(dataset)
        if not dataset_uri or not settings.tables_config_prefix:
            raise ValueError(f"dataset {dataset}: no table config prefix is deployed")
    config_uri = (
        settings.table_config_uri(table)
        if not dataset
        else settings.tables_config_prefix.rstrip("/") + "/"
    )
    return JobArgs(
        sources=list(source_uris),
        table=table,
        branch=branch,
        ingest_id=ingest_id,
        report_uri=report_uri,
        table_config_uri=config_uri or None,
        # a dataset: one source the job cannot use rejects the whole run
        all_or_nothing=all_or_nothing,
        # one per source, same order: what the snapshot names
        source_origins=tuple(source_origins or ()),
        dataset_config_uri=dataset_uri,
        source_tables=tuple(source_tables or ()) if dataset else (),
    )


def start_job_run(settings: Settings, arguments: JobArgs, *, attempt: int, job_try: int = 1) -> str:
    """Start (or find, by clientToken) the Spark job run of one attempt; return its id."""
    ingest_id, table = arguments.ingest_id, arguments.table
    return _submit(
        settings,
        arguments,
        action=f"start the job run of {ingest_id}",
        client_token=client_token(ingest_id, attempt, job_try),
        name=f"wap-{table}-{ingest_id}-{attempt}" + (f"-t{job_try}" if job_try > 1 else ""),
        log_uri=settings.log_uri(ingest_id),
        tags={"wap:ingest-id": ingest_id, "wap:table": table},
    )


def start_smoke_run(settings: Settings, run_id: str, branch: str, report_uri: str) -> str:
    """Start `wap doctor`'s smoke run of the job (spark_jobs/smoke.py): the same entry point,
    archive, jars and Spark conf as an ingest's run; return its id."""
    arguments = SmokeArgs(branch=branch, report_uri=report_uri)
    return _submit(
        settings,
        arguments,
        action="start the smoke run",
        client_token=run_id,
        name=f"wap-doctor-{run_id}",
        log_uri=settings.log_uri(f"doctor-{run_id}"),
        tags={"wap:doctor": run_id},
    )


def start_compaction_run(
    settings: Settings,
    *,
    run_id: str,
    table: str,
    branch: str,
    report_uri: str,
    target_file_size: int,
    min_files: int,
) -> str:
    """Start the job's compaction mode (`--compact`, spark_jobs/compaction.py) on `branch`:
    the same entry point, archive, jars, Spark conf and role as an ingest; return its id."""
    arguments = CompactionArgs(
        table=table,
        branch=branch,
        run_id=run_id,
        report_uri=report_uri,
        target_file_size=target_file_size,
        min_files=min_files,
    )
    return _submit(
        settings,
        arguments,
        action=f"start the compaction run {run_id}",
        client_token=run_id,
        name=f"wap-compact-{table}-{run_id}",
        log_uri=settings.log_uri(run_id),
        tags={"wap:ingest-id": run_id, "wap:table": table},
    )


def _submit(
    settings: Settings,
    arguments: RunArgs,
    *,
    action: str,
    client_token: str,
    name: str,
    log_uri: str,
    tags: dict[str, str],
) -> str:
    if settings.job_catalog_secret_arn:
        # The job reads its catalog client when it starts; the run names only the secret.
        arguments = dataclasses.replace(
            arguments, catalog_credentials_secret=settings.job_catalog_secret_arn
        )
    submit: dict[str, Any] = {
        "entryPoint": settings.job_entrypoint,
        "entryPointArguments": arguments.to_args(),
    }
    spark_parameters = settings.job_spark_parameters or ""
    if settings.job_py_files:
        spark_parameters = f"{spark_parameters} --py-files {shlex.quote(settings.job_py_files)}"
    if spark_parameters.strip():
        submit["sparkSubmitParameters"] = spark_parameters.strip()
    emr = aws.client("emr-serverless")
    # Idempotent by clientToken, so a throttled or failed call is safe to retry.
    response = aws.call(
        action,
        emr.start_job_run,
        applicationId=settings.emr_application_id,
        clientToken=client_token,
        executionRoleArn=settings.emr_execution_role_arn,
        name=name,
        jobDriver={"sparkSubmit": submit},
        configurationOverrides={
            "monitoringConfiguration": {"s3MonitoringConfiguration": {"logUri": log_uri}}
        },
        # EMR's own cap is a backstop behind job_status' (which does not count time queued
        # for capacity), so it allows both.
        executionTimeoutMinutes=max(
            settings.job_timeout_minutes + settings.job_queue_timeout_minutes, 5
        ),
        tags=tags,
    )
    return response["jobRunId"]


def cancel_job_run(settings: Settings, job_run_id: str) -> bool:
    """Cancel a job run; False when EMR refuses because the run has already ended.

    Raises `AwsUnavailableError` on transient failures, any other error as it is.
    """
    try:
        aws.call(
            f"cancel job run {job_run_id}",
            aws.client("emr-serverless").cancel_job_run,
            applicationId=settings.emr_application_id,
            jobRunId=job_run_id,
        )
    except Exception as exc:
        if (getattr(exc, "response", None) or {}).get("Error", {}).get(
            "Code"
        ) != "ValidationException":
            raise
        return False
    return True


def job_log_uri(settings: Settings, ingest_id: str, job_run_id: str) -> str:
    """Where EMR Serverless puts the driver logs of a job run."""
    return (
        f"{settings.log_uri(ingest_id)}applications/{settings.emr_application_id}"
        f"/jobs/{job_run_id}/"
    )


def start_execution(settings: Settings, execution_input: ExecutionInput) -> str:
    """Start the state machine execution named after the ingest (or find the existing one)."""
    ingest_id = execution_input.ingest_id
    sfn = aws.client("stepfunctions")
    try:
        return aws.call(
            f"start the execution of {ingest_id}",
            sfn.start_execution,
            stateMachineArn=settings.state_machine_arn,
            name=ingest_id,
            input=json.dumps(execution_input.to_dict()),
        )["executionArn"]
    except sfn.exceptions.ExecutionAlreadyExists:
        # A retried invocation: the first one got this far. Execution ARNs are derived.
        return execution_arn(settings.state_machine_arn, ingest_id)


def execution_arn(state_machine_arn: str, name: str) -> str:
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + f":{name}"


def start_ingest(
    settings: Settings, ledger: Ledger, nessie: NessieClient, record: Record
) -> Record:
    """Start an ingest that holds its table's lock; returns the updated ledger record.

    Safe to call again for the same ingest after a failure at any step.
    """
    ingest_id, table = record.ingest_id, _table_of(record)
    if not record.is_pending:
        return record  # already started (or finished): nothing to do
    if is_multi_table(record):  # a multi-table dataset takes every table's lock, in order
        waiting_at = ledger.acquire_in_order(tables_of(record), ingest_id)
        if waiting_at is not None:  # queued there: the table's release starts it again
            ledger.update_ingest(
                ingest_id,
                status=c.QUEUED,
                waiting_for=waiting_at,
                only_if_status=c.PENDING_STATUSES,
            )
            return ledger.get_ingest(ingest_id) or record
    branch = ledger.set_once(ingest_id, "branch", run_branch_name(record, utcnow()))
    nessie.ensure_branch_from_main(branch)
    run = launch_job_run(settings, ledger, record, attempt=1, job_try=1, branch=branch)
    staged_uri = record.staged_uri if isinstance(record, IngestRecord) else None
    execution_input = ExecutionInput(
        ingest_id=ingest_id,
        table=table,
        run=run,
        source_uri=record.source_uri,
        staged_uri=staged_uri,
    )
    arn = start_execution(settings, execution_input)
    ledger.update_ingest(
        ingest_id,
        status=c.RUNNING,
        execution_arn=arn,
        **run_fields(run),
        only_if_status=c.PENDING_STATUSES,
    )
    started = ledger.get_ingest(ingest_id) or record
    lineage.send_start(settings, ledger, started, branch=branch, attempt=run.attempt)
    return started


def run_branch_name(record: LedgerRecord, at: datetime) -> str:
    """`wap_<ns>_<table>_<time>_<id8>`; a multi-table dataset's `wap_dataset_<name>_...`."""
    if is_multi_table(record) and record.dataset_name:
        return rules.branch_name("dataset", record.dataset_name, at, record.ingest_id)
    return branch_name(TableRef.parse(_table_of(record)), at, record.ingest_id)


def launch_job_run(
    settings: Settings,
    ledger: Ledger,
    record: LedgerRecord,
    *,
    attempt: int,
    job_try: int,
    branch: str,
) -> Run:
    """Start (or find) the job run of `attempt` (a branch) and `job_try` (a retry on it) for
    an ingest that holds its table; renews the table lease. Returns the run descriptor."""
    ingest_id, table = record.ingest_id, _table_of(record)
    report_uri = settings.report_uri(table, ingest_id, attempt, job_try)
    for held in tables_of(record):
        ledger.renew_lease(held, ingest_id)
    sources, origins = reader_uris(record), ledger.origin_uris(record)
    multi = is_multi_table(record)
    arguments = job_arguments(
        settings,
        ingest_id=ingest_id,
        source_uris=sources,
        source_origins=origins if origins and len(origins) == len(sources) else None,
        table=table,
        branch=branch,
        report_uri=report_uri,
        all_or_nothing=isinstance(record, BatchRecord) and bool(record.all_or_nothing),
        dataset=record.dataset_name if multi else None,
        source_tables=list(record.source_tables) if multi else None,
        dataset_config_uri=record.dataset_config_uri if multi else None,
    )
    job_run_id = start_job_run(settings, arguments, attempt=attempt, job_try=job_try)
    started_at = ledger.set_once(ingest_id, started_at_field(attempt, job_try), iso(utcnow()))
    return Run(
        attempt=attempt,
        job_try=job_try,
        branch=branch,
        job_run_id=job_run_id,
        report_uri=report_uri,
        log_uri=job_log_uri(settings, ingest_id, job_run_id),
        started_at=started_at,
    )


def _table_of(record: LedgerRecord) -> str:
    if not record.table:
        raise ValueError(f"ingest {record.ingest_id} names no table")
    return record.table


def run_fields(run: Run) -> Changes:
    """The ledger fields that name an ingest's current job run."""
    return Changes(
        branch=run.branch,
        job_run_id=run.job_run_id,
        attempts=run.attempt,
        job_tries=run.job_try,
        report_uri=run.report_uri,
        log_uri=run.log_uri,
    )


def run_from_fields(record: LedgerRecord) -> Run | None:
    """The current job run a ledger record names (`run_fields` read back); None when the
    record names no complete run."""
    attempt, job_try = int(record.attempts or 0), int(record.job_tries or 0)
    started_at = record.started_at(attempt, job_try)
    if (
        attempt < 1
        or job_try < 1
        or not (record.branch and record.job_run_id and record.report_uri and started_at)
    ):
        return None
    return Run(
        attempt=attempt,
        job_try=job_try,
        branch=record.branch,
        job_run_id=record.job_run_id,
        report_uri=record.report_uri,
        log_uri=record.log_uri,
        started_at=started_at,
    )


def start_or_fail(
    settings: Settings, ledger: Ledger, nessie: NessieClient, record: Record
) -> Record:
    """`start_ingest`, but an ingest that can never start must not block its table.

    On a permanent error (Nessie refusing the branch, an invalid name) the ingest
    is recorded JOB_FAILED with the reason, alerted, and the table handed on.
    Retryable errors propagate (the caller is retried or the sweeper restarts it).
    """
    try:
        return start_ingest(settings, ledger, nessie, record)
    except (NessieError, ValueError) as exc:
        ingest_id, table = record.ingest_id, _table_of(record)
        reason = f"the ingest could not be started: {exc}"
        logger.error(reason, extra={"ingest_id": ingest_id, "table": table})
        settle(settings, ledger, record, c.JOB_FAILED, reason, only_if_status=c.PENDING_STATUSES)
        release_all_and_start_next(settings, ledger, nessie, record)
        return ledger.get_ingest(ingest_id) or record


def release_all_and_start_next(
    settings: Settings, ledger: Ledger, nessie: NessieClient, record: LedgerRecord
) -> str | None:
    """`release_and_start_next` for every table the run holds or waits for (a multi-table
    dataset's, in lock order); returns the successor of its first table. The run's files
    are settled once, however many tables it has."""
    requeue = _settle(settings, ledger, record.ingest_id)  # only a one-table batch splits
    successors = [
        _release_to_next(
            settings, ledger, nessie, table, record.ingest_id, requeue if number == 0 else []
        )
        for number, table in enumerate(tables_of(record))
    ]
    return successors[0] if successors else None


def release_and_start_next(
    settings: Settings, ledger: Ledger, nessie: NessieClient, table: str, ingest_id: str
) -> str | None:
    """Free `table` from `ingest_id` (an ingest or a batch) and start whoever it was handed to:
    the queue's head, with as many queued files as the table's batch limits allow.

    A finished batch first gives each member its outcome (a split one puts its files back
    at the head of the queue). A retryable failure to start the successor is logged, not
    raised: the successor holds the lock in a pending state, which the sweeper restarts.
    """
    requeue = _settle(settings, ledger, ingest_id)
    return _release_to_next(settings, ledger, nessie, table, ingest_id, requeue)


def _settle(settings: Settings, ledger: Ledger, ingest_id: str) -> list[str]:
    """Settle a finished batch's members; the ones that go back to the head of its queue."""
    holder = ledger.get_ingest(ingest_id)
    return settle_members(settings, ledger, holder) if isinstance(holder, BatchRecord) else []


def _release_to_next(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    table: str,
    ingest_id: str,
    requeue: list[str],
) -> str | None:
    """Free `table` (`requeue` back at its queue's head) and start its successor."""
    intake = table_intake(settings, table)
    take = queue_taker(ledger, intake.limits)
    while True:  # a loop, not recursion: a long queue under a broken config is refused here
        successor = ledger.release(table, ingest_id, take=take, requeue=requeue)
        if successor is None:
            return None
        requeue, ingest_id = [], successor.id
        record = (
            open_batch(ledger, table, successor)
            if successor.is_batch
            else ledger.get_ingest(successor.id)
        )
        if record is None:  # a lock entry without a record: skip it
            continue
        if intake.config_error and not record.is_batch:  # (a dataset's job refuses it)
            reject_for_config(ledger, record, intake.config_error, settings=settings)
            continue
        break
    try:
        start_or_fail(settings, ledger, nessie, record)
    except Exception:  # the caller's own outcome (and alert) must not depend on it
        logger.exception(
            "could not start the next ingest; the sweeper will retry",
            extra={"next_ingest_id": successor.id, "table": table},
        )
    return successor.id
