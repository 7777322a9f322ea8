"""Batches: several queued files of one table in one run, and each file's outcome after it.

When a table is handed on, the next run takes every queued file up to the table's
`batch:` limits (`contracts.batching.BatchLimits`, from the table config). More than one
file become a batch: a record of its own (kind `batch`, keyed like an ingest, so the
branch, job run, execution, publish and finish treat it as one ingest) whose members are
the files' own records, RUNNING with `batch_id` while it runs.

When the batch ends, `settle_members` gives every member its own outcome from the
report's per-source verdicts (docs/batches.md):
- PUBLISHED: every member is published, except a source the job rejected (REJECTED);
- AUDIT_FAILED or REJECTED: the batch is SPLIT: rejected sources end REJECTED, the files
  that passed go back to the head of the queue together, each failing file goes back to
  run alone (its own branch, report, samples and alert, as a single file always did);
  when no file failed on its own, the two halves of the batch run apart;
- any other end (JOB_FAILED, PUBLISH_FAILED): every member ends as the batch did.
Every step is idempotent: members are changed only while RUNNING in this batch.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from contracts.batching import ARRIVAL_EVENT, ARRIVAL_MARKER, BatchLimits
from contracts.config_text import CONFIG_ERROR
from contracts.job_tables import is_job_table, job_table_reason
from contracts.layout import file_name
from contracts.report import SOURCE_PASSED, SOURCE_REJECTED, AuditReport, ReportError
from contracts.table_config import (
    MAX_CONFIG_BYTES,
    TableConfig,
    TableConfigError,
    config_text,
    parse_table_config_text,
)
from ingestion import aws
from ingestion import constants as c
from ingestion.config import Settings
from ingestion.job_cost import member_fields
from ingestion.ledger import (
    BatchRecord,
    Changes,
    IngestRecord,
    Ledger,
    LedgerRecord,
    Record,
    Successor,
)
from ingestion.lifecycle import settle, share
from ingestion.naming import TableRef, iso, split_s3_uri, utcnow
from ingestion.nessie import NessieClient

_log = logging.getLogger(__name__)
RERUN_GROUP = "rerun_group"  # a member record's field: the half of a split batch it is in


def is_batch(record: LedgerRecord | None) -> TypeGuard[BatchRecord]:
    """Whether a ledger record is a batch's (not one file's)."""
    return isinstance(record, BatchRecord)


@dataclass(frozen=True)
class Intake:
    """How a table takes its files in: its batch limits, its arrival mode and the format
    its files are read as, or why its config cannot be used (`config_error`: every file
    is then refused with that reason)."""

    limits: BatchLimits = field(default_factory=BatchLimits)
    arrival: str = ARRIVAL_EVENT
    config_error: str | None = None
    configured: bool = False  # the table has a config file (usable or not)
    format: str | None = None  # the config's `format:`; None: each file's extension

    @property
    def by_marker(self) -> bool:
        return self.arrival == ARRIVAL_MARKER


def table_intake(settings: Settings, table: str) -> Intake:
    """The table config's `batch:`, `arrival:` and `format:`; the defaults when there is
    no config.

    The whole config is read and parsed as the job does (`contracts.table_config`): one
    the job would refuse (too large, not UTF-8, not YAML, an unknown key, a bad check,
    `batch:`, `arrival:`, `format:`, `csv:` or `parse:`) gives an Intake with
    `config_error`, in the job's words (one file per run meanwhile): the callers refuse
    the files at once rather than run a job that would refuse the same config. What only
    the table schema reveals (a check on a column the table lacks) is still the job's to
    find.
    """
    try:
        config = read_table_config(settings, table)
    except TableConfigError as exc:
        _log.error("table config %s refused: %s", settings.table_config_uri(table), exc)
        return Intake(BatchLimits(max_files=1), config_error=str(exc), configured=True)
    if config is None:
        return Intake()
    return Intake(config.batch, config.arrival, configured=True, format=config.format)


def read_table_config(settings: Settings, table: str) -> TableConfig | None:
    """The table's deployed config (at most MAX_CONFIG_BYTES), read and parsed as the job
    does (`contracts.table_config`); None when it has none (or no config prefix is
    deployed). Raises TableConfigError for one the job would refuse."""
    uri = settings.table_config_uri(table)
    data = aws.read_bytes_s3(uri, max_bytes=MAX_CONFIG_BYTES) if uri else None
    if uri is None or data is None:
        return None
    import yaml  # pynessie's dependency (confuse) brings it into every Lambda bundle

    return parse_table_config_text(config_text(data, uri), uri, yaml=yaml)


MAX_SUGGESTIONS = 3  # close table names an `unknown_table` rejection offers
MAX_LISTED = 10  # known tables it lists when none is close


def unknown_table_reason(
    settings: Settings, nessie: NessieClient, table: str, intake: Intake
) -> str | None:
    """Why an upload for `table` is refused as `unknown_table`, or None when it may run.

    A table is known when it has a config (`intake.configured`) or is on main. Otherwise
    the upload would create it, which only a deploy with `createTablesFromUploads` allows:
    a mistyped prefix must not become a new table. The reason names the closest known
    tables (configured or on main; data tables only). A table only the audits write
    (contracts/job_tables.py) is refused whatever the deploy allows. Nessie being
    unreachable raises (retryable): the file stays RECEIVED for the trigger's retries and
    then the sweeper, which check again.
    """
    written_by_audits = job_table_reason(table)  # a metric history or quarantine
    if written_by_audits:
        return written_by_audits
    if intake.configured or settings.create_tables_from_uploads:
        return None
    if nessie.metadata_location(c.MAIN_BRANCH, table) is not None:
        return None
    known = sorted(
        name
        for name in set(configured_tables(settings)) | set(nessie.iceberg_tables(c.MAIN_BRANCH))
        if not is_job_table(name)
    )
    close = difflib.get_close_matches(table, known, n=MAX_SUGGESTIONS, cutoff=0.6)
    config = settings.table_config_uri(table)
    reason = f"unknown table {table} (no config{' ' + config if config else ''}, not on main)"
    if close:
        reason += f"; did you mean {' or '.join(close)}?"
    elif known:
        more = len(known) - MAX_LISTED
        reason += (
            f"; known tables: {', '.join(known[:MAX_LISTED])}"
            + (f" and {more} more" if more > 0 else "")
            + "."
        )
    else:
        reason += "; no table is configured or on main yet."
    return (
        f"{reason} Nothing was created: to create {table}, add its config, or let "
        "uploads create tables (deploy with -c createTablesFromUploads=true; locally "
        "`wap ingest --create`)"
    )


def configured_tables(settings: Settings) -> list[str]:
    """The tables that have a config file under the deployed config prefix."""
    if not settings.tables_config_prefix:
        return []
    bucket, prefix = split_s3_uri(settings.tables_config_prefix.rstrip("/") + "/")
    s3 = aws.client("s3")

    def listed() -> list[str]:
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys += [item["Key"] for item in page.get("Contents", [])]
        return keys

    tables = []
    for found in aws.call(f"list the table configs under s3://{bucket}/{prefix}", listed):
        name = found[len(prefix) :].removesuffix(".yaml")
        if not found.endswith(".yaml") or "/" in name:
            continue
        try:
            tables.append(TableRef.parse(name).qualified)
        except ValueError:
            continue
    return tables


def reject_for_config(
    ledger: Ledger,
    record: LedgerRecord,
    reason: str,
    reason_code: str = CONFIG_ERROR,
    *,
    settings: Settings,
) -> bool:
    """Record a pending file REJECTED (`config_error`, or the `reason_code` given, e.g.
    `unknown_table`), alerted once, with its metrics and lineage; False when another
    invocation already settled it."""
    return (
        settle(
            settings,
            ledger,
            record,
            c.REJECTED,
            reason,
            only_if_status=c.PENDING_STATUSES,
            fields={"reason_code": reason_code},
        )
        is not None
    )


def queue_taker(ledger: Ledger, limits: BatchLimits) -> Callable[[list[str]], int]:
    """`Ledger.release`'s `take`: how many queued files, from the head, the next run takes.

    A file marked `solo` (it failed in a batch) and a dataset (already a batch) run alone,
    and end a batch before them. Files of one `rerun_group` (half of a split batch) run
    together, never with files outside it.
    """

    def take(queue: list[str]) -> int:
        # The files that may run together, from the head; the limits (and "a run takes
        # at least one file") are the contract's `BatchLimits.take`.
        sizes: list[int] = []
        records = ledger.get_ingests(queue[: limits.max_files])
        group = _rerun_group(records.get(queue[0])) if queue else None
        for queued in queue[: limits.max_files]:
            record = records.get(queued)
            alone = not isinstance(record, IngestRecord) or bool(record.solo)
            if sizes and (alone or _rerun_group(record) != group):
                break
            sizes.append(int((record.size if record else 0) or 0))
            if alone:
                break
        return limits.take(sizes)

    return take


def _rerun_group(record: Record | None) -> str | None:
    """The half of a split batch a queued file belongs to (`RERUN_GROUP`), if any."""
    return record.rerun_group if isinstance(record, IngestRecord) else None


def staged_uri_of(record: LedgerRecord) -> str | None:
    """A file's staged copy (None for a batch, which has one per member)."""
    return record.staged_uri if isinstance(record, IngestRecord) else None


