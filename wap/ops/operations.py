"""The operations behind `wap`: plain functions over a `Backend`, reusable by a dashboard.

Every function validates its input before it changes anything and raises an
`OpsError` subclass with a one-line message when it cannot proceed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contracts.formats import SNIFF_BYTES, content_problem, format_of, unsupported_format_text
from contracts.layout import is_hidden_name
from contracts.naming import BRANCH_PREFIX, ingest_id
from contracts.properties import (
    ACTION_PROPERTY,
    INGEST_ID_PROPERTY,
    REVIEW_REASON_PROPERTY,
    REVIEWED_BY_PROPERTY,
)
from contracts.report import PASSED, AuditReport, CheckResult
from contracts.table_config import (
    MAX_CONFIG_BYTES,
    TableConfigError,
    config_text,
    parse_table_config_text,
)
from ingestion import constants as c
from ingestion.exceptions import AuditedCommitMismatchError, MergeConflictError, NessieError
from ingestion.ledger import BatchRecord, Changes, IngestRecord, QueueStat, Record, tables_of
from ingestion.lifecycle import decide, share
from ingestion.naming import iso, utcnow
from ingestion.nessie import MergeMeta
from ingestion.published import merge_audited_commit
from ingestion.time_split import upload_to_outcome_seconds
from lakeview import iceberg
from wap.exceptions import (
    InvalidInputError,
    NotAllowedError,
    OpsError,
)
from wap.ops.backend import Backend

# Re-exported: `ops.find_ingest` etc. are how the CLI, the dashboard and the tests reach them.
from wap.ops.ingests import find_ingest, ingests_and_batches, parse_table, read_report
from wap.ops.lineage import send_review
from wap.ops.replay import check_redrops, record_drop

MAX_REASON_CHARS = 500
PUBLISHABLE = frozenset({c.AUDIT_FAILED})


# ---- runs and branches ------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRow:
    """One ingest as `wap runs` lists it."""

    ingest_id: str
    table: str | None
    source: str | None
    status: str
    branch: str | None
    when: str | None
    rows_written: int | None
    reason: str | None
    batch_id: str | None = None  # the batch it ran in, if it was one of several files
    quarantined_rows: int | None = None  # set aside in the quarantine table (issue 40)
    # What its load cost in USD (EMR's billed resources priced; a batch's file: its share
    # by bytes), and the seconds from its upload to its outcome (ingestion/time_split.py).
    cost_usd: float | None = None
    upload_to_outcome_seconds: float | None = None
    # EMR billed its run but the stack's region has no price (contracts/pricing.py).
    cost_unknown: bool = False


@dataclass(frozen=True)
class BatchRow:
    """One run over several queued files, as `wap runs` lists it."""

    batch_id: str
    table: str | None
    files: int
    status: str
    branch: str | None
    when: str | None
    reason: str | None
    cost_usd: float | None = None  # the run's whole cost (its files' shares add up to it)


def list_batches(
    backend: Backend, *, table: str | None = None, limit: int | None = None
) -> list[BatchRow]:
    """Batches from the ledger, newest first (their files are listed as ingests)."""
    wanted = parse_table(table).qualified if table is not None else None
    rows = [
        BatchRow(
            batch_id=r.ingest_id,
            table=", ".join(tables_of(r)) or None,
            files=len(r.members),
            status=r.status or "?",
            branch=r.branch,
            when=r.last_change,
            reason=r.error,
            cost_usd=r.cost_usd,
        )
        for r in reversed(backend.ledger.list_batches())
        if wanted is None or wanted in tables_of(r)
    ]
    return rows[:limit] if limit else rows


def list_queues(backend: Backend, *, table: str | None = None) -> list[QueueStat]:
    """Tables with files waiting for their turn: how many, and the oldest one's wait."""
    wanted = parse_table(table).qualified if table is not None else None
    return [q for q in backend.ledger.queues(utcnow()) if wanted in (None, q.table)]


def list_runs(
    backend: Backend, *, table: str | None = None, limit: int | None = None
) -> list[RunRow]:
    """Ingests from the ledger, newest first."""
    if table is not None:
        table = parse_table(table).qualified
    # Newest first from the index: one page for the default limit, however long the history.
    records = (
        list(reversed(backend.ledger.newest_ingests(limit, table=table)))
        if limit
        else backend.ledger.list_ingests(table=table)
    )
    rows = [
        RunRow(
            ingest_id=r.ingest_id,
            table=r.table,
            source=r.source_uri,
            status=r.status or "?",
            branch=r.branch,
            when=r.last_change,
            rows_written=r.rows_written,
            reason=r.error,
            batch_id=(r.batch_id or r.split_from) if isinstance(r, IngestRecord) else None,
            quarantined_rows=r.quarantined_rows,
            cost_usd=r.cost_usd,
            upload_to_outcome_seconds=upload_to_outcome_seconds(r),
            cost_unknown=r.cost_usd is None and r.vcpu_hours is not None,
        )
        for r in reversed(records)
    ]
    return rows[:limit] if limit else rows


