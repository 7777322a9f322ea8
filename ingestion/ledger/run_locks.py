"""Locks of whole runs that must not overlap (the daily maintenance run): one ledger item
`run#<name>` held until its lease ends. Not a table lock: no queue, no index, nothing
waits for it; a run that finds it held is skipped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ingestion.ledger.schema import PARTITION_KEY, TTL_ATTRIBUTE
from ingestion.ledger.store import LedgerStore, is_conditional_failure

_ISO = "%Y-%m-%dT%H:%M:%S.%fZ"  # fixed width, UTC: compares as text


def run_lock_key(name: str) -> dict[str, str]:
    return {PARTITION_KEY: f"run#{name}"}


class RunLocks:
    """`acquire` / `release` of named run locks in the ledger table."""

    def __init__(self, store: LedgerStore) -> None:
        self.store = store

    def acquire(self, name: str, holder: str, *, now: datetime, lease: timedelta) -> str | None:
        """Take `name` for `holder` until `now + lease`; None when taken, else until when
        another holder has it (ISO 8601)."""
        until = now + lease
        try:
            self.store.table.put_item(
                Item={
                    **run_lock_key(name),
                    "holder": holder,
                    "held_until": until.strftime(_ISO),
                    # DynamoDB's TTL removes a lock its run never released, a day later.
                    TTL_ATTRIBUTE: int((until + timedelta(days=1)).timestamp()),
                },
                ConditionExpression="attribute_not_exists(#pk) OR held_until <= :now",
                ExpressionAttributeNames={"#pk": PARTITION_KEY},
                ExpressionAttributeValues={":now": now.strftime(_ISO)},
            )
        except Exception as exc:
            if not is_conditional_failure(exc):
                raise
            item: dict[str, Any] = (
                self.store.table.get_item(Key=run_lock_key(name), ConsistentRead=True).get("Item")
                or {}
            )
            return str(item.get("held_until", "unknown"))
        return None

    def release(self, name: str, holder: str) -> None:
        """Give `name` up, if `holder` still holds it."""
        try:
            self.store.table.delete_item(
                Key=run_lock_key(name),
                ConditionExpression="holder = :holder",
                ExpressionAttributeValues={":holder": holder},
            )
        except Exception as exc:
            if not is_conditional_failure(exc):
                raise