def open_batch(ledger: Ledger, table: str, successor: Successor) -> BatchRecord:
    """The batch record of `successor` (created once) with its members marked RUNNING in it."""
    found = ledger.get_ingests(successor.members)
    members = [found.get(member) or IngestRecord(ingest_id=member) for member in successor.members]
    first = members[0]
    more = len(members) - 1
    ledger.create_ingest(
        BatchRecord(
            ingest_id=successor.id,
            table=table,
            members=tuple(successor.members),
            sources=tuple(staged_uri_of(member) for member in members),
            files=len(members),
            source_uri=f"{first.source_uri} (+{more} more file{'s' * (more != 1)})",
            size=sum(int(member.size or 0) for member in members),
            sizes=tuple(int(member.size or 0) for member in members),
            attempts=0,
            status=c.RECEIVED,
            staged_at=iso(utcnow()),
        )
    )
    running = Changes(status=c.RUNNING, batch_id=successor.id, solo=None, rerun_group=None)
    ledger.update_ingests(
        {member: running for member in successor.members}, only_if_status=c.PENDING_STATUSES
    )
    record = ledger.get_ingest(successor.id)
    assert isinstance(record, BatchRecord)
    return record


def settle_members(settings: Settings, ledger: Ledger, batch: BatchRecord) -> list[str]:
    """Give each member of a finished batch its own outcome (see the module docstring):
    a file rejected on its own is settled (alerted, counted); the others share the batch's,
    which its own settle announced. Returns the members that go back to the head of the
    queue, in the order they run."""
    status = batch.status
    if status not in c.TERMINAL_STATUSES and status != c.SPLIT:
        return []
    members = list(batch.members)
    verdicts = _member_verdicts(batch)
    if status == c.SPLIT:
        return _split(settings, ledger, batch, members, verdicts)
    now = iso(utcnow())
    updates = {}
    # A multi-table dataset: each file gets the snapshot of its own table.
    table_of = batch.member_tables
    snapshots = dict(batch.audited_snapshots or {})
    # Each file's share of the run's cost (by its bytes) and the run's EMR times.
    costs = member_fields(batch)
    for member in members:
        verdict = verdicts.get(member) or {}
        # A dataset's files share its outcome: the job publishes all of them or none.
        if verdict.get("status") == SOURCE_REJECTED and not batch.all_or_nothing:
            _reject(settings, ledger, batch, member, verdict)
            continue
        fields: dict[str, Any] = {
            "status": status,
            "finished_at": now,
            "error": batch.error,
            "report_uri": batch.report_uri,
            "log_uri": batch.log_uri,
            **costs.get(member, {}),
        }
        if status == c.PUBLISHED:
            fields.update(
                snapshot_id=snapshots.get(table_of.get(member), batch.snapshot_id),
                rows_written=verdict.get("rows"),
                quarantined_rows=verdict.get("quarantined_rows"),
                published_hash=batch.published_hash,
            )
        updates[member] = Changes(**fields)
    share(ledger, updates, only_if_status={c.RUNNING}, only_if=("batch_id", batch.ingest_id))
    return []


