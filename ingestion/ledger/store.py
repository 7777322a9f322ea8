"""What the ledger's parts share: the DynamoDB table, its client, index queries, retries."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from ingestion.ledger.records import plain_value
from ingestion.ledger.schema import INDEXES

LOCK_ATTEMPTS = 12  # tries of a read-modify-write (and of a throttled batch read)
TRANSACTION_ITEMS = 100  # DynamoDB's limit of writes in one TransactWriteItems
BATCH_GET_ITEMS = 100  # and of keys in one BatchGetItem
_BACKOFF_BASE_S = 0.02
_BACKOFF_CAP_S = 1.0

# Another writer got there first: read again and retry. DynamoDB cancels a transaction
# that meets another one on the same item (TransactionConflict), and refuses a plain
# write to an item a transaction is changing (TransactionConflictException).
_CONTENTION_CODES = frozenset({"ConditionalCheckFailedException", "TransactionConflictException"})


def is_conditional_failure(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    return response.get("Error", {}).get("Code") in _CONTENTION_CODES


class LedgerStore:
    """The ledger table (a boto3 resource's Table and its client), shared by the parts."""

    def __init__(
        self,
        table_name: str,
        dynamodb_resource: Any = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dynamodb_resource is None:
            from ingestion import aws

            dynamodb_resource = aws.resource("dynamodb")
        self.table = dynamodb_resource.Table(table_name)
        self.client = dynamodb_resource.meta.client
        self.table_name = table_name
        self.sleep = sleep

    def backoff(self, attempt: int) -> None:
        # Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): writers
        # that collided spread out instead of colliding again in lockstep.
        self.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)))

    def query(
        self,
        index: str,
        key: str,
        value: str,
        *,
        until: str | None = None,
        newest_first: bool = False,
        limit: int | None = None,
        kind: str | None = None,
    ) -> list[dict[str, Any]]:
        """Items of one index key; with `limit`, stop once that many (of `kind`) are read."""
        from boto3.dynamodb.conditions import Attr, Key

        range_key = INDEXES[index][1]
        condition = Key(key).eq(value)
        if until is not None:
            condition = condition & Key(range_key).lte(until)
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ScanIndexForward": not newest_first,
        }
        if kind is not None:
            kwargs["FilterExpression"] = Attr("kind").eq(kind)
        if limit is not None:
            kwargs["Limit"] = limit
        while True:
            page = self.table.query(**kwargs)
            items.extend(plain_value(i) for i in page.get("Items", []))
            if "LastEvaluatedKey" not in page or (limit is not None and len(items) >= limit):
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
