"""One seeded lake for every backend: the same Iceberg tables, Nessie branches, ledger
records and audit report, on a local home (`seed_home`) or a "deployed" stack on moto
(`tests/fixtures/backends.py`), made without Spark (seconds, not a minute).

Iceberg tables are written by pyiceberg (a Glue catalog on moto, only to write the files),
registered in Nessie through API v2 the way Iceberg's NessieCatalog does (`seed_catalog`),
and the ledger records and the audit report are put in place through the backend's own
DynamoDB table and artifacts bucket (`seed_ledger`), so every `wap` command reads the lake
as it would after real ingests:

- main holds sales.orders (MAIN_ROWS, published by PUBLISHED_ID) and sales.customers;
- BRANCH (FAILED_ID, AUDIT_FAILED, with its report) adds BRANCH_ROWS to sales.orders;
- JOB_FAILED_BRANCH (JOB_FAILED_ID, JOB_FAILED) was opened and holds nothing new;
- MOVED_BRANCH (MOVED_ID, AUDIT_FAILED) was written to again after its audit;
- CONFLICT_BRANCH (CONFLICT_ID, AUDIT_FAILED) changed sales.customers, which main (an
  outside writer) changed too since the branch was made: its merge conflicts;
- DISCARDED_ID and PUBLISHED_ID have no branch left; LEGACY_ID is a PUBLISHED record older
  than `audited_snapshot_id` and without a report (nothing of it can be queried).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import requests

REGION = "us-east-1"
FAILED_ID, PUBLISHED_ID, DISCARDED_ID = "a1a1a1a1a1a1a1a1", "c3c3c3c3c3c3c3c3", "d4d4d4d4d4d4d4d4"
JOB_FAILED_ID, MOVED_ID, CONFLICT_ID = "b2b2b2b2b2b2b2b2", "e5e5e5e5e5e5e5e5", "f6f6f6f6f6f6f6f6"
LEGACY_ID = "0a0a0a0a0a0a0a0a"
BRANCH = f"wap_sales_orders_20261122T101500_{FAILED_ID[:8]}"
JOB_FAILED_BRANCH = f"wap_sales_orders_20261122T101600_{JOB_FAILED_ID[:8]}"
MOVED_BRANCH = f"wap_sales_orders_20261122T101700_{MOVED_ID[:8]}"
CONFLICT_BRANCH = f"wap_sales_customers_20261122T101800_{CONFLICT_ID[:8]}"
PUBLISHED_BRANCH = f"wap_sales_orders_20261122T100000_{PUBLISHED_ID[:8]}"
DISCARDED_BRANCH = f"wap_sales_orders_20261122T090000_{DISCARDED_ID[:8]}"
LEGACY_BRANCH = f"wap_sales_orders_20251001T080000_{LEGACY_ID[:8]}"
SOURCE_BUCKET = "wap-source"  # the local stack's (a deployed stack names its own)
FAILED_KEY = "sales/orders/batch-2.parquet"
SOURCE = f"s3://{SOURCE_BUCKET}/{FAILED_KEY}"
FAILED_ERROR = "1 error-severity check(s) did not pass: amount_range"
JOB_ERROR = "JobRunFailed: OOM"
FINISHED_AT = "2026-11-22T10:20:00Z"
NAME_COLUMN = "Customer Name"  # needs quoting in SQL: a space and capitals
SCHEMA = pa.schema([("order_id", pa.int64()), ("amount", pa.float64()), (NAME_COLUMN, pa.string())])
CUSTOMER_SCHEMA = pa.schema([("customer_id", pa.int64()), ("name", pa.string())])
MAIN_ROWS = [
    {"order_id": 1, "amount": 10.0, NAME_COLUMN: "Ada"},
    {"order_id": 2, "amount": 20.0, NAME_COLUMN: "Grace"},
]
# The failed batch: two negative amounts break `amount_range` (min 0).
BRANCH_ROWS = [
    {"order_id": 3, "amount": 1.0, NAME_COLUMN: "Edsger"},
    {"order_id": 4, "amount": -4.5, NAME_COLUMN: "<b>Barbara</b>"},
    {"order_id": 5, "amount": -77.25, NAME_COLUMN: "O'Neil"},
]
MOVED_ROWS = [{"order_id": 6, "amount": 6.0, NAME_COLUMN: "Tony"}]  # written after the audit
CUSTOMERS = [{"customer_id": 7, "name": "Ada"}]
CONFLICT_CUSTOMERS = [{"customer_id": 8, "name": "Linus"}]  # what CONFLICT_BRANCH adds
OUTSIDE_CUSTOMERS = [{"customer_id": 9, "name": "Margaret"}]  # main's outside writer


@dataclass(frozen=True)
class Lake:
    """What `seed_catalog` committed: the audited heads and snapshots the ledger names."""

    main_snapshot: int  # sales.orders on main (PUBLISHED_ID's)
    branch_snapshot: int  # sales.orders on BRANCH, audited (also MOVED_BRANCH's audit)
    branch_hash: str  # BRANCH's audited head
    branch_metadata: str  # sales.orders' metadataLocation on BRANCH
    moved_hash: str  # MOVED_BRANCH's audited head (it moved on since)
    conflict_hash: str  # CONFLICT_BRANCH's audited head
    conflict_snapshot: int  # sales.customers on CONFLICT_BRANCH


@dataclass(frozen=True)
class SeededHome:
    root: Path
    main_snapshot: int
    branch_snapshot: int
    lake: Lake | None = None
    records: dict[str, dict[str, Any]] | None = None


def failed_report(
    *,
    branch_hash: str | None,
    snapshot_id: int | None,
    ingest_id: str = FAILED_ID,
    branch: str = BRANCH,
    source: str = SOURCE,
    rule: str = "amount_range",
    threshold: Any = None,
) -> dict[str, Any]:
    """The audit report of a batch whose two negative amounts failed the check `rule`."""
    return {
        "report_version": 1,
        "ingest_id": ingest_id,
        "table": "sales.orders",
        "source_uris": [source],
        "branch": branch,
        "branch_hash": branch_hash,
        "snapshot_id": snapshot_id,
        "rows_written": len(BRANCH_ROWS),
        "schema_changes": [],
        "outcome": "failed",
        "reason": f"1 error-severity check(s) did not pass: {rule}",
        "checks": [
            {
                "name": rule,
                "kind": "range",
                "columns": ["amount"],
                "severity": "error",
                "status": "failed",
                "violations": 2,
                "threshold": threshold,
                "observed": 2,
                "samples": [{"order_id": 4, "amount": -4.5}, {"order_id": 5, "amount": -77.25}],
            },
            {
                "name": "order_id_not_null",
                "kind": "not_null",
                "columns": ["order_id"],
                "severity": "error",
                "status": "passed",
                "violations": 0,
                "observed": 0,
                "samples": [],
            },
        ],
    }


class NessieSeeder:
    """Commits Iceberg table pointers as Iceberg's NessieCatalog does (API v2)."""

    def __init__(self, api_v2: str) -> None:
        self.api = api_v2

    def head(self, ref: str) -> str:
        return requests.get(f"{self.api}/trees/{ref}", timeout=10).json()["reference"]["hash"]

    def branch(self, name: str) -> None:
        requests.post(
            f"{self.api}/trees",
            params={"name": name, "type": "BRANCH"},
            json={"type": "BRANCH", "name": "main", "hash": self.head("main")},
            timeout=10,
        ).raise_for_status()

    def commit(self, ref: str, operations: list[dict[str, Any]], message: str) -> str:
        response = requests.post(
            f"{self.api}/trees/{ref}@{self.head(ref)}/history/commit",
            json={
                "commitMeta": {"message": message, "authors": ["seed"]},
                "operations": operations,
            },
            timeout=10,
        )
        response.raise_for_status()
        return response.json()["targetBranch"]["hash"]

    def content_id(self, ref: str, key: str) -> str | None:
        found = requests.get(f"{self.api}/trees/{ref}/contents/{key}", timeout=10)
        return found.json()["content"]["id"] if found.ok else None

    def put_table(
        self, ref: str, table: Any, *, key: str = "sales.orders", with_namespace: bool = False
    ) -> str:
        """Point the table `key` on `ref` at `table`'s current metadata; the new head."""
        operations = [_table_op(key.split("."), table, self.content_id(ref, key))]
        if with_namespace:
            operations.insert(0, _namespace_op(key.split(".")[0]))
        return self.commit(ref, operations, f"Iceberg commit against {key}")