def split_reason(status: str, reason: str | None) -> str:
    """What the batch record says when it splits."""
    return f"split after {status}: {reason}" if reason else f"split after {status}"


MAX_NAMED_FILES = 10  # an alert names this many failing files, then counts the rest


def failing_files(batch: BatchRecord) -> str | None:
    """The batch's files that did not pass, by name and with their failed checks, for its
    alert: at most MAX_NAMED_FILES named (a dataset may have thousands)."""
    verdicts = _member_verdicts(batch)
    names = batch.member_sources
    # A multi-table dataset's files may share a name: each is named with its table.
    tables = batch.member_tables
    failing = []
    for member, verdict in verdicts.items():
        if verdict["status"] == SOURCE_PASSED:
            continue
        name = file_name(str(names.get(member) or member))
        if member in tables:
            name = f"{tables[member]}: {name}"
        why = ", ".join(verdict["failed_checks"]) or verdict.get("reason") or verdict["status"]
        failing.append(f"{name} ({why})")
    if not failing:
        return None
    shown = "; ".join(failing[:MAX_NAMED_FILES])
    more = len(failing) - MAX_NAMED_FILES
    return f"{len(failing)} of {len(names)} files failed: {shown}" + (
        f"; and {more} more (wap show {batch.ingest_id})" if more > 0 else ""
    )


