"""The dashboard as an operator sees it: headless Chromium against a demo-seeded local stack.

Expected values come from the demo's input (`wap demo`: 40 clean rows published, a second
batch with 3 negative amounts that break `tables/sales.orders.yaml`'s range check on amount).
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow

LOAD_MS = 60_000  # the first page load opens the local stack (imports, catalog server)
FAILING_CHECK, VIOLATIONS = "amount_range", "3"  # 3 negative amounts, check range(amount)
DEMO_ROWS = 40


def _metric(page, label: str) -> str:
    metric = page.get_by_test_id("stMetric").filter(has_text=label)
    return metric.get_by_test_id("stMetricValue").inner_text().strip()


def test_overview_to_the_failed_ingest(page, served, demo_home, tmp_path):
    page.goto(served)
    page.get_by_text("Needs attention").wait_for(timeout=LOAD_MS)
    assert _metric(page, "Published") == "1"
    assert _metric(page, "Failed") == "1"
    assert _metric(page, "Open branches") == "1"
    page.get_by_test_id("stVegaLiteChart").locator("svg.marks").first.wait_for(timeout=LOAD_MS)
    page.get_by_test_id("data-grid-canvas").last.wait_for(timeout=LOAD_MS)
    page.screenshot(path=tmp_path / "overview.png", full_page=True)

    page.get_by_role("link", name=re.compile(r"negative-amounts\.parquet")).click()
    page.wait_for_url(re.compile(r"/ingest\?id=[0-9a-f]{16}$"), timeout=LOAD_MS)
    page.get_by_text("Audit checks").wait_for(timeout=LOAD_MS)

    row = page.get_by_test_id("stTable").first.locator("tr").filter(has_text=FAILING_CHECK)
    row.wait_for(timeout=LOAD_MS)
    cells = [c.strip() for c in row.locator("td, th").all_inner_texts()]
    assert cells[:6] == [FAILING_CHECK, "range", "amount", "error", "failed", VIOLATIONS]
    # Streamlit sends a page element by element: wait for what is drawn after the table.
    page.get_by_text(f"Sample violating rows: {FAILING_CHECK}").wait_for(timeout=LOAD_MS)
    assert _metric(page, "on main now") == str(DEMO_ROWS)
    assert _metric(page, "on the branch") == str(demo_home.rows_on_failed_branch())
    assert _metric(page, "written by this ingest") == str(DEMO_ROWS)
    publish = page.get_by_text(re.compile(r"wap --home .+ publish wap_sales_orders_"))
    publish.first.wait_for(timeout=LOAD_MS)  # the last section: rendered after the metrics
    assert publish.count() == 1
    # The branch's page in the local catalog UI, on the port the demo's links name.
    branch = demo_home.failed_ingest()["branch"]
    ui = page.get_by_role("link", name=f"Nessie UI: branch {branch}")
    assert ui.get_attribute("href") == f"http://127.0.0.1:{demo_home.catalog_port}/tree/{branch}"
    page.screenshot(path=tmp_path / "failed-ingest.png", full_page=True)


def test_table_page_shows_rows_on_main_and_configured_checks(page, served, tmp_path):
    page.goto(f"{served}/table?name=sales.orders")
    page.get_by_text("Configured checks").wait_for(timeout=LOAD_MS)

    assert _metric(page, "rows on main") == str(DEMO_ROWS)
    assert _metric(page, "snapshots on main") == "1"
    # The caption naming the config comes after the heading waited for above.
    page.get_by_text("tables/sales.orders.yaml").first.wait_for(timeout=LOAD_MS)
    page.get_by_test_id("stVegaLiteChart").locator("svg.marks").first.wait_for(timeout=LOAD_MS)
    configured = page.get_by_test_id("stTable").locator("tr").filter(has_text=FAILING_CHECK)
    configured.wait_for(timeout=LOAD_MS)
    assert "min 0" in configured.inner_text()
    page.get_by_test_id("data-grid-canvas").last.wait_for(timeout=LOAD_MS)
    page.screenshot(path=tmp_path / "table.png", full_page=True)