def _table_op(elements: list[str], table: Any, content_id: str | None = None) -> dict[str, Any]:
    content = {
        "type": "ICEBERG_TABLE",
        "metadataLocation": table.metadata_location,
        "snapshotId": table.metadata.current_snapshot_id,
        "schemaId": 0,
        "specId": 0,
        "sortOrderId": 0,
    }
    if content_id:
        content["id"] = content_id
    return {"type": "PUT", "key": {"elements": elements}, "content": content}


def _namespace_op(name: str) -> dict[str, Any]:
    return {
        "type": "PUT",
        "key": {"elements": [name]},
        "content": {"type": "NAMESPACE", "elements": [name]},
    }


@dataclass(frozen=True)
class _Tables:
    """Every version of the two tables the lake's references point at."""

    orders_main: Any
    orders_failed: Any  # + BRANCH_ROWS: the audited batch
    orders_moved: Any  # + MOVED_ROWS: written to the moved branch after its audit
    customers_main: Any
    customers_conflict: Any  # + CONFLICT_CUSTOMERS: the conflicting branch's
    customers_outside: Any  # main's outside writer: CUSTOMERS + OUTSIDE_CUSTOMERS


def _write_tables(warehouse: Path, source: str) -> _Tables:
    from moto import mock_aws
    from pyiceberg.catalog.glue import GlueCatalog

    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    with mock.patch.dict(os.environ, {**env, "AWS_DEFAULT_REGION": REGION}), mock_aws():
        glue = GlueCatalog("seed", warehouse=warehouse.as_uri(), **{"glue.region": REGION})
        glue.create_namespace("sales")

        def append(name: str, rows: list[dict[str, Any]], schema: pa.Schema, **props: str) -> Any:
            glue.load_table(name).append(
                pa.Table.from_pylist(rows, schema=schema), snapshot_properties=props
            )
            return glue.load_table(name)

        glue.create_table("sales.orders", schema=SCHEMA)
        orders_main = append("sales.orders", MAIN_ROWS, SCHEMA, **{"wap.ingest-id": PUBLISHED_ID})
        orders_failed = append(
            "sales.orders",
            BRANCH_ROWS,
            SCHEMA,
            **{"wap.ingest-id": FAILED_ID, "wap.source": source},
        )
        orders_moved = append("sales.orders", MOVED_ROWS, SCHEMA)
        glue.create_table("sales.customers", schema=CUSTOMER_SCHEMA)
        customers_main = append("sales.customers", CUSTOMERS, CUSTOMER_SCHEMA)
        customers_conflict = append(
            "sales.customers",
            CONFLICT_CUSTOMERS,
            CUSTOMER_SCHEMA,
            **{"wap.ingest-id": CONFLICT_ID},
        )
        glue.load_table("sales.customers").overwrite(
            pa.Table.from_pylist(CUSTOMERS + OUTSIDE_CUSTOMERS, schema=CUSTOMER_SCHEMA)
        )
        return _Tables(
            orders_main,
            orders_failed,
            orders_moved,
            customers_main,
            customers_conflict,
            glue.load_table("sales.customers"),
        )


