"""The OpenLineage events of an ingest built from its report (ingestion/lineage/events.py):
what a batch's inputs say, checked by the client's own models. Expected values are written
out here, not derived from the builder."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from openlineage.client.serde import Serde

from contracts.report import AuditReport
from ingestion.lineage import LineageInput, Outcome, outcome_event, run_id
from tests.fixtures.openlineage_models import parse_run_event

AT = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
REPORT = AuditReport.from_dict(
    {
        "report_version": 1,
        "ingest_id": "b" * 16,
        "table": "sales.orders",
        "branch": "wap_b",
        "outcome": "failed",
        "rows_written": 5,
        "snapshot_id": 77,
        "table_schema": [
            {"name": "order_id", "type": "long"},
            {"name": "amount", "type": "double"},
        ],
        "source_uris": ["s3://art/staging/1", "s3://art/staging/2"],
        "sources": [
            {"uri": "s3://art/staging/1", "status": "passed", "rows": 2},
            {
                "uri": "s3://art/staging/2",
                "status": "failed",
                "rows": 3,
                "failed_checks": ["amount_positive"],
            },
        ],
        "checks": [
            {
                "name": "amount_positive",
                "kind": "range",
                "severity": "error",
                "status": "failed",
                "columns": ["amount"],
                "violations": 2,
            },
            {
                "name": "amount_present",
                "kind": "not_null",
                "severity": "warn",
                "status": "failed",
                "columns": ["amount"],
                "violations": 1,
            },
            {"name": "rows", "kind": "row_count", "severity": "error", "status": "passed"},
        ],
    }
)


def _sent(
    ingest_id: str, table: str, inputs: list[str], outcome: Outcome, report: AuditReport
) -> dict:
    """The outcome event as the transport sends it (JSON), checked by the client's models."""
    event = json.loads(
        Serde.to_json(
            outcome_event(
                namespace="WapIngest",
                ingest_id=ingest_id,
                table=table,
                inputs=[LineageInput(uri) for uri in inputs],
                outcome=outcome,
                report=report,
                at=AT,
            )
        )
    )
    parse_run_event(event)
    return event


def test_a_batch_says_which_input_failed_which_check():
    event = _sent(
        "b" * 16,
        "sales.orders",
        [
            "s3://src/sales/orders/a.parquet?versionId=v1",
            "s3://src/sales/orders/b.parquet?versionId=v2",
        ],
        Outcome(
            status="AUDIT_FAILED",
            reason="amount_positive failed",
            reference="wap_b",
            review_branch="wap_b",
        ),
        REPORT,
    )

    assert event["eventType"] == "FAIL" and event["run"]["runId"] == run_id("b" * 16)
    first, second = event["inputs"]
    assert [(s["name"], s["facets"]["version"]["datasetVersion"]) for s in (first, second)] == [
        ("sales/orders/a.parquet", "v1"),
        ("sales/orders/b.parquet", "v2"),
    ]

    def results(source):
        return {
            (a["name"], a["success"])
            for a in source["inputFacets"]["dataQualityAssertions"]["assertions"]
        }

    # The blocking check failed on the second file's rows only; a warning is the run's.
    assert results(first) == {("amount_positive", True), ("amount_present", False), ("rows", True)}
    assert results(second) == {
        ("amount_positive", False),
        ("amount_present", False),
        ("rows", True),
    }
    assert [s["inputFacets"]["dataQualityMetrics"]["rowCount"] for s in (first, second)] == [2, 3]
    # Null counts are the run's: on the table, not split across the files.
    assert first["inputFacets"]["dataQualityMetrics"]["columnMetrics"] == {}
    [table] = event["outputs"]
    assert table["facets"]["dataQualityMetrics"]["columnMetrics"]["amount"]["nullCount"] == 1
    assert table["facets"]["dataQualityMetrics"]["rowCount"] == 5
    assert table["outputFacets"]["outputStatistics"]["rowCount"] == 5
    assert table["facets"]["wap_nessie"] == {
        **table["facets"]["wap_nessie"],
        "reference": "wap_b",
        "snapshotId": "77",
    }
    assert [(f["name"], f["type"]) for f in table["facets"]["schema"]["fields"]] == [
        ("order_id", "long"),
        ("amount", "double"),
    ]


def test_a_report_without_the_tables_columns_sends_no_schema():
    event = _sent(
        "c" * 16,
        "sales.orders",
        ["s3://src/sales/orders/a.parquet"],
        Outcome(status="PUBLISHED", reference="main"),
        AuditReport.from_dict({**REPORT.to_dict(), "table_schema": []}),
    )
    [table] = event["outputs"]
    assert "schema" not in table["facets"] and event["eventType"] == "COMPLETE"


