"""Publishing an audited commit, and asking Nessie whether an ingest was published.

`merge_audited_commit` is the one way main moves: the state machine's publish and a
human `wap publish` after review both call it. A merge can commit while its caller
fails (a lost response, a Lambda timeout, a ledger error after the merge): recording
PUBLISH_FAILED or JOB_FAILED then would lie, and a user who re-uploads would get the
rows twice, so failures are recorded only after `main_holds_ingest` says no.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingestion.exceptions import AuditedCommitMismatchError, MergeConflictError
from ingestion.ledger.records import LedgerRecord
from ingestion.log import logger
from ingestion.nessie import MergeMeta, NessieClient

MERGE_TRIES = 2  # a second try absorbs main moving between reading its hash and merging


def merge_audited_commit(
    nessie: NessieClient,
    *,
    table: str,
    branch: str,
    audited_hash: str,
    snapshot_id: int,
    meta: MergeMeta,
    snapshots: Mapping[str, Any] | None = None,
) -> str:
    """Merge exactly `branch@audited_hash` into main, if that commit holds the audited
    snapshot of `table` (of a multi-table dataset: every table's, `snapshots`); return
    main's new hash. One merge: every table lands in the same commit on main.

    Raises `AuditedCommitMismatchError` when the commit holds another snapshot (nothing
    is merged) and `MergeConflictError` when main changed the same table on every try.
    """
    mismatch = snapshot_mismatch(
        nessie, branch, audited_hash, dict(snapshots) if snapshots else {table: snapshot_id}
    )
    if mismatch:
        raise AuditedCommitMismatchError(mismatch)
    conflict: MergeConflictError | None = None
    for _ in range(MERGE_TRIES):
        try:
            return nessie.merge_into_main(branch, audited_hash, meta)
        except MergeConflictError as exc:
            conflict = exc
    assert conflict is not None
    raise conflict


def snapshot_mismatch(
    nessie: NessieClient, branch: str, commit: str, snapshots: Mapping[str, Any]
) -> str | None:
    """Why `branch@commit` is not the audited commit: the first table whose snapshot there
    is not the audited one (`snapshots`: table -> snapshot id); None when all match."""
    for name, expected in snapshots.items():
        held = nessie.table_snapshot(name, branch, commit)
        if held != int(expected):
            return (
                f"{branch}@{commit} holds snapshot {held} of {name}, but the report "
                f"audited snapshot {expected}"
            )
    return None


def audited_snapshot(record: LedgerRecord | None, reported: str | None = None) -> Any:
    """The snapshot id publish was about to merge (ledger), else the one the report named
    (`reported`: the state's `outcome.snapshot_id`)."""
    return (record.audited_snapshot_id if record else None) or reported


def audited_snapshots(
    record: LedgerRecord | None,
    table: str | None,
    reported: str | None = None,
    reported_snapshots: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every table's audited snapshot: a multi-table dataset's (ledger, else the state's
    `outcome.snapshots`), else `{table: audited_snapshot(...)}`; {} when none is known."""
    many = (record.audited_snapshots if record else None) or reported_snapshots
    if many:
        return dict(many)
    snapshot = audited_snapshot(record, reported)
    return {table: snapshot} if table and snapshot is not None else {}


def main_holds_ingest(
    nessie: NessieClient,
    table: str | None,
    record: LedgerRecord | None,
    reported: str | None = None,
    reported_snapshots: Mapping[str, Any] | None = None,
) -> bool:
    """True when main's table is at the ingest's audited snapshot (the merge went through;
    a multi-table dataset: every table at its own, which one merge put there together).

    Raises `NessieUnavailableError` when Nessie cannot say: the caller must not record
    a failure it could not check.
    """
    return main_holds_all(nessie, audited_snapshots(record, table, reported, reported_snapshots))


def main_holds_all(nessie: NessieClient, snapshots: Mapping[str, Any]) -> bool:
    """True when main holds every table at its snapshot (`snapshots`: table -> snapshot
    id); False for none. Raises `NessieUnavailableError` when Nessie cannot say."""
    return bool(snapshots) and all(
        nessie.main_holds(name, int(snapshot)) for name, snapshot in snapshots.items()
    )


def delete_branch_quietly(nessie: NessieClient, branch: str | None) -> bool:
    """Delete a published ingest's branch; False (logged) when that did not happen."""
    if not branch:
        return False
    try:
        nessie.delete_branch(branch)
    except Exception:
        logger.exception(
            "could not delete the published branch; the sweeper retries", extra={"branch": branch}
        )
        return False
    return True