def seed_catalog(api_v2: str, warehouse: Path, *, source: str = SOURCE) -> Lake:
    """Write the tables under `warehouse` and commit the lake's references to the (empty)
    Nessie server at `api_v2`; `source` is the failed batch's source URI."""
    tables = _write_tables(warehouse, source)
    nessie = NessieSeeder(api_v2)
    nessie.commit(
        "main",
        [
            _namespace_op("sales"),
            _table_op(["sales", "orders"], tables.orders_main),
            _table_op(["sales", "customers"], tables.customers_main),
        ],
        f"ingest {PUBLISHED_ID}",
    )
    # Audited on a branch, then main changed the same table (an outside writer).
    nessie.branch(CONFLICT_BRANCH)
    conflict_hash = nessie.put_table(
        CONFLICT_BRANCH, tables.customers_conflict, key="sales.customers"
    )
    nessie.commit(
        "main",
        [
            _table_op(
                ["sales", "customers"],
                tables.customers_outside,
                nessie.content_id("main", "sales.customers"),
            )
        ],
        "nightly CRM sync",  # not wap's: main's head then names no table (the UI shows it)
    )
    # The failed ingest's branch: only sales.orders differs from main.
    nessie.branch(BRANCH)
    branch_hash = nessie.commit(
        BRANCH,
        [
            _table_op(
                ["sales", "orders"], tables.orders_failed, nessie.content_id(BRANCH, "sales.orders")
            )
        ],
        f"Iceberg append against sales.orders (ingest {FAILED_ID})",
    )
    nessie.branch(JOB_FAILED_BRANCH)  # the job died before writing
    # Audited, then someone wrote to the branch: what was audited is no longer the head.
    nessie.branch(MOVED_BRANCH)
    moved_hash = nessie.put_table(MOVED_BRANCH, tables.orders_failed)
    nessie.put_table(MOVED_BRANCH, tables.orders_moved)
    return Lake(
        main_snapshot=tables.orders_main.metadata.current_snapshot_id,
        branch_snapshot=tables.orders_failed.metadata.current_snapshot_id,
        branch_hash=branch_hash,
        branch_metadata=tables.orders_failed.metadata_location,
        moved_hash=moved_hash,
        conflict_hash=conflict_hash,
        conflict_snapshot=tables.customers_conflict.metadata.current_snapshot_id,
    )