@dataclass(frozen=True)
class BranchRow:
    """An open WAP branch, joined with the ingest that made it."""

    name: str
    hash: str
    table: str | None
    ingest_id: str | None
    status: str | None
    reason: str | None
    since: str | None
    age_seconds: float | None


def list_branches(backend: Backend, *, now: datetime | None = None) -> list[BranchRow]:
    """Open `wap_*` branches in Nessie, oldest first, with their ingest's outcome and age."""
    now = now or utcnow()
    by_branch = {r.branch: r for r in ingests_and_batches(backend) if r.branch}
    rows = []
    for ref in backend.nessie.references():
        if ref.type != "BRANCH" or not ref.name.startswith(BRANCH_PREFIX):
            continue
        record = by_branch.get(ref.name)
        since = (
            (record.finished_at or record.created_at) if record else None
        ) or ref.head_commit_time
        rows.append(
            BranchRow(
                name=ref.name,
                hash=ref.hash,
                table=record.table if record else None,
                ingest_id=record.ingest_id if record else None,
                status=record.status if record else None,
                reason=record.error if record else None,
                since=since,
                age_seconds=_age(since, now),
            )
        )
    return sorted(rows, key=lambda r: (r.since or "", r.name))


def _age(stamp: str | None, now: datetime) -> float | None:
    if not stamp:
        return None
    try:
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max((now - at).total_seconds(), 0.0)


# ---- one ingest ------------------------------------------------------------------------------


def _refuse_dataset_member(backend: Backend, record: Record, verb: str) -> None:
    """A file of a dataset (published all or nothing) is published or discarded with its
    dataset, never alone: point at the batch that holds its branch."""
    batch_id = record.batch_id if isinstance(record, IngestRecord) else None
    if record.branch or not batch_id:
        return
    batch = backend.ledger.get_ingest(batch_id)
    if isinstance(batch, BatchRecord) and batch.all_or_nothing:
        raise NotAllowedError(
            f"ingest {record.ingest_id} is one of the {len(batch.members)} "
            f"files of dataset {batch.dataset or batch_id}, published all or nothing: "
            f"{verb} the dataset's batch instead (wap {verb} {batch_id})"
        )


def _members_follow(backend: Backend, record: Record, status: str, fields: dict[str, Any]) -> None:
    """A batch's files share its outcome (a dataset's always): give them the one a person
    just gave the batch (those still holding the batch's outcome)."""
    if not isinstance(record, BatchRecord) or not record.members:
        return
    share(
        backend.ledger,
        dict.fromkeys(record.members, Changes(status=status, **fields)),
        only_if_status={record.status},
        only_if=("batch_id", record.ingest_id),
    )


@dataclass
class IngestView:
    """What `wap show` prints: the record, its audit report and row counts main vs branch."""

    record: Record
    report: AuditReport | None
    branch_open: bool
    main_rows: int | None
    branch_rows: int | None
    failed_checks: list[CheckResult] = field(default_factory=list)
    # A multi-table dataset: each table's rows written, on main and on the branch.
    tables: list[TableRows] = field(default_factory=list)
    # The tables main changed since the audit: a publish of the branch would conflict.
    publish_conflicts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TableRows:
    """One table of a multi-table dataset as `wap show` counts it."""

    table: str
    written: int | None
    main_rows: int | None
    branch_rows: int | None


def show(backend: Backend, target: str) -> IngestView:
    """The ingest behind `target` with its report; counts read through pyiceberg (no JVM)."""
    record = find_ingest(backend, target)
    report = read_report(backend, record)
    table, branch = record.table, record.branch
    branch_open = bool(branch) and backend.nessie.reference(branch) is not None
    per_table = dataset_tables(
        record, report, lambda ref, name: _rows_on(backend, ref, name), branch_open=branch_open
    )
    # A dataset's record names its first table: per_table has counted it already.
    own = next((rows for rows in per_table if rows.table == table), None)
    if own is not None:
        main_rows, branch_rows = own.main_rows, own.branch_rows
    else:
        main_rows = _rows_on(backend, c.MAIN_BRANCH, table) if table else None
        branch_rows = _rows_on(backend, branch, table) if table and branch_open else None
    failed = [ch for ch in report.checks if ch.status != PASSED] if report else []
    return IngestView(
        record=record,
        report=report,
        branch_open=branch_open,
        main_rows=main_rows,
        branch_rows=branch_rows,
        failed_checks=failed,
        tables=per_table,
        publish_conflicts=(
            publish_conflicts(backend, record, report.branch_hash if report else None)
            if branch_open
            else []
        ),
    )