def _split(
    settings: Settings,
    ledger: Ledger,
    batch: BatchRecord,
    members: list[str],
    verdicts: dict[str, dict[str, Any]],
) -> list[str]:
    rejected = [m for m in members if verdicts.get(m, {}).get("status") == SOURCE_REJECTED]
    passed = [m for m in members if verdicts.get(m, {}).get("status") == SOURCE_PASSED]
    # A member without a verdict (the report has none: the run stopped as a whole) is not
    # blamed: it runs in a half below, not alone (10 files took 11 runs).
    failed = [m for m in members if m in verdicts and m not in rejected and m not in passed]
    for member in rejected:
        _reject(settings, ledger, batch, member, verdicts[member])
    split_from = batch.ingest_id
    if failed:
        alone = failed + [m for m in members if m not in verdicts]
        _requeue(ledger, batch, {**{m: {} for m in passed}, **{m: _SOLO for m in alone}})
        # The group goes first (it publishes in one more run), then each failing file.
        return passed + alone
    # The batch failed as a whole and no file on its own (a key repeated across two
    # files, or no verdict at all): its halves run apart, so the culprits are found in
    # about 2 log2(n) runs, not n. A half of one file runs alone, so a split always ends.
    remaining = [m for m in members if m not in rejected]
    middle = (len(remaining) + 1) // 2
    halves = [half for half in (remaining[:middle], remaining[middle:]) if half]
    _requeue(
        ledger,
        batch,
        {
            member: {RERUN_GROUP: f"{split_from}/{number}"} if len(half) > 1 else _SOLO
            for number, half in enumerate(halves, start=1)
            for member in half
        },
    )
    return [member for half in halves for member in half]


def _reject(
    settings: Settings,
    ledger: Ledger,
    batch: BatchRecord,
    member: str,
    verdict: Mapping[str, Any],
) -> None:
    """A file the job could not read ends REJECTED on its own (alerted, counted), while it
    is still RUNNING in this batch."""
    reason = verdict.get("reason") or "the job could not read this file"
    record = ledger.get_ingest(member) or IngestRecord(ingest_id=member, table=batch.table)
    settle(
        settings,
        ledger,
        record,
        c.REJECTED,
        reason,
        only_if_status={c.RUNNING},
        only_if=("batch_id", batch.ingest_id),
        fields={"report_uri": batch.report_uri, "log_uri": batch.log_uri},
        # The record keeps the batch's report (its verdict is there), but the alert must
        # speak of this file only: not the batch's rows, files, checks and samples.
        alert_without=("report_uri", "branch"),
    )


_SOLO = {"solo": True}  # a requeued file that runs alone


def _requeue(ledger: Ledger, batch: BatchRecord, groups: Mapping[str, Mapping[str, Any]]) -> None:
    """Put members still RUNNING in this split batch (a settled one is left as it is) back
    in its queue, each with how it runs again (`groups`: id -> `solo` or its half)."""
    ledger.update_ingests(
        {
            member: Changes(status=c.QUEUED, batch_id=None, split_from=batch.ingest_id, **how)
            for member, how in groups.items()
        },
        only_if_status={c.RUNNING},
        only_if=("batch_id", batch.ingest_id),
    )


def _member_verdicts(batch: BatchRecord) -> dict[str, dict[str, Any]]:
    """Each member's verdict from the batch's report (by its staged source); none when the
    report is missing or does not match the contract (every member is then unknown)."""
    report_uri = batch.report_uri
    if not report_uri:
        return {}
    try:
        data = aws.read_json_s3(report_uri)
        report = AuditReport.from_dict(data, f"audit report {report_uri}") if data else None
    except ReportError as exc:
        _log.error("batch %s: %s", batch.ingest_id, exc)
        return {}
    if report is None:
        return {}
    by_source = {verdict.uri: verdict for verdict in report.sources}
    verdicts = {}
    for member, source in batch.member_sources.items():
        verdict = by_source.get(source)
        if verdict is not None:
            verdicts[member] = {
                "status": verdict.status,
                "rows": verdict.rows,
                "reason": verdict.reason,
                "failed_checks": list(verdict.failed_checks),
                "quarantined_rows": verdict.quarantined_rows,
            }
    return verdicts
