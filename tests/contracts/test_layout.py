"""The S3 key layout (contracts/layout.py): one definition every part uses."""

from __future__ import annotations

import pytest

from contracts import layout


@pytest.mark.parametrize(
    ("key", "marker"),
    [
        ("sales/orders/part-0.csv", False),
        ("sales/orders/", True),
        ("", True),
        ("sales/orders/_SUCCESS", True),
        ("sales/orders/_manifest.json", True),
        ("sales/orders/.part-0.crc", True),
    ],
)
def test_what_is_not_data(key, marker):
    assert layout.is_marker(key) is marker


def test_only_success_and_manifest_complete_a_dataset():
    assert layout.is_dataset_marker("a/b/_SUCCESS")
    assert layout.is_dataset_marker("a/b/_manifest.json")
    assert not layout.is_dataset_marker("a/b/_other")


def test_keys():
    assert layout.table_config_key("sales.orders") == "tables/sales.orders.yaml"
    assert (
        layout.staged_key("0123456789abcdef", "sales/orders/in/f.csv")
        == "staging/0123456789abcdef/f.csv"
    )


def test_the_stack_and_the_trigger_use_the_same_prefixes():
    from infra import constants
    from ingestion import staging

    assert constants.TABLES_CONFIG_PREFIX == layout.TABLES_PREFIX
    assert constants.REPORTS_PREFIX == layout.REPORTS_PREFIX
    assert constants.STAGING_PREFIX == staging.STAGING_PREFIX == layout.STAGING_PREFIX
