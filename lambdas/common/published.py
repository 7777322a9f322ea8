"""Was an ingest published after all? Asked of Nessie before any failure is recorded.

A merge can commit while its caller fails (a lost response, a Lambda timeout, a
ledger error after the merge): recording PUBLISH_FAILED or JOB_FAILED then would
lie, and a user who re-uploads would get the rows twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lambdas.common.log import logger
from lambdas.common.nessie import NessieGateway


def audited_snapshot(record: Mapping[str, Any], reported: str | None = None) -> Any:
    """The snapshot id publish was about to merge (ledger), else the one the report named
    (`reported`: the state's `outcome.snapshot_id`)."""
    return record.get("audited_snapshot_id") or reported


def main_holds_ingest(
    nessie: NessieGateway, table: str | None, record: Mapping[str, Any],
    reported: str | None = None,
) -> bool:
    """True when main's table is at the ingest's audited snapshot (the merge went through).

    Raises `NessieUnavailableError` when Nessie cannot say: the caller must not record
    a failure it could not check.
    """
    snapshot = audited_snapshot(record, reported)
    if not table or snapshot is None:
        return False
    return nessie.main_holds(table, int(snapshot))


def delete_branch_quietly(nessie: NessieGateway, branch: str | None) -> bool:
    """Delete a published ingest's branch; False (logged) when that did not happen."""
    if not branch:
        return False
    try:
        nessie.delete_branch(branch)
    except Exception:
        logger.exception("could not delete the published branch; the sweeper retries",
                         extra={"branch": branch})
        return False
    return True
