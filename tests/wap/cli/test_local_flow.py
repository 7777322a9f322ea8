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
import os
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from local.aws.stack import REPO_ROOT
from tests.fixtures.processes import run_process
from tests.fixtures.wap_cli import (
    assert_one_line_error,
    count_rows,
    json_document,
    ledger_items,
    refs,
    run_wap,
)

pytestmark = pytest.mark.slow


@dataclass
class Ran:
    """A `wap` run in its own process: stdout and stderr apart, as a shell sees them."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def run_wap_process(*args: str, cwd: Path) -> Ran:
    """`wap ARGS` as a user runs it: its own process, its own JVM."""
    done = run_process(
        [
            sys.executable,
            "-c",
            "import sys; from wap.cli import main; sys.argv[0] = 'wap'; main()",
            *args,
        ],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=600,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


@dataclass
class Demo:
    home: Path
    result: Ran
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
def demo(tmp_path_factory) -> Demo:
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
    # In a process of its own, with its own JVM: what reaches its stdout is what a user sees.
    result = run_wap_process("--home", str(home), "demo", "--fresh", cwd=home.parent)
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
    # The reason is the reviewer's to give: a placeholder, never one made up for them.
    assert f'publish {failed["branch"]} --reason "<why this data may go to main>"' in out
    assert "refunds are negative" not in out
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


LOG_NOISE = re.compile(r'^\s*\{"level"|NativeCodeLoader|\bWARN\b|log4j|^\s*\{.*"message"', re.M)


def test_demo_stdout_carries_progress_and_results_only(demo):
    """Lambda logs, the JVM's warnings and library noise go to the command's log file."""
    assert demo.result.exit_code == 0, demo.result.output
    out = demo.result.stdout
    assert "Outcome" in out and "Running 2 ingest(s)" in out
    assert not LOG_NOISE.search(out), LOG_NOISE.search(out).group(0)
    [log] = sorted((demo.home / "logs").glob("*-demo.log"))
    assert re.fullmatch(r"\d{8}T\d{6}(-\d+)?-demo\.log", log.name), log.name
    assert f"log: {log}" in demo.result.stderr.splitlines()[-1]
    text = log.read_text()
    lambda_lines = [json.loads(ln) for ln in text.splitlines() if ln.startswith('{"level"')]
    functions = {line.get("function_name") for line in lambda_lines}
    assert {"trigger", "job_status", "finish", "alert"} <= functions, functions
    assert "NativeCodeLoader" in text  # the JVM's own output, written to the log file
    # Nothing but the log's path on stderr: no JSON lines, no JVM warnings.
    assert not LOG_NOISE.search(demo.result.stderr), demo.result.stderr


def test_read_only_commands_print_one_json_document(demo):
    failed, published = demo.failed(), demo.published()
    result = run_wap(*demo.args("runs", "--json"))
    assert result.exit_code == 0, result.output
    runs = json_document(result, "runs")
    by_id = {r["ingest_id"]: r for r in runs["ingests"]}
    assert by_id[failed["ingest_id"]]["status"] == "AUDIT_FAILED"
    assert by_id[failed["ingest_id"]]["branch"] == failed["branch"]
    assert by_id[published["ingest_id"]]["status"] == "PUBLISHED"

    result = run_wap(*demo.args("branches", "--json"))
    assert result.exit_code == 0, result.output
    [branch] = json_document(result, "branches")["branches"]
    assert branch["name"] == failed["branch"] and branch["status"] == "AUDIT_FAILED"
    assert branch["ingest_id"] == failed["ingest_id"] and branch["age_seconds"] >= 0

    for target in (failed["branch"], failed["ingest_id"]):
        result = run_wap(*demo.args("show", target, "--json"))
        assert result.exit_code == 0, result.output
        shown = json_document(result, "show")
        assert shown["record"]["ingest_id"] == failed["ingest_id"]
        assert shown["record"]["status"] == "AUDIT_FAILED" and shown["branch_open"] is True
        assert [c["name"] for c in shown["failed_checks"]] == ["amount_range"]
        assert shown["failed_checks"][0]["violations"] == 3
        assert shown["report"]["outcome"] == "failed"
        assert shown["branch_rows"] > shown["main_rows"] > 0


def test_lineage_prints_each_runs_events_with_every_checks_result(demo):
    """The embedded stack's receiver kept a file per run under the home (issue 29)."""
    from tests.fixtures.openlineage_models import parse_run_event

    failed, published = demo.failed(), demo.published()
    result = run_wap(*demo.args("lineage", failed["branch"], "--json"))
    assert result.exit_code == 0, result.output
    start, fail = json_document(result, "lineage")
    for event in (start, fail):
        parse_run_event(event)
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    [source] = fail["inputs"]
    results = {
        a["name"]: a["success"]
        for a in source["inputFacets"]["dataQualityAssertions"]["assertions"]
    }
    assert results["amount_range"] is False and len(results) > 1
    assert sum(results.values()) == len(results) - 1  # the one failed check, the rest passed
    assert fail["run"]["facets"]["wap_ingest"]["reviewBranch"] == failed["branch"]

    result = run_wap(*demo.args("lineage", published["ingest_id"]))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert published["ingest_id"] in lines[0]
    assert [line.split()[1] for line in lines[1:]] == ["START", "COMPLETE"]
    assert "ref main" in lines[2] and "passed" in lines[2]