def conflict_text(tables: Sequence[str]) -> str:
    """Why a branch whose tables main changed since its audit cannot be published, and
    what to do instead."""
    return (
        f"main changed {', '.join(tables)} since the audit, so a publish of the branch "
        "would conflict (a merge carries the branch's state of a table, not only its new "
        "rows); to publish these rows, drop the file again: it is audited against main as "
        "it is now"
    )


def publish_conflicts(backend: Backend, record: Record, reported: str | None = None) -> list[str]:
    """The tables main changed since a publishable ingest's audit, which would make `wap
    publish` of its branch conflict (Nessie merges the branch's table state, not its rows);
    [] when it would merge, or when Nessie does not say (e.g. this role may not merge).
    `reported`: the audited hash the report names, for records that do not."""
    audited = record.branch_hash or reported
    if record.status not in PUBLISHABLE or not record.branch or not audited:
        return []
    try:
        return backend.nessie.merge_conflicts(record.branch, audited)
    except NessieError:
        return []


def dataset_tables(
    record: Record,
    report: AuditReport | None,
    rows_on: Callable[[str | None, str], int | None] | None = None,
    *,
    branch_open: bool = False,
) -> list[TableRows]:
    """A multi-table dataset's tables with the rows it wrote to each (its report) and, with
    `rows_on(ref, table)`, each table's rows on main and (`branch_open`) on its branch; []
    for one table."""
    if len(tables_of(record)) < 2:
        return []
    written = {entry.table: entry.rows_written for entry in report.tables} if report else {}
    return [
        TableRows(
            name,
            written.get(name),
            rows_on(c.MAIN_BRANCH, name) if rows_on else None,
            rows_on(record.branch, name) if rows_on and branch_open else None,
        )
        for name in tables_of(record)
    ]


def _rows_on(backend: Backend, ref: str | None, table: str) -> int | None:
    """The table's rows on `ref` (pyiceberg), None when the ref does not hold it."""
    location = backend.nessie.metadata_location(ref, table) if ref else None
    return iceberg.row_count(location, backend.iceberg_properties()) if location else None


# ---- publish and discard --------------------------------------------------------------------


@dataclass(frozen=True)
class Published:
    """A manual publish: the ingest, the merge commit on main and its message."""

    ingest_id: str
    branch: str
    main_hash: str
    message: str


def _clean_text(text: str | None, what: str, *, required: bool) -> str:
    cleaned = " ".join((text or "").split())
    if required and not cleaned:
        raise InvalidInputError(f"a {what} is required")
    if len(cleaned) > MAX_REASON_CHARS:
        raise InvalidInputError(f"the {what} is longer than {MAX_REASON_CHARS} characters")
    return cleaned


