"""`wap` in local mode end to end: one demo into a tmp home, then the commands only local
mode has on that home.

The demo runs the real flow (handlers, state machine definition, Spark job) once
for the module; the read-only commands (without a JVM), ingest and discard work on the
state it left behind, each as a separate `wap` invocation (state restored from disk).
What every backend does (runs, branches, show, publish, discard, query) is tested once
for both in tests/wap/ops/test_backend_behaviour.py, on a seeded lake.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import Result

from local.aws.stack import REPO_ROOT
from tests.fixtures.wap_cli import (
    assert_one_line_error,
    count_rows,
    ledger_items,
    refs,
    run_wap,
)

pytestmark = pytest.mark.slow


@dataclass
class Demo:
    home: Path
    result: Result
    clean: Path
    broken: Path

    def args(self, *rest: str) -> list[str]:
        return ["--home", str(self.home), *rest]

    def failed(self) -> dict:
        [record] = [
            r for r in ledger_items(self.home).values() if r["key"].endswith(self.broken.name)
        ]
        return record

    def published(self) -> dict:
        [record] = [
            r for r in ledger_items(self.home).values() if r["key"].endswith(self.clean.name)
        ]
        return record


@pytest.fixture(scope="module")
def demo(spark, tmp_path_factory) -> Demo:
    home = tmp_path_factory.mktemp("cli") / "wap-home"
    # Left-overs of an earlier demo, which --fresh must drop.
    (home / "state").mkdir(parents=True)
    (home / "WAP_HOME").write_text("")
    (home / "state" / "ledger.json").write_text(
        json.dumps(
            [
                {
                    "pk": "ingest#ffffffffffffffff",
                    "kind": "ingest",
                    "ingest_id": "ffffffffffffffff",
                    "status": "PUBLISHED",
                    "table": "old.table",
                }
            ]
        )
    )
    result = run_wap("--home", str(home), "demo", "--fresh", spark=spark)
    samples = sorted((home / "samples").glob("*.parquet"))
    [broken] = [
        p
        for p in samples
        if pc.any(
            pc.less(pq.read_table(p).column("amount"), pa.scalar(Decimal(0), pa.decimal128(12, 2)))
        ).as_py()
    ]
    [clean] = [p for p in samples if p != broken]
    return Demo(home, result, clean, broken)


def test_demo_publishes_the_clean_file_and_keeps_the_broken_one_on_its_branch(demo, spark):
    assert demo.result.exit_code == 0, demo.result.output
    out = demo.result.stdout
    failed, published = demo.failed(), demo.published()
    assert len(ledger_items(demo.home)) == 2  # --fresh dropped the earlier state
    assert published["status"] == "PUBLISHED" and failed["status"] == "AUDIT_FAILED"
    negatives = pc.sum(
        pc.less(
            pq.read_table(demo.broken).column("amount"), pa.scalar(Decimal(0), pa.decimal128(12, 2))
        )
    ).as_py()
    assert f"check amount_range (range) failed: {negatives} row(s)" in out
    assert demo.clean.name in out and demo.broken.name in out
    assert failed["branch"] in out
    for command in ("show", "publish", "discard"):
        assert f"wap --home {demo.home} {command} {failed['branch']}" in out
    assert "Slack alert posted to #wap-alerts" in out and "amount_range" in out

    names = refs(demo.home)
    assert failed["branch"] in names and published["branch"] not in names
    assert count_rows(spark, demo.home, "sales.orders") == pq.read_table(demo.clean).num_rows
    # The broken rows are on the branch only.
    on_branch = count_rows(spark, demo.home, "sales.orders", ref=failed["branch"])
    # Files run in the order given: the broken file's branch starts from the published clean one.
    assert published["created_at"] <= failed["created_at"]  # (second resolution)
    assert on_branch == pq.read_table(demo.broken).num_rows + pq.read_table(demo.clean).num_rows
    # What moto held in memory is in the home: the source objects and the reports.
    kept = demo.home / "state" / "s3"
    for sample in (demo.clean, demo.broken):
        assert (
            kept / "wap-source" / "sales" / "orders" / sample.name
        ).read_bytes() == sample.read_bytes()
    report = json.loads(
        (kept / "wap-artifacts" / failed["report_uri"].split("/", 3)[3]).read_text()
    )
    assert report["outcome"] == "failed" and report["branch"] == failed["branch"]


def test_read_only_commands_never_load_spark(demo):
    branch = demo.failed()["branch"]
    script = (
        "import sys\n"
        "from typer.main import get_command\n"
        "from wap.cli import app\n"
        f"for args in (['runs'], ['branches'], ['show', {branch!r}]):\n"
        f"    get_command(app).main(['--home', {str(demo.home)!r}, *args], "
        "standalone_mode=False)\n"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
        "print('NO-JVM-OK')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "NO-JVM-OK" in done.stdout and branch in done.stdout


def _state(demo: Demo) -> tuple[bytes, dict[str, str]]:
    from wap.runtime.home import WapHome
    from wap.runtime.state_store import read_ledger_items

    ledger = json.dumps(read_ledger_items(WapHome(demo.home)), sort_keys=True).encode()
    return ledger, refs(demo.home)


def test_bad_ingest_input_changes_nothing(demo, tmp_path):
    before = _state(demo)
    fake = tmp_path / "fake.parquet"
    fake.write_text("order_id,amount\n1,2\n")
    assert_one_line_error(
        run_wap(*demo.args("ingest", str(fake), "-t", "sales.orders")), "not a parquet file"
    )
    assert_one_line_error(
        run_wap(*demo.args("ingest", str(tmp_path / "gone.parquet"), "-t", "sales.orders")),
        "no such file",
    )
    assert_one_line_error(
        run_wap(*demo.args("ingest", str(demo.clean), "-t", "Sales.Orders")), "invalid table name"
    )
    assert _state(demo) == before


def _orders(first_id: int, statuses: list[str]) -> bytes:
    now = datetime.now(UTC)
    n = len(statuses)
    table = pa.table(
        {
            "order_id": pa.array(range(first_id, first_id + n), pa.int64()),
            "customer_id": pa.array([7] * n, pa.int64()),
            "status": pa.array(statuses, pa.string()),
            "amount": pa.array([Decimal("10.00")] * n, pa.decimal128(12, 2)),
            "discount": pa.array([None] * n, pa.decimal128(12, 2)),
            "email": pa.array(["a@example.com"] * n, pa.string()),
            "order_ts": pa.array([now - timedelta(minutes=5)] * n, pa.timestamp("us", tz="UTC")),
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def test_ingest_files_then_discard_the_failed_branch(demo, spark, tmp_path):
    good, bad = tmp_path / "more-orders.parquet", tmp_path / "odd-status.parquet"
    good.write_bytes(_orders(9_000_000_000_000, ["NEW", "PAID"]))
    bad.write_bytes(_orders(9_000_000_000_100, ["NEW", "LOST", "LOST", "PAID"]))
    main_before = count_rows(spark, demo.home, "sales.orders")
    known = set(ledger_items(demo.home))

    result = run_wap(
        *demo.args("ingest", str(good), str(bad), "--table", "sales.orders"), spark=spark
    )
    assert result.exit_code == 3, result.output  # not everything was published
    new = {i: r for i, r in ledger_items(demo.home).items() if i not in known}
    assert sorted((r["key"], r["status"]) for r in new.values()) == [
        ("sales/orders/more-orders.parquet", "PUBLISHED"),
        ("sales/orders/odd-status.parquet", "AUDIT_FAILED"),
    ]
    [failed] = [r for r in new.values() if r["status"] == "AUDIT_FAILED"]
    assert "status_accepted_values" in failed["error"] and failed["branch"] in result.stdout
    assert count_rows(spark, demo.home, "sales.orders") == main_before + 2

    result = run_wap(
        *demo.args("discard", failed["branch"], "--reason", "wrong export", "--by", "bob")
    )
    assert result.exit_code == 0, result.output
    record = ledger_items(demo.home)[failed["ingest_id"]]
    assert record["status"] == "DISCARDED" and record["previous_status"] == "AUDIT_FAILED"
    assert record["discard_reason"] == "discarded by bob: wrong export"
    assert failed["branch"] not in refs(demo.home)
    assert count_rows(spark, demo.home, "sales.orders") == main_before + 2
    result = run_wap(*demo.args("branches"))
    assert failed["branch"] not in result.stdout