def report_key(ingest: str = FAILED_ID) -> str:
    return f"reports/sales.orders/{ingest}/attempt-1/report.json"


def ledger_records(
    lake: Lake, *, source_bucket: str, artifacts_bucket: str
) -> dict[str, dict[str, Any]]:
    """The ledger records of the lake's ingests, by ingest id (as `finish` records them)."""

    def record(
        status: str, branch: str, key: str, table: str = "sales.orders", **extra: Any
    ) -> dict[str, Any]:
        return {
            "table": table,
            "key": key,
            "source_uri": f"s3://{source_bucket}/{key}",
            "status": status,
            "branch": branch,
            "finished_at": FINISHED_AT,
            **extra,
        }

    return {
        FAILED_ID: record(
            "AUDIT_FAILED",
            BRANCH,
            FAILED_KEY,
            branch_hash=lake.branch_hash,
            snapshot_id=str(lake.branch_snapshot),  # as finish records it
            report_uri=f"s3://{artifacts_bucket}/{report_key()}",
            error=FAILED_ERROR,
            rows_written=len(BRANCH_ROWS),
        ),
        JOB_FAILED_ID: record(
            "JOB_FAILED", JOB_FAILED_BRANCH, "sales/orders/batch-3.parquet", error=JOB_ERROR
        ),
        PUBLISHED_ID: record(
            "PUBLISHED",
            PUBLISHED_BRANCH,
            "sales/orders/batch-1.parquet",
            audited_snapshot_id=lake.main_snapshot,
        ),
        DISCARDED_ID: record("DISCARDED", DISCARDED_BRANCH, "sales/orders/batch-0.parquet"),
        MOVED_ID: record(
            "AUDIT_FAILED",
            MOVED_BRANCH,
            "sales/orders/batch-4.parquet",
            branch_hash=lake.moved_hash,
            snapshot_id=str(lake.branch_snapshot),
            error=FAILED_ERROR,
        ),
        CONFLICT_ID: record(
            "AUDIT_FAILED",
            CONFLICT_BRANCH,
            "sales/customers/batch-1.parquet",
            table="sales.customers",
            branch_hash=lake.conflict_hash,
            snapshot_id=str(lake.conflict_snapshot),
            error="1 error-severity check(s) did not pass: name_unique",
        ),
        # Published before publish recorded audited_snapshot_id, its report long expired.
        LEGACY_ID: record("PUBLISHED", LEGACY_BRANCH, "sales/orders/batch-legacy.parquet"),
    }


def seed_ledger(
    lake: Lake, ledger: Any, s3: Any, *, source_bucket: str, artifacts_bucket: str
) -> dict[str, dict[str, Any]]:
    """Put the failed ingest's audit report in `artifacts_bucket` and the lake's records in
    `ledger` (a `lambdas.common.ledger.Ledger`); returns the records by ingest id."""
    s3.put_object(
        Bucket=artifacts_bucket,
        Key=report_key(),
        Body=json.dumps(
            failed_report(
                branch_hash=lake.branch_hash,
                snapshot_id=lake.branch_snapshot,
                source=f"s3://{source_bucket}/{FAILED_KEY}",
                threshold={"min": 0, "max": None},
            )
        ).encode(),
    )
    records = ledger_records(lake, source_bucket=source_bucket, artifacts_bucket=artifacts_bucket)
    for iid, record in records.items():
        ledger.create_ingest(iid, record)
    return records


def seed_home(root: Path) -> SeededHome:
    """A local home holding the seeded lake (the module docstring says what it holds)."""
    from lambdas.common.ledger import Ledger
    from local.nessie.runner import start_server
    from wap.runtime.embedded_stack import EmbeddedStack
    from wap.runtime.home import WapHome

    home = WapHome(root).create()
    server = start_server(str(home.nessie_db))
    try:
        lake = seed_catalog(server.api_v2, home.warehouse)
    finally:
        server.stop()

    stack = EmbeddedStack(home).start()
    try:
        settings = stack.aws.settings
        records = seed_ledger(
            lake,
            Ledger(settings.ledger_table, stack.dynamodb()),
            stack.aws.client("s3"),
            source_bucket=settings.source_bucket,
            artifacts_bucket=settings.artifacts_bucket,
        )
        stack.save()
    finally:
        stack.stop()
    return SeededHome(root, lake.main_snapshot, lake.branch_snapshot, lake, records)
