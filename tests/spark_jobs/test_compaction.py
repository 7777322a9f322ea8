"""Compaction on its own branch (spark_jobs/compaction.py), with the real Iceberg procedure
and our Nessie server: the rewrite leaves fewer, larger files and the same content, and
the audit catches a rewrite that loses a file's rows or changes a value."""

from __future__ import annotations

import itertools

import pytest

from spark_jobs.catalog import configure_run_catalog
from spark_jobs.compaction import compact, iceberg_rewrite
from tests.fixtures.faulty_rewrites import drop_one_data_file

pytestmark = pytest.mark.slow

_tables = itertools.count()
DROPS = 6  # one data file each


@pytest.fixture
def small_files(lake, nessie_api):
    """A table on main with DROPS one-row appends (one file each) and a fresh branch."""
    n = next(_tables)
    table = f"cmp.orders{n}"
    lake.sql("CREATE NAMESPACE IF NOT EXISTS lake.cmp")
    lake.sql(
        f"CREATE TABLE lake.{table} (order_id BIGINT, amount DOUBLE, tag STRING) USING iceberg"
    )
    for i in range(DROPS):
        lake.sql(f"INSERT INTO lake.{table} VALUES ({i}, {i * 1.5}, 't{i % 2}')")
    branch = f"wap_cmp_orders{n}"  # a compaction branch, named as ingestion/compaction.py does
    nessie_api.create_branch(branch)
    return table, branch


def run(lake, table: str, branch: str, rewrite=iceberg_rewrite):
    return compact(
        lake,
        template="lake",
        run_catalog=f"wap_{branch}",
        table=table,
        branch=branch,
        target_file_size=128 * 1024 * 1024,
        min_files=2,
        rewrite=rewrite,
    )


def rows_on(lake, table: str, ref: str) -> list[tuple]:
    catalog = f"read_{ref}"
    configure_run_catalog(lake, "lake", catalog, ref)
    return sorted(tuple(r) for r in lake.sql(f"SELECT * FROM {catalog}.{table}").collect())


def test_the_rewrite_leaves_one_file_and_the_same_content(lake, small_files, nessie_api):
    table, branch = small_files
    main_before = nessie_api.ref("main")["hash"]

    result = run(lake, table, branch)

    assert result.passed and result.changed, result
    assert (result.before.data_files, result.after.data_files) == (DROPS, 1)
    assert (result.rewritten_files, result.added_files) == (DROPS, 1)
    assert result.before.rows == result.after.rows == DROPS
    assert nessie_api.ref("main")["hash"] == main_before  # only the branch moved
    assert rows_on(lake, table, branch) == rows_on(lake, table, "main")


def dropping_one_file(spark, catalog, table, options):
    """A broken rewrite: replaces the table with every row but those of one data file."""
    drop_one_data_file(spark, f"{catalog}.{table}")
    return {"rewritten_data_files_count": DROPS, "added_data_files_count": 1}


def changing_one_value(spark, catalog, table, options):
    """A broken rewrite that keeps the row count: one amount differs afterwards."""
    name = f"{catalog}.{table}"
    spark.sql(
        f"SELECT order_id, CASE WHEN order_id = 1 THEN amount + 0.5 ELSE amount END "
        f"AS amount, tag FROM {name}"
    ).writeTo(name).overwritePartitions()
    return {}


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (dropping_one_file, f"{DROPS} before, {DROPS - 1} after"),
        (changing_one_value, "different row digest"),
    ],
)
def test_a_rewrite_that_changes_the_content_fails_the_audit(
    lake, small_files, nessie_api, fault, words
):
    table, branch = small_files
    main_before = nessie_api.ref("main")["hash"]

    result = run(lake, table, branch, rewrite=fault)

    assert not result.passed
    assert words in result.reason
    assert nessie_api.ref("main")["hash"] == main_before


def test_the_digest_does_not_depend_on_row_order_or_file_layout(lake, small_files):
    """The same rows written in another order and into other files digest the same."""
    table, branch = small_files

    def reversed_into_three_files(spark, catalog, table, options):
        name = f"{catalog}.{table}"
        spark.sql(f"SELECT * FROM {name} ORDER BY order_id DESC").repartition(3).writeTo(
            name
        ).overwritePartitions()
        return {}

    result = run(lake, table, branch, rewrite=reversed_into_three_files)

    assert result.passed, result
    assert result.changed