def test_read_only_commands_json_on_a_missing_home(tmp_path):
    for command in ("runs", "branches"):
        result = run_wap("--home", str(tmp_path / "nowhere"), command, "--json")
        assert result.exit_code == 0, result.output
        document = json_document(result, command)
        assert all(v == [] for v in document.values())
    assert not (tmp_path / "nowhere").exists()


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
    done = run_process([sys.executable, "-c", script], cwd=REPO_ROOT, timeout=120)
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
        "--verbose",
        *demo.args("ingest", str(good), str(bad), "--table", "sales.orders", "--json"),
        spark=spark,
    )
    assert result.exit_code == 3, result.output  # not everything was published
    outcome = json_document(result, "ingest")  # progress went to stderr
    assert outcome["all_published"] is False
    assert [(Path(o["file"]).name, o["status"], o["branch_open"]) for o in outcome["ingests"]] == [
        ("more-orders.parquet", "PUBLISHED", False),
        ("odd-status.parquet", "AUDIT_FAILED", True),
    ]
    assert "Running 2 ingest(s)" in result.stderr
    # --verbose: the Lambdas' logs stream to stderr (and still go to the log file), never stdout.
    assert '"function_name":"trigger"' in result.stderr.replace(" ", ""), result.stderr
    assert not LOG_NOISE.search(result.stdout), result.stdout
    log = Path(result.stderr.strip().splitlines()[-1].removeprefix("log: "))
    assert log.name.endswith("-ingest.log") and '"function_name":"finish"' in log.read_text()
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


PAYMENTS = """schema:
  - {name: payment_id, type: bigint}
  - {name: amount, type: 'decimal(10,2)'}
  - {name: paid_at, type: timestamp}
csv: {delimiter: ';'}
"""


def test_ingest_csv_files_into_a_declared_table(demo, spark, tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "shop.payments.yaml").write_text(PAYMENTS)
    good, bad = tmp_path / "payments.csv", tmp_path / "payments-bad.csv.gz"
    good.write_text(
        "payment_id;amount;paid_at\n1;9.99;2026-11-25 10:00:00\n2;5.00;2026-11-25 11:00:00\n"
    )
    import gzip

    bad.write_bytes(
        gzip.compress(
            b"payment_id;amount;paid_at\n3;1.00;2026-11-25 10:00:00\n"
            b"4;ten;2026-11-25 10:00:00\n5;2.00\n"
        )
    )
    env = {"WAP_TABLES_DIR": str(tables)}

    result = run_wap(
        *demo.args("ingest", str(good), str(bad), "--table", "shop.payments", "--json"),
        spark=spark,
        env=env,
    )

    outcome = json_document(result, "ingest")
    assert [(Path(o["file"]).name, o["status"]) for o in outcome["ingests"]] == [
        ("payments.csv", "PUBLISHED"),
        ("payments-bad.csv.gz", "AUDIT_FAILED"),
    ], result.output
    assert count_rows(spark, demo.home, "shop.payments") == 2
    [failed] = [o for o in outcome["ingests"] if o["status"] == "AUDIT_FAILED"]
    shown = run_wap(*demo.args("show", failed["ingest_id"]), env=env)
    assert shown.exit_code == 0, shown.output
    assert "Unparsable lines (file, line, text): parse_errors" in shown.stdout
    text = " ".join(shown.stdout.split())
    assert "4;ten;2026-11-25 10:00:00" in text and "5;2.00" in text
    report = json_document(
        run_wap(*demo.args("show", failed["ingest_id"], "--json"), env=env), "show"
    )
    [check] = [c for c in report["report"]["checks"] if c["kind"] == "parse_errors"]
    assert [s["line"] for s in check["samples"]] == [3, 4]
    # The uploaded object version, not the staged copy the job read.
    assert "/shop/payments/payments-bad.csv.gz?versionId=" in check["samples"][0]["file"]
