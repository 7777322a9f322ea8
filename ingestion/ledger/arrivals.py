"""Expected arrivals in the ledger (issue 42): when each table (or dataset) last had a drop
published, and whether it is late, kept so that each late and recovered alert goes once.

A subject's state is one item, `arrival#<subject>` (kind `arrival`; the subject is
`ns.table` or `dataset:<name>`). Becoming late and recovering are conditional writes:
of two sweeps that see the same missed deadline, one wins and alerts. The item carries
no `table` or `status` attribute, so the ingest listings never meet it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contracts.lifecycle import PUBLISHED
from ingestion.constants import MAINTENANCE_SOURCE
from ingestion.ledger.records import plain_value
from ingestion.ledger.schema import (
    INDEX_BY_KIND,
    INDEX_BY_TABLE,
    KIND_ARRIVAL,
    KIND_BATCH,
    KIND_INGEST,
    PARTITION_KEY,
)
from ingestion.ledger.store import LedgerStore, is_conditional_failure
from ingestion.naming import iso, parse_iso

DATASET_SUBJECT_PREFIX = "dataset:"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def dataset_subject(name: str) -> str:
    """The arrival subject of a multi-table dataset (a table's is its `ns.table`)."""
    return DATASET_SUBJECT_PREFIX + name


def arrival_key(subject: str) -> dict[str, str]:
    """The primary key of a subject's arrival item."""
    return {PARTITION_KEY: f"arrival#{subject}"}


@dataclass(frozen=True)
class ArrivalState:
    """A subject's late/recovered state as last recorded by a sweep."""

    subject: str
    late_since: str | None = None  # the missed deadline, while late
    late_alerted_at: str | None = None
    recovered_at: str | None = None  # when it last stopped being late
    last_published_at: str | None = None  # the newest publish the last change saw

    @property
    def late(self) -> bool:
        return self.late_since is not None


def _state(item: dict[str, Any] | None, subject: str) -> ArrivalState:
    plain = plain_value(dict(item or {}))
    return ArrivalState(
        subject=subject,
        late_since=plain.get("late_since"),
        late_alerted_at=plain.get("late_alerted_at"),
        recovered_at=plain.get("recovered_at"),
        last_published_at=plain.get("last_published_at"),
    )


class ArrivalStates:
    """The arrival items of the ledger, and the reads of when a subject last published."""

    def __init__(self, store: LedgerStore) -> None:
        self._store = store

    def get_arrival(self, subject: str) -> ArrivalState:
        item = self._store.table.get_item(Key=arrival_key(subject), ConsistentRead=True)
        return _state(item.get("Item"), subject)

    def list_arrivals(self) -> list[ArrivalState]:
        """Every subject's recorded state, by subject (from an index)."""
        items = self._store.query(INDEX_BY_KIND, "kind", KIND_ARRIVAL)
        return sorted((_state(i, i["subject"]) for i in items), key=lambda s: s.subject)

    def mark_late(
        self, subject: str, deadline: datetime, now: datetime, last_published: datetime | None
    ) -> bool:
        """Record `subject` late since `deadline`; False (nothing written) when it already
        is: the caller alerts only on True."""
        return self._write(
            subject,
            "late_since = :d, late_alerted_at = :now, last_published_at = :p",
            "attribute_not_exists(late_since)",
            now,
            {":d": iso(deadline), ":p": iso(last_published) if last_published else "never"},
        )

    def mark_recovered(self, subject: str, published: datetime, now: datetime) -> bool:
        """Record `subject` no longer late (a drop was published at `published`); False
        when it was not late: the caller alerts only on True."""
        return self._write(
            subject,
            "recovered_at = :now, last_published_at = :p",
            "attribute_exists(late_since)",
            now,
            {":p": iso(published)},
            remove="late_since",
        )

    def _write(
        self,
        subject: str,
        sets: str,
        condition: str,
        now: datetime,
        values: dict[str, Any],
        remove: str | None = None,
    ) -> bool:
        try:
            self._store.table.update_item(
                Key=arrival_key(subject),
                UpdateExpression=f"SET {sets}, kind = :kind, subject = :s, "
                "created_at = if_not_exists(created_at, :now)"
                + (f" REMOVE {remove}" if remove else ""),
                ConditionExpression=condition,
                ExpressionAttributeValues={
                    **values,
                    ":kind": KIND_ARRIVAL,
                    ":s": subject,
                    ":now": iso(now),
                },
            )
        except Exception as exc:
            if is_conditional_failure(exc):
                return False
            raise
        return True

    def last_published(self, table: str) -> datetime | None:
        """When the table's newest drop was published (None: none on record). Only a
        drop counts: held, failed or rejected files do not, nor do compactions."""
        item = self._newest(
            table,
            lambda i: (
                i.get("kind") == KIND_INGEST
                and i.get("status") == PUBLISHED
                and i.get("source_uri") != MAINTENANCE_SOURCE
            ),
        )
        return _published_at(item)

    def last_dataset_published(self, first_table: str, name: str) -> datetime | None:
        """When dataset `name` (whose tables begin, in lock order, with `first_table`) was
        last published; None when never on record."""
        item = self._newest(
            first_table,
            lambda i: (
                i.get("kind") == KIND_BATCH
                and i.get("status") == PUBLISHED
                and i.get("dataset_name") == name
            ),
        )
        return _published_at(item)

    def _newest(self, table: str, wanted: Any) -> dict[str, Any] | None:
        """The newest of the table's records (by upload) that `wanted` accepts, reading the
        table's index page by page only as far as needed; of those on the page where the
        first is found, the one published last (a drop published after review, `wap
        publish`, may have been uploaded before a newer one)."""
        kwargs: dict[str, Any] = {
            "IndexName": INDEX_BY_TABLE,
            "KeyConditionExpression": "#t = :t",
            "ExpressionAttributeNames": {"#t": "table"},
            "ExpressionAttributeValues": {":t": table},
            "ScanIndexForward": False,
        }
        while True:
            page = self._store.table.query(**kwargs)
            found = [plain_value(item) for item in page.get("Items", []) if wanted(item)]
            if found:
                return max(found, key=lambda item: _published_at(item) or _EPOCH)
            if "LastEvaluatedKey" not in page:
                return None
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _published_at(item: dict[str, Any] | None) -> datetime | None:
    if not item:
        return None
    when = item.get("published_at") or item.get("finished_at") or item.get("updated_at")
    return parse_iso(when) if when else None
