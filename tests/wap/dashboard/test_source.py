"""The loaders against a demo-seeded local stack: ledger, Nessie, pyiceberg metadata, configs.

Expected values come from the demo's input: two batches of 40 rows for sales.orders, the
second with 3 negative amounts (tables/sales.orders.yaml: range on amount, min 0).
"""

from __future__ import annotations

import pytest
import yaml

from contracts.table_config import parse_table_config_text
from wap.dashboard import metric_charts, shaping, source
from wap.exceptions import DashboardError
from wap.ops.backends import Target
from wap.runtime.catalog_server import catalog_url

pytestmark = pytest.mark.slow

DEMO_ROWS = 40


@pytest.fixture(scope="module")
def target(demo_home) -> Target:
    return Target(home=str(demo_home.root))


def test_overview_has_one_published_one_failed_and_its_open_branch(target):
    data = source.load_overview(target)

    assert data.no_state is None
    assert sorted(r.status for r in data.runs) == ["AUDIT_FAILED", "PUBLISHED"]
    [failed] = [r for r in data.runs if r.status == "AUDIT_FAILED"]
    assert [b.name for b in data.branches] == [failed.branch]
    assert data.branches[0].age_seconds is not None
    assert shaping.outcome_counts(data.runs)["failed"] == 1


def test_ingest_page_by_id_and_by_branch_name_is_the_same_ingest(target, demo_home):
    [failed] = [r for r in source.load_overview(target).runs if r.status == "AUDIT_FAILED"]

    by_id = source.load_ingest(target, failed.ingest_id)
    by_branch = source.load_ingest(target, failed.branch)

    assert by_id.view.record.ingest_id == by_branch.view.record.ingest_id
    assert (by_id.view.main_rows, by_id.view.branch_rows) == (
        DEMO_ROWS,
        demo_home.rows_on_failed_branch(),
    )
    [check] = [c for c in shaping.check_rows(by_id.view.report) if c["status"] == "failed"]
    assert (check["check"], check["violations"]) == ("amount_range", 3)
    # The local catalog UI's fixed address (`wap serve`), not the loader's own short-lived server.
    assert by_id.nessie_ui_url == catalog_url() and by_id.local_catalog


def test_unknown_and_malformed_ingest_refs_are_one_line_errors(target):
    with pytest.raises(DashboardError, match="no ingest 0123456789abcdef"):
        source.load_ingest(target, "0123456789abcdef")
    with pytest.raises(DashboardError, match="neither an ingest id"):
        source.load_ingest(target, "../../etc/passwd")


def test_table_page_reads_mains_snapshots_and_the_config_file(target):
    page = source.load_table(target, "sales.orders")

    assert page.on_main
    rows = shaping.snapshot_rows(page.snapshots, page.current_snapshot_id)
    assert [(r["operation"], r["total_rows"], r["added_rows"]) for r in rows] == [
        ("append", DEMO_ROWS, DEMO_ROWS)
    ]
    assert page.config_uri.endswith("tables/sales.orders.yaml")
    assert "kind: range, column: amount" in page.config_text
    assert sorted(r.status for r in page.runs) == ["AUDIT_FAILED", "PUBLISHED"]
    assert source.list_tables(target) == ["sales.orders"]


def test_a_table_without_ingests_is_not_on_main(target):
    page = source.load_table(target, "sales.nothing_here")
    assert (page.on_main, page.snapshots, page.runs, page.config_text) == (False, [], [], None)


def test_ingest_page_keeps_the_record_and_report_when_nessie_is_down(target, monkeypatch):
    from ingestion.exceptions import NessieUnavailableError
    from ingestion.nessie import NessieClient

    [failed] = [r for r in source.load_overview(target).runs if r.status == "AUDIT_FAILED"]

    def down(self, *args, **kwargs):
        raise NessieUnavailableError("Nessie at http://x unreachable (injected)")

    monkeypatch.setattr(NessieClient, "reference", down)
    page = source.load_ingest(target, failed.ingest_id)

    assert page.view.record.ingest_id == failed.ingest_id
    assert page.view.report is not None and page.view.report.outcome == "failed"
    assert (page.view.main_rows, page.view.branch_rows) == (None, None)
    assert "unreachable (injected)" in page.counts_error


def test_table_page_charts_the_metrics_the_demos_audits_recorded(target):
    """The metrics table the job wrote (Spark), read by pyiceberg: the published drop's
    row count, and the failed drop marked from its report."""
    page = source.load_table(target, "sales.orders")
    config = parse_table_config_text(page.config_text, "sales.orders", yaml=yaml)

    assert page.metrics_error is None
    [failed] = [r for r in page.runs if r.status == "AUDIT_FAILED"]
    assert list(page.failed_reports) == [failed.ingest_id]
    row_count = metric_charts.metric_charts(config, page.metric_rows, page.failed_reports)[0]
    assert row_count.monitor.label == "row_count"
    assert [(r["drop"], r["value"]) for r in row_count.rows] == [
        ("published", DEMO_ROWS),
        ("failed", DEMO_ROWS),
    ]
    assert row_count.rows[1]["ingest_id"] == failed.ingest_id
