"""The catalog UI's addresses (contracts/catalog_ui.py): one builder for every link."""

from __future__ import annotations

from contracts import catalog_ui as ui


def test_paths():
    assert ui.tree_path("main") == "/tree/main"
    assert ui.tree_path("a/b", ["sales"]) == "/tree/a%2Fb/sales"
    assert (
        ui.content_path("main@abc", ["sales", "my table"]) == "/content/main@abc/sales/my%20table"
    )
    assert ui.commits_path("main") == "/commits/main"
    assert ui.commits_path("main", "abc") == "/commits/main/abc"
    assert ui.diff_path("wap_x") == "/diff/wap_x"


def test_urls():
    assert ui.branch_url("http://ui:19120/", "wap_x") == "http://ui:19120/tree/wap_x"
    assert ui.branch_diff_url("http://ui:19120", "wap_x") == "http://ui:19120/diff/wap_x"
    assert (
        ui.table_url("http://ui", "wap_x", "sales.orders") == "http://ui/content/wap_x/sales/orders"
    )
    assert ui.branch_url(None, "main") is None and ui.branch_diff_url("", "main") is None
    assert ui.table_url("http://ui", "main", "Sales.Orders") is None
