"""A local home with a failed ingest on its branch, made without Spark (seconds, not a minute).

Iceberg tables are written by pyiceberg (a Glue catalog on moto, only to write the files),
registered in the home's Nessie repository through API v2 the way Iceberg's NessieCatalog
does, and the ledger and audit report are put in place through the embedded stack, so
every `wap` command reads the home as it would after a real `wap ingest`.
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
BRANCH = f"wap_sales_orders_20261122T101500_{FAILED_ID[:8]}"
SOURCE = "s3://wap-source/sales/orders/batch-2.parquet"
NAME_COLUMN = "Customer Name"  # needs quoting in SQL: a space and capitals
SCHEMA = pa.schema([("order_id", pa.int64()), ("amount", pa.float64()), (NAME_COLUMN, pa.string())])
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
CUSTOMERS = [{"customer_id": 7, "name": "Ada"}]


@dataclass(frozen=True)
class SeededHome:
    root: Path
    main_snapshot: int
    branch_snapshot: int


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

    def put_table(self, ref: str, table: Any, *, with_namespace: bool = False) -> str:
        """Point `sales.orders` on `ref` at `table`'s current metadata; the new head."""
        operations = [_table_op(["sales", "orders"], table, self.content_id(ref, "sales.orders"))]
        if with_namespace:
            operations.insert(0, _namespace_op("sales"))
        return self.commit(ref, operations, "Iceberg commit against sales.orders")


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


def _write_tables(warehouse: Path) -> tuple[Any, Any, Any]:
    """(orders as main holds it, orders with the failed batch, customers)."""
    from moto import mock_aws
    from pyiceberg.catalog.glue import GlueCatalog

    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    with mock.patch.dict(os.environ, {**env, "AWS_DEFAULT_REGION": REGION}), mock_aws():
        glue = GlueCatalog("seed", warehouse=warehouse.as_uri(), **{"glue.region": REGION})
        glue.create_namespace("sales")
        orders = glue.create_table("sales.orders", schema=SCHEMA)
        orders.append(
            pa.Table.from_pylist(MAIN_ROWS, schema=SCHEMA),
            snapshot_properties={"wap.ingest-id": PUBLISHED_ID},
        )
        on_main = glue.load_table("sales.orders")
        orders = glue.load_table("sales.orders")
        orders.append(
            pa.Table.from_pylist(BRANCH_ROWS, schema=SCHEMA),
            snapshot_properties={"wap.ingest-id": FAILED_ID, "wap.source": SOURCE},
        )
        customers = glue.create_table(
            "sales.customers",
            schema=pa.schema([("customer_id", pa.int64()), ("name", pa.string())]),
        )
        customers.append(pa.Table.from_pylist(CUSTOMERS))
        return on_main, glue.load_table("sales.orders"), glue.load_table("sales.customers")


def seed_home(root: Path) -> SeededHome:
    """A home whose main holds sales.orders (2 rows) and sales.customers, and whose open
    branch BRANCH (ingest FAILED_ID, AUDIT_FAILED) adds 3 rows to sales.orders."""
    from lambdas.common.ledger import Ledger
    from local.nessie.runner import start_server
    from wap.runtime.embedded_stack import EmbeddedStack
    from wap.runtime.home import WapHome

    home = WapHome(root).create()
    on_main, on_branch, customers = _write_tables(home.warehouse)
    server = start_server(str(home.nessie_db))
    try:
        nessie = NessieSeeder(server.api_v2)
        nessie.commit(
            "main",
            [
                _namespace_op("sales"),
                _table_op(["sales", "orders"], on_main),
                _table_op(["sales", "customers"], customers),
            ],
            f"ingest {PUBLISHED_ID}",
        )
        nessie.branch(BRANCH)
        branch_hash = nessie.commit(
            BRANCH,
            [_table_op(["sales", "orders"], on_branch, nessie.content_id(BRANCH, "sales.orders"))],
            f"Iceberg append against sales.orders (ingest {FAILED_ID})",
        )
    finally:
        server.stop()

    main_snapshot = on_main.metadata.current_snapshot_id
    branch_snapshot = on_branch.metadata.current_snapshot_id
    stack = EmbeddedStack(home).start()
    try:
        settings = stack.aws.settings
        report_key = f"reports/sales.orders/{FAILED_ID}/attempt-1/report.json"
        stack.aws.client("s3").put_object(
            Bucket=settings.artifacts_bucket,
            Key=report_key,
            Body=json.dumps(
                failed_report(
                    branch_hash=branch_hash,
                    snapshot_id=branch_snapshot,
                    threshold={"min": 0, "max": None},
                )
            ).encode(),
        )
        ledger = Ledger(settings.ledger_table, stack.dynamodb())
        common = {"table": "sales.orders", "finished_at": "2026-11-22T10:20:00Z"}
        ledger.create_ingest(
            FAILED_ID,
            {
                **common,
                "key": "sales/orders/batch-2.parquet",
                "source_uri": SOURCE,
                "status": "AUDIT_FAILED",
                "branch": BRANCH,
                "branch_hash": branch_hash,
                "snapshot_id": str(branch_snapshot),  # as finish records it
                "report_uri": f"s3://{settings.artifacts_bucket}/{report_key}",
                "error": "1 error-severity check(s) did not pass: amount_range",
                "rows_written": len(BRANCH_ROWS),
            },
        )
        ledger.create_ingest(
            PUBLISHED_ID,
            {
                **common,
                "key": "sales/orders/batch-1.parquet",
                "status": "PUBLISHED",
                "branch": f"wap_sales_orders_20261122T100000_{PUBLISHED_ID[:8]}",
                "audited_snapshot_id": main_snapshot,
            },
        )
        ledger.create_ingest(
            DISCARDED_ID,
            {
                **common,
                "key": "sales/orders/batch-0.parquet",
                "status": "DISCARDED",
                "branch": f"wap_sales_orders_20261122T090000_{DISCARDED_ID[:8]}",
            },
        )
        stack.save()
    finally:
        stack.stop()
    return SeededHome(root, main_snapshot, branch_snapshot)
