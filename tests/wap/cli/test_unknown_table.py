"""`wap ingest` into a mistyped table: refused with the closest known table, nothing
created; `--create` creates it (the local stack's createTablesFromUploads)."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.paths import REPO
from tests.fixtures.wap_cli import assert_one_line_error, count_rows, ledger_items, refs, run_wap


@pytest.fixture
def stock_file(tmp_path):
    path = tmp_path / "stock-2026-11-22.parquet"
    pq.write_table(pa.table({"sku": ["a-1", "b-2", "c-3"], "on_hand": [4, 0, 12]}), path)
    return path


@pytest.fixture
def tables_dir(tmp_path):
    """The repository's configs plus one for inventory.stock (the table meant)."""
    tables = tmp_path / "tables"
    tables.mkdir()
    shutil.copy(REPO / "tables" / "sales.orders.yaml", tables)
    (tables / "inventory.stock.yaml").write_text(
        "schema_policy: additive\nchecks:\n  - {kind: row_count, min: 1}\n"
    )
    return tables


@pytest.mark.slow
def test_a_mistyped_table_is_refused_with_a_suggestion_and_create_creates_it(
    spark, tmp_path, stock_file, tables_dir
):
    home = tmp_path / "home"
    env = {"WAP_TABLES_DIR": str(tables_dir)}
    ingest = ("--home", str(home), "ingest", str(stock_file), "--table", "inventory.stok")

    refused = run_wap(*ingest, spark=spark, env=env)

    assert refused.exit_code == 3, refused.output
    [record] = ledger_items(home).values()
    assert record["status"] == "REJECTED" and record["reason_code"] == "unknown_table"
    assert "did you mean inventory.stock?" in record["error"]
    assert "inventory.stok is not a known table" in refused.stdout
    assert "again with --create" in refused.stdout
    [alert] = [line for line in refused.stdout.splitlines() if "Slack alert posted" in line]
    assert "did you mean inventory.stock?" in alert
    assert set(refs(home)) == {"main"}  # no branch, and no job ran
    assert not record.get("job_run_id") and not record.get("branch")

    created = run_wap(*ingest, "--create", spark=spark, env=env)

    assert created.exit_code == 0, created.output
    published = [r for r in ledger_items(home).values() if r["status"] == "PUBLISHED"]
    assert [r["table"] for r in published] == ["inventory.stok"]
    assert count_rows(spark, home, "inventory.stok") == 3


def test_create_is_refused_for_a_deployed_stack(tmp_path, stock_file):
    result = run_wap("--aws", "ingest", str(stock_file), "--table", "inventory.stok", "--create")
    assert_one_line_error(result, "--create", "createTablesFromUploads")
