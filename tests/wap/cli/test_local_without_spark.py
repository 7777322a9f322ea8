"""Local mode without Spark: bad input answered before anything starts, quiet state restore."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.processes import run_process
from tests.fixtures.wap_cli import assert_one_line_error, json_document, ledger_items, run_wap
from wap.runtime.embedded_stack import EmbeddedOptions, EmbeddedStack
from wap.runtime.home import WapHome

PARQUET = b"PAR1" + b"\x00" * 8 + b"PAR1"


@pytest.fixture
def parquet_file(tmp_path):
    path = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"order_id": [1, 2]}), path)
    return path


def test_read_only_commands_on_a_missing_home_create_nothing(tmp_path):
    home = tmp_path / "nowhere"
    for command in ("runs", "branches"):
        result = run_wap("--home", str(home), command)
        assert result.exit_code == 0, result.output
        assert "No " in result.stdout and "wap demo" in result.stdout
    result = run_wap("--home", str(home), "show", "wap_sales_orders_20261122T101500_01234567")
    assert_one_line_error(result, "no local state")
    assert not home.exists()


@pytest.mark.parametrize(
    ("make_file", "table", "message"),
    [
        (lambda d: d / "missing.parquet", "sales.orders", "no such file"),
        (lambda d: d, "sales.orders", "not a file"),
        (
            lambda d: _write(d / "orders.txt", b"order_id\n1\n"),
            "sales.orders",
            "unsupported file type 'orders.txt'",
        ),
        (lambda d: _write(d / "orders.csv", PARQUET), "sales.orders", "is a parquet file"),
        (
            lambda d: _write(d / "orders.jsonl", b'[{"order_id": 1}]'),
            "sales.orders",
            "one JSON object per line",
        ),
        (lambda d: _write(d / "orders.csv", b"id\n\x00\x01\n"), "sales.orders", "binary"),
        (lambda d: _write(d / "orders.csv.gz", b"id\n1\n"), "sales.orders", "not a gzip file"),
        (lambda d: _write(d / "orders.csv", b""), "sales.orders", "empty file"),
        (
            lambda d: _write(d / "renamed.parquet", b"order_id,amount\n1,2.0\n"),
            "sales.orders",
            "PAR1",
        ),
        (lambda d: _write(d / "_SUCCESS.parquet", b"PAR1....PAR1"), "sales.orders", "marker"),
    ],
)
def test_bad_files_are_refused_before_anything_starts(tmp_path, make_file, table, message):
    home = tmp_path / "home"
    result = run_wap("--home", str(home), "ingest", str(make_file(tmp_path)), "--table", table)
    assert_one_line_error(result, message)
    assert not home.exists()


@pytest.mark.parametrize(
    ("config", "name", "body", "message"),
    [
        # The local table config's `format:` decides: a .txt is read as JSON Lines.
        ("format: jsonl\n", "export.txt", b"order_id,amount\n1,2\n", "not JSON Lines"),
        ("format: jsonl\n", "export.csv", b"order_id,amount\n1,2\n", "not JSON Lines"),
        ("format: csv\n", "export.parquet", PARQUET, "is a parquet file"),
        # A config the trigger and the job would refuse is refused before any upload.
        ("format: xlsx\n", "export.csv", b"order_id\n1\n", "format must be one of"),
    ],
)
def test_files_are_read_as_the_local_table_config_says(tmp_path, config, name, body, message):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "shop.exports.yaml").write_text(config)
    home = tmp_path / "home"
    result = run_wap(
        "--home",
        str(home),
        "ingest",
        str(_write(tmp_path / name, body)),
        "--table",
        "shop.exports",
        env={"WAP_TABLES_DIR": str(tables)},
    )
    assert_one_line_error(result, message)
    assert not home.exists()


def test_the_local_table_format_lets_any_name_through(tmp_path):
    from wap.ops.operations import check_source_file, configured_format

    config = _write(tmp_path / "shop.exports.yaml", b"format: csv\n")
    export = _write(tmp_path / "export.txt", b"\xef\xbb\xbforder_id;amount\n1;2\n")
    assert configured_format(config) == "csv"
    assert configured_format(tmp_path / "none.yaml") is None
    check_source_file(export, "csv")  # no error


@pytest.mark.parametrize(
    "table",
    [
        "Sales.Orders",
        "sales",
        "sales.orders.x",
        "1sales.orders",
        "sales.orders;drop",
        "sales/orders",
    ],
)
def test_invalid_table_names_are_refused(tmp_path, parquet_file, table):
    home = tmp_path / "home"
    result = run_wap("--home", str(home), "ingest", str(parquet_file), "--table", table)
    assert_one_line_error(result, "invalid table name")
    assert not home.exists()


def test_no_wait_is_only_for_a_deployed_stack(tmp_path, parquet_file):
    result = run_wap(
        "--home", str(tmp_path / "h"), "ingest", str(parquet_file), "-t", "a.b", "--no-wait"
    )
    assert_one_line_error(result, "--aws")


def test_fresh_refuses_to_wipe_a_directory_that_is_not_a_wap_home(tmp_path):
    home = tmp_path / "projects"
    home.mkdir()
    (home / "precious.txt").write_text("keep me")
    result = run_wap("--home", str(home), "demo", "--fresh")
    assert_one_line_error(result, "not a wap home")
    assert (home / "precious.txt").read_text() == "keep me"


def test_restored_objects_do_not_reach_the_trigger_but_new_uploads_do(tmp_path):
    home = WapHome(tmp_path / "home").create()
    saved = home.objects / "wap-source" / "sales" / "orders" / "old.parquet"
    saved.parent.mkdir(parents=True)
    saved.write_bytes(b"PAR1 old upload PAR1")

    stack = EmbeddedStack(home, EmbeddedOptions(run_ingests=True, job=_never_runs)).start()
    try:
        s3 = stack.aws.client("s3")
        restored = s3.get_object(Bucket="wap-source", Key="sales/orders/old.parquet")
        assert restored["Body"].read() == b"PAR1 old upload PAR1"
        assert stack.aws.s3_events.delivered == []
        stack.aws.drop_file("sales/orders/_SUCCESS", b"")  # a marker: the trigger ignores it
        delivered = [e["detail"]["object"]["key"] for e in stack.aws.s3_events.delivered]
        stack.aws.wait_idle(timeout=30)
        ingests = stack.aws.ledger().list_ingests()
    finally:
        stack.stop()
    assert delivered == ["sales/orders/_SUCCESS"]
    assert ingests == []


def _never_runs(argv):
    raise AssertionError(f"no job may start here: {argv}")


def _write(path, body: bytes):
    path.write_bytes(body)
    return path


def test_a_home_where_only_the_nessie_server_ran_is_taken_over(tmp_path):
    home = tmp_path / ".wap"
    home.mkdir()
    (home / "nessie.db").write_bytes(b"")  # what `make nessie` leaves behind
    assert WapHome(home).create().exists()
    WapHome(home).wipe()
    assert not home.exists()


def test_the_demo_needs_the_table_config(tmp_path):
    result = run_wap("--home", str(tmp_path / "h"), "demo", env={"WAP_TABLES_DIR": str(tmp_path)})
    assert_one_line_error(result, "sales.orders.yaml", "WAP_TABLES_DIR")
    assert not (tmp_path / "h").exists()


def test_without_java_the_ingest_ends_with_a_clear_error(tmp_path, parquet_file):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "PATH": "/usr/bin:/bin"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = run_process(
        [
            str(Path(sys.executable).with_name("wap")),
            "--home",
            str(tmp_path / "h"),
            "ingest",
            str(parquet_file),
            "-t",
            "sales.orders",
        ],
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: could not start Spark (needs Java 17"), done.stderr
    assert ledger_items(tmp_path / "h") == {}


def test_a_stack_that_cannot_be_synthesized_is_a_clear_start_error(tmp_path, monkeypatch):
    from local.aws import stack as stack_module
    from local.aws.template import TemplateError
    from wap.runtime.embedded_stack import StackStartError

    def no_cli(context):
        raise TemplateError("node_modules/.bin/cdk is missing: `make setup` runs npm ci")

    monkeypatch.setattr(stack_module, "stack_template", no_cli)
    home = WapHome(tmp_path / "home").create()
    with pytest.raises(StackStartError, match=r"synthesize.*make setup"):
        EmbeddedStack(home, EmbeddedOptions(run_ingests=True, job=_never_runs)).start()


def test_runs_shows_a_late_table_first(tmp_path):
    """Issue 42: a table whose config expects a daily drop and has none published is LATE
    in `wap runs` (before any ingest is listed) and in its `--json`."""
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "sales.orders.yaml").write_text(
        'expect:\n  every: 1d\n  by: "06:00"\n  timezone: Europe/Berlin\n'
    )
    (tables / "sales.customers.yaml").write_text("schema_policy: additive\n")
    home = WapHome(tmp_path / "home").create()
    env = {"WAP_TABLES_DIR": str(tables)}

    listing = run_wap("--home", str(home.root), "runs", env=env)
    document = json_document(run_wap("--home", str(home.root), "runs", "--json", env=env), "runs")

    assert listing.exit_code == 0, listing.output
    assert "Expected arrivals" in listing.stdout and "LATE" in listing.stdout
    assert (
        "late: sales.orders: nothing published on record; expected daily by 06:00 "
        "Europe/Berlin" in " ".join(listing.stdout.split())
    )
    [row] = document["freshness"]
    assert row["subject"] == "sales.orders" and row["late"]
    assert row["last_published_at"] is None and row["expected"] == "daily by 06:00 Europe/Berlin"


def test_replay_into_a_missing_directory_is_refused_before_anything_starts(tmp_path):
    home = tmp_path / "home"
    result = run_wap(
        "--home", str(home), "replay", "lab.q", "a" * 16, "--out", str(tmp_path / "nodir")
    )
    assert_one_line_error(result, "no such directory", "nodir")
    assert not home.exists()


def test_a_home_that_is_a_file_is_one_line(tmp_path):
    home = tmp_path / "home"
    home.write_text("not a directory\n")
    for command in ("runs", "branches"):
        result = run_wap(command, env={"WAP_HOME": str(home)})
        assert_one_line_error(result, str(home), "not a directory")
    assert home.read_text() == "not a directory\n"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("ingest", "x.csv"), ("Missing option '--table'", "ingest --help")),
        (("bogus",), ("No such command 'bogus'", "--help")),
        (("runs", "--bogus"), ("No such option: --bogus", "runs --help")),
        (("query", "main", "SELECT 1", "--limit", "x"), ("Invalid value for '--limit'",)),
    ],
)
def test_usage_errors_are_one_line_with_exit_code_2(tmp_path, args, fragments):
    result = run_wap("--home", str(tmp_path / "home"), *args)
    assert result.exit_code == 2, result.output
    assert_one_line_error(result, *fragments)
    assert result.stdout == ""


def test_wap_alone_still_prints_its_help():
    result = run_wap()
    assert "Usage: " in result.output and "ingest" in result.output
