"""Finding an ingest (by id or by the branch it made) and reading its audit report: what
`wap show`, `query`, `lineage`, `publish` and the dashboard all start from."""

from __future__ import annotations

import json
import logging

from contracts.naming import INGEST_ID, NESSIE_REF_NAME
from contracts.report import AuditReport, ReportError
from ingestion.ledger import Record
from ingestion.naming import TableRef
from wap.exceptions import InvalidInputError, UnknownTargetError
from wap.ops.backend import Backend

_log = logging.getLogger(__name__)


def parse_table(text: str) -> TableRef:
    """`ns.table` as a TableRef, or one line saying what a table name must be."""
    try:
        return TableRef.parse(text)
    except ValueError:
        raise InvalidInputError(
            f"invalid table name {text!r}: expected <namespace>.<table> in lower-case letters, "
            "digits and _ (not starting with a digit)"
        ) from None


def find_ingest(backend: Backend, target: str) -> Record:
    """The ledger record of an ingest id (16 hex) or of the ingest that made a branch."""
    target = target.strip()
    if INGEST_ID.fullmatch(target):
        record = backend.ledger.get_ingest(target)
        if record is None:
            raise UnknownTargetError(f"no ingest {target} in the ledger (see `wap runs`)")
        return record
    if not NESSIE_REF_NAME.fullmatch(target):
        raise InvalidInputError(
            f"{target!r} is neither an ingest id (16 hex characters) nor a branch name"
        )
    found = [r for r in ingests_and_batches(backend) if r.branch == target]
    if not found:
        raise UnknownTargetError(
            f"unknown branch {target!r}: no ingest made it (see `wap branches`)"
        )
    return found[-1]


def ingests_and_batches(backend: Backend) -> list[Record]:
    """Every ingest and batch record, oldest first: a batch's run made its branch."""
    records: list[Record] = [*backend.ledger.list_ingests(), *backend.ledger.list_batches()]
    return sorted(records, key=lambda r: (r.created_at or "", r.ingest_id))


def read_report(backend: Backend, record: Record) -> AuditReport | None:
    """The audit report the ingest's last job run wrote, parsed by its contract; None when
    there is none or it is not a report this version of the tools can read (logged)."""
    uri = record.report_uri
    if not uri:
        return None
    body = backend.read_object(uri)
    if body is None:
        return None
    try:
        return AuditReport.from_dict(json.loads(body), f"audit report {uri}")
    except (ValueError, ReportError) as exc:  # a tool must still show the ledger record
        _log.warning("unreadable audit report: %s", exc)
        return None
