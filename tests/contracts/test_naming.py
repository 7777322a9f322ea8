"""The table-name rule (contracts/naming.py), defined once and applied alike everywhere."""

from __future__ import annotations

import pytest

from contracts import naming
from ingestion.alerting.links import nessie_table_url
from ingestion.naming import TableRef
from lakeview.check_sql import table_sql

VALID = ["sales.orders", "_a.b_2", "s3.t"]
INVALID = [
    "Sales.Orders",
    "sales.Orders",
    "sales",
    "a.b.c",
    "1a.b",
    "a.1b",
    "a-b.c",
    "",
    ".a",
    "a.",
]


@pytest.mark.parametrize("name", VALID)
def test_a_valid_table_name_is_one_everywhere(name):
    assert naming.is_table_name(name)
    assert naming.table_parts(name) == tuple(name.split("."))
    assert TableRef.parse(name).qualified == name
    assert nessie_table_url("http://ui", "main", name) is not None
    assert table_sql(name) is not None


@pytest.mark.parametrize("name", INVALID)
def test_an_invalid_table_name_is_refused_everywhere(name):
    """The Nessie UI link took upper-case names the rule refuses: it links none now."""
    assert not naming.is_table_name(name)
    assert naming.table_parts(name) is None
    with pytest.raises(ValueError):
        TableRef.parse(name)
    assert nessie_table_url("http://ui", "main", name) is None
    assert table_sql(name) is None