def test_a_multi_table_dataset_outputs_every_table_at_the_one_merged_commit():
    report = AuditReport.from_dict(
        {
            **REPORT.to_dict(),
            "table": "shop.order_items",
            "outcome": "passed",
            "branch_hash": "ab" * 32,
            "rows_written": 7,
            "tables": [
                {
                    "table": "shop.order_items",
                    "snapshot_id": 11,
                    "rows_written": 4,
                    "source_uris": ["s3://art/staging/1"],
                },
                {
                    "table": "shop.orders",
                    "snapshot_id": 12,
                    "rows_written": 3,
                    "source_uris": ["s3://art/staging/2"],
                },
            ],
        }
    )
    event = _sent(
        "d" * 16,
        "shop.order_items",
        ["s3://src/_datasets/shop/d1/i.parquet", "s3://src/_datasets/shop/d1/o.parquet"],
        Outcome(status="PUBLISHED", reference="main", hash="cd" * 32),
        report,
    )

    outputs = {o["name"]: o for o in event["outputs"]}
    assert sorted(outputs) == ["shop.order_items", "shop.orders"]
    assert {
        name: (
            o["facets"]["wap_nessie"]["hash"],
            o["facets"]["version"]["datasetVersion"],
            o["outputFacets"]["outputStatistics"]["rowCount"],
        )
        for name, o in outputs.items()
    } == {"shop.order_items": ("cd" * 32, "11", 4), "shop.orders": ("cd" * 32, "12", 3)}


def test_a_publish_with_quarantined_rows_outputs_the_quarantine_table_with_its_rows():
    report = AuditReport.from_dict(
        {**REPORT.to_dict(), "outcome": "passed", "rows_written": 5, "quarantined_rows": 2}
    )
    event = _sent(
        "e" * 16,
        "sales.orders",
        ["s3://src/sales/orders/a.parquet"],
        Outcome(status="PUBLISHED", reference="main", hash="cd" * 32),
        report,
    )

    outputs = {o["name"]: o for o in event["outputs"]}
    assert sorted(outputs) == ["sales.orders", "sales.orders__quarantine"]
    quarantine = outputs["sales.orders__quarantine"]
    assert quarantine["namespace"] == outputs["sales.orders"]["namespace"]
    assert quarantine["outputFacets"]["outputStatistics"]["rowCount"] == 2
    assert quarantine["facets"]["wap_nessie"]["reference"] == "main"
    assert quarantine["facets"]["wap_nessie"]["hash"] == "cd" * 32
    assert outputs["sales.orders"]["outputFacets"]["outputStatistics"]["rowCount"] == 5


def test_a_run_that_quarantined_nothing_outputs_only_its_table():
    event = _sent(
        "f" * 16,
        "sales.orders",
        ["s3://src/sales/orders/a.parquet"],
        Outcome(status="PUBLISHED", reference="main", hash="cd" * 32),
        AuditReport.from_dict({**REPORT.to_dict(), "outcome": "passed"}),
    )

    assert [o["name"] for o in event["outputs"]] == ["sales.orders"]


def test_a_dataset_outputs_each_tables_quarantine_table_with_its_own_rows():
    report = AuditReport.from_dict(
        {
            **REPORT.to_dict(),
            "table": "shop.order_items",
            "outcome": "passed",
            "rows_written": 7,
            "quarantined_rows": 3,
            "tables": [
                {"table": "shop.order_items", "snapshot_id": 11, "rows_written": 4},
                {"table": "shop.orders", "snapshot_id": 12, "rows_written": 3},
                {"table": "shop.customers", "snapshot_id": 13, "rows_written": 0},
            ],
        }
    )
    counts = {"shop.order_items": 1, "shop.orders": 2, "shop.customers": 0}
    report = replace(
        report,
        tables=tuple(
            replace(entry, quarantined_rows=counts[entry.table]) for entry in report.tables
        ),
    )
    event = _sent(
        "d" * 16,
        "shop.order_items",
        ["s3://src/_datasets/shop/d1/i.parquet"],
        Outcome(status="PUBLISHED", reference="main", hash="cd" * 32),
        AuditReport.from_dict(report.to_dict()),  # the count goes through the report's JSON
    )

    rows = {o["name"]: o["outputFacets"]["outputStatistics"]["rowCount"] for o in event["outputs"]}
    assert rows == {
        "shop.order_items": 4,
        "shop.order_items__quarantine": 1,
        "shop.orders": 3,
        "shop.orders__quarantine": 2,
        "shop.customers": 0,
    }