def publish(backend: Backend, target: str, *, reason: str, actor: str) -> Published:
    """Merge a failed ingest's audited commit into main after human review.

    The merge commit message names the reviewer and the reason; the ledger
    records them and the ingest becomes PUBLISHED. Only the audited hash is
    merged: a branch that moved since its audit is refused.
    """
    reason = _clean_text(reason, "--reason", required=True)
    actor = _clean_text(actor, "reviewer name", required=True)
    record = find_ingest(backend, target)
    _refuse_dataset_member(backend, record, "publish")
    iid, status, branch, table = record.ingest_id, record.status, record.branch, record.table
    if status not in PUBLISHABLE:
        raise NotAllowedError(
            f"ingest {iid} is {status}: only AUDIT_FAILED ingests can be published by hand"
        )
    audited, snapshot = record.branch_hash, record.snapshot_id
    if not audited or snapshot is None:  # recorded by finish; older records: the report
        report = read_report(backend, record)
        audited = audited or (report.branch_hash if report else None)
        snapshot = snapshot if snapshot is not None else (report.snapshot_id if report else None)
    snapshots = None
    if len(tables_of(record)) > 1:  # a multi-table dataset: every table's, one merge
        report = read_report(backend, record)
        snapshots = report.snapshots if report else None
        if not snapshots:
            raise NotAllowedError(f"ingest {iid} wrote nothing to publish")
    if not branch or not table or not audited or snapshot is None:
        raise NotAllowedError(f"ingest {iid} wrote nothing to publish")
    head = backend.nessie.reference(branch)
    if head is None:
        raise NotAllowedError(f"branch {branch} no longer exists in Nessie")
    if head.hash != audited:
        raise NotAllowedError(
            f"branch {branch} moved since its audit (head {head.hash[:12]}, "
            f"audited {audited[:12]}); re-ingest the file instead"
        )
    message = f"wap publish {branch} (ingest {iid}) after review by {actor}: {reason}"
    meta = MergeMeta(
        message=message,
        author=actor,
        properties={
            INGEST_ID_PROPERTY: iid,
            ACTION_PROPERTY: "manual-publish",
            REVIEWED_BY_PROPERTY: actor,
            REVIEW_REASON_PROPERTY: reason,
        },
    )
    try:
        main_hash = merge_audited_commit(
            backend.nessie,
            table=table,
            branch=branch,
            audited_hash=audited,
            snapshot_id=int(snapshot),
            meta=meta,
            snapshots=snapshots,
        )
    except AuditedCommitMismatchError as exc:
        raise NotAllowedError(f"ingest {iid}: {exc}") from exc
    except MergeConflictError as exc:
        raise NotAllowedError(f"{conflict_text(tables_of(record))} ({exc})") from exc
    now = iso(utcnow())
    published = {
        "previous_status": status,
        "error": None,
        "published_by": actor,
        "publish_reason": reason,
        "published_at": now,
        "published_hash": main_hash,
    }
    _members_follow(backend, record, c.PUBLISHED, {**published, "finished_at": now})
    decide(
        backend.ledger,
        iid,
        Changes(status=c.PUBLISHED, audit_error=record.error, published_branch=branch, **published),
        only_if_status={status},
    )
    backend.nessie.delete_branch(branch, audited)
    backend.ledger.update_ingest(iid, branch_deleted_at=iso(utcnow()))
    backend.changed()
    send_review(backend, backend.ledger.get_ingest(iid) or record)
    return Published(ingest_id=iid, branch=branch, main_hash=main_hash, message=message)


def discarded_by(actor: str) -> str:
    """How a discard's reason in the ledger begins: it names who discarded."""
    return f"discarded by {actor}"


def discard(backend: Backend, target: str, *, actor: str, reason: str | None = None) -> Record:
    """Delete a failed ingest's branch and mark it DISCARDED; returns the updated record."""
    reason = _clean_text(reason, "--reason", required=False)
    actor = _clean_text(actor, "user name", required=True)
    record = find_ingest(backend, target)
    _refuse_dataset_member(backend, record, "discard")
    iid, status, branch = record.ingest_id, record.status, record.branch
    if status not in c.FAILED_STATUSES:
        raise NotAllowedError(
            f"ingest {iid} is {status}: only failed ingests "
            f"({', '.join(sorted(c.FAILED_STATUSES))}) can be discarded"
        )
    if branch:
        head = backend.nessie.reference(branch)
        if head is not None:
            backend.nessie.delete_branch(branch, head.hash)
    discarded = {
        "previous_status": status,
        "discarded_by": actor,
        "discard_reason": discarded_by(actor) + (f": {reason}" if reason else ""),
    }
    _members_follow(backend, record, c.DISCARDED, discarded)
    decide(
        backend.ledger,
        iid,
        Changes(status=c.DISCARDED, branch_deleted_at=iso(utcnow()), **discarded),
        only_if_status={status},
    )
    backend.changed()
    updated = backend.ledger.get_ingest(iid)
    assert updated is not None
    send_review(backend, updated)
    return updated


# ---- ingest ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dropped:
    """A local file uploaded to the source bucket, and the ingest it starts."""

    path: Path
    key: str
    ingest_id: str


def check_source_file(path: Path, configured_format: str | None = None) -> None:
    """Raise `InvalidInputError` unless `path` is a readable file the trigger would take:
    of its table's `format:` (`configured_format`), else of a format its extension names
    (contracts/formats.py), with first bytes of that format."""
    if not path.exists():
        raise InvalidInputError(f"no such file: {path}")
    if not path.is_file():
        raise InvalidInputError(f"not a file: {path}")
    if is_hidden_name(path.name):
        raise InvalidInputError(
            f"{path.name}: names starting with _ or . are marker files "
            "the trigger ignores; rename the file"
        )
    fmt = format_of(path.name, configured_format)
    if fmt is None:
        raise InvalidInputError(unsupported_format_text(path.name))
    size = path.stat().st_size
    if size == 0:
        raise InvalidInputError(f"empty file (0 bytes): {path}")
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
        handle.seek(max(size - 4, 0))
        tail = handle.read(4)
    problem = content_problem(str(path), fmt, head, tail, size)
    if problem:
        raise InvalidInputError(problem)


