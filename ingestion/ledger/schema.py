"""The ledger table's shape: keys, indexes and TTL, defined once for CDK and the local stack.

Ingest (and batch) items are keyed `ingest#<id>`, table lock items `table#<ns.table>`.
Listings read global secondary indexes, never a scan; finished records expire through
DynamoDB's TTL (`TTL_ATTRIBUTE`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

KIND_INGEST = "ingest"
KIND_TABLE = "table"
# A run over several queued ingests: a record like an ingest's (its own status, branch and
# job run), keyed `ingest#<batch id>` so the run machinery treats it as one ingest.
KIND_BATCH = "batch"
# A table's (or dataset's) expected-arrival state (ledger/arrivals.py), keyed
# `arrival#<subject>`: whether it is late, so each late and recovered alert goes once.
KIND_ARRIVAL = "arrival"

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"
INDEX_BY_KIND = "by_kind"  # kind, created_at: every ingest (or lock), newest first
INDEX_BY_TABLE = "by_table"  # table, created_at: one table's ingests
INDEX_BY_STATUS = "by_status"  # status, created_at: e.g. the open failed branches
# Sparse: only final records with something left to clean (a branch, a staged copy).
INDEX_SWEEP = "by_sweep"  # sweep ("pending"), sweep_after
SWEEP_PENDING = "pending"
# Index name -> (hash key, range key).
INDEXES: dict[str, tuple[str, str]] = {
    INDEX_BY_KIND: ("kind", "created_at"),
    INDEX_BY_TABLE: ("table", "created_at"),
    INDEX_BY_STATUS: ("status", "created_at"),
    INDEX_SWEEP: ("sweep", "sweep_after"),
}
_INDEXES = INDEXES  # the name older importers used
# Finished records outlive S3's event retries (hours), the branch retention (14 days)
# and the sweeps after it, so a late duplicate event still finds its record.
DEFAULT_RECORD_TTL = timedelta(days=90)


def ingest_key(ingest_id: str) -> dict[str, str]:
    """The primary key of an ingest's (or a batch's) item."""
    return {PARTITION_KEY: f"ingest#{ingest_id}"}


def lock_key(table: str) -> dict[str, str]:
    """The primary key of a table's lock/queue item."""
    return {PARTITION_KEY: f"table#{table}"}


def table_schema() -> dict[str, Any]:
    """`create_table` arguments of the ledger (keys and indexes), shared by CDK and local."""
    attributes = sorted({PARTITION_KEY, *(name for pair in INDEXES.values() for name in pair)})
    return {
        "KeySchema": [{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in attributes],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": name,
                "KeySchema": [
                    {"AttributeName": hash_key, "KeyType": "HASH"},
                    {"AttributeName": range_key, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for name, (hash_key, range_key) in INDEXES.items()
        ],
    }
