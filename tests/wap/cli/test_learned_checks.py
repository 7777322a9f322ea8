"""A table created from uploads, with no config, is still audited (issue 39): its row
count is judged against the band its own published drops learned, through the real flow
(trigger, state machine, job, merge of the audited commit), and the outcome says why."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.wap_cli import count_rows, ledger_items, run_wap

pytestmark = pytest.mark.slow


def _drop(path, rows: int, first: int) -> str:
    pq.write_table(pa.table({"id": list(range(first, first + rows)), "qty": [3] * rows}), path)
    return str(path)


def test_a_table_without_config_learns_its_row_count_and_holds_back_a_short_drop(spark, tmp_path):
    home, tables = tmp_path / "home", tmp_path / "tables"
    tables.mkdir()
    env = {"WAP_TABLES_DIR": str(tables)}
    usual = [_drop(tmp_path / f"day{n}.parquet", 1_000 + 10 * n, n * 10_000) for n in range(4)]

    # One `wap ingest` each: files queued together for a table run as one batch, one drop.
    for n, path in enumerate(usual):
        extra = ("--create",) if n == 0 else ()
        ran = run_wap(
            "--home",
            str(home),
            "ingest",
            path,
            "--table",
            "feeds.events",
            *extra,
            spark=spark,
            env=env,
        )
        assert ran.exit_code == 0, ran.output
    assert count_rows(spark, home, "feeds.events") == sum(1_000 + 10 * n for n in range(4))

    short = _drop(tmp_path / "day5.parquet", 40, 90_000)
    held = run_wap(
        "--home", str(home), "ingest", short, "--table", "feeds.events", spark=spark, env=env
    )
    assert held.exit_code == 3, held.output
    [record] = [r for r in ledger_items(home).values() if r["key"].endswith("day5.parquet")]
    assert record["status"] == "AUDIT_FAILED"
    assert "row_count_anomaly" in record["error"]
    # The reason (ledger, `wap runs`, the alert) says the value, the band and its source.
    assert "row_count 40; expected" in record["error"]
    assert "from the last 4 published drops" in record["error"]
    assert "row_count_anomaly" in held.stdout

    shown = run_wap("--home", str(home), "show", record["ingest_id"], "--json")
    checks = {c["name"]: c for c in json.loads(shown.stdout)["report"]["checks"]}
    assert checks["row_count_anomaly"]["status"] == "failed"
    assert checks["row_count_anomaly"]["threshold"]["drops"] == 4
    assert count_rows(spark, home, "feeds.events") == sum(1_000 + 10 * n for n in range(4))