def configured_format(config: Path) -> str | None:
    """The `format:` of the table config file `config` (None: no such file, or it sets
    none). A config the trigger and the job would refuse is refused here, in their words,
    before any file is uploaded."""
    if not config.is_file():
        return None
    import yaml

    with config.open("rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    try:
        return parse_table_config_text(
            config_text(data, str(config)), str(config), yaml=yaml
        ).format
    except TableConfigError as exc:
        raise InvalidInputError(str(exc)) from exc


def drop_files(
    backend: Backend, paths: Sequence[Path | str], table: str, configured: str | None = None
) -> list[Dropped]:
    """Validate every file (read as the table's `format:`, `configured`, else by its
    extension) and the table first, then upload each to `<ns>/<table>/<name>`."""
    ref = parse_table(table)
    files = [Path(p) for p in paths]
    if not files:
        raise InvalidInputError("no files given")
    for path in files:
        check_source_file(path, configured)
    names = [p.name for p in files]
    if len(set(names)) != len(names):
        raise InvalidInputError("two files have the same name; they would land on the same key")
    check_redrops(backend, ref.qualified, names)  # an exported quarantine file, again
    dropped = []
    for position, path in enumerate(files):
        if position:
            # Ingests of one table queue in the order the trigger records them, and S3
            # events race each other: let the previous file be recorded first so the
            # files run in the order given (a later file then sees the earlier ones on main).
            _wait_until_recorded(backend, dropped[-1].ingest_id, timeout=RECORD_WAIT_SECONDS)
        key = f"{ref.namespace}/{ref.name}/{path.name}"
        dropped.append(
            Dropped(
                path=path, key=key, ingest_id=upload_for_ingest(backend, key, path.read_bytes())
            )
        )
        record_drop(backend, ref.qualified, path.name, dropped[-1].ingest_id)
    return dropped


def upload_for_ingest(backend: Backend, key: str, body: bytes) -> str:
    """Put `body` at `key` in the source bucket; the id of the ingest the trigger records
    for that object version (its version id, else its ETag)."""
    put = backend.upload_source(key, body)
    return ingest_id(backend.source_bucket, key, put.get("version_id") or put["etag"])


RECORD_WAIT_SECONDS = 60.0


def _wait_until_recorded(
    backend: Backend, ingest: str, *, timeout: float, poll_seconds: float = 0.1
) -> None:
    """Until the trigger recorded `ingest` in the ledger; gives up quietly after `timeout`."""
    deadline = time.monotonic() + timeout
    while backend.ledger.get_ingest(ingest) is None and time.monotonic() < deadline:
        time.sleep(poll_seconds)


@dataclass(frozen=True)
class Progress:
    """Where one ingest is while `wait_for_ingests` waits."""

    key: str
    ingest_id: str
    status: str
    step: str | None = None


def wait_for_ingests(
    backend: Backend,
    dropped: Sequence[Dropped],
    *,
    timeout: float = 600,
    poll_seconds: float = 0.5,
    on_progress: Callable[[list[Progress]], None] | None = None,
) -> list[Record]:
    """Poll the ledger until every ingest reached a final status; return their records."""
    deadline = time.monotonic() + timeout
    while True:
        records = {d.ingest_id: backend.ledger.get_ingest(d.ingest_id) for d in dropped}
        progress = []
        for d in dropped:
            record = records[d.ingest_id]
            status = (record.status or "?") if record else "UPLOADED"
            step = backend.current_step(d.ingest_id) if status == c.RUNNING else None
            progress.append(Progress(d.key, d.ingest_id, status, step))
        if on_progress is not None:
            on_progress(progress)
        if all(r is not None and r.is_terminal for r in records.values()):
            break
        if time.monotonic() > deadline:
            pending = [p.key for p in progress if p.status not in c.TERMINAL_STATUSES]
            raise OpsError(f"timed out after {timeout:.0f} s waiting for {', '.join(pending)}")
        time.sleep(poll_seconds)
    backend.settle(max(deadline - time.monotonic(), 30))
    return [
        backend.ledger.get_ingest(d.ingest_id) or IngestRecord(ingest_id=d.ingest_id)
        for d in dropped
    ]
