"""`wap replay` in local mode: a drop quarantines rows; they are exported to a file of the
table's format, fixed and dropped again; the fixed rows are published once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.wap_cli import assert_one_line_error, count_rows, json_document, run_wap

pytestmark = pytest.mark.slow

PAYMENTS = """schema:
  - {name: payment_id, type: bigint}
  - {name: amount, type: 'decimal(10,2)'}
checks:
  - {kind: range, name: amount_range, column: amount, min: 0, on_fail: quarantine}
  - {kind: parse_errors, on_fail: quarantine}
quarantine: {max_fraction: 0.9}
csv: {delimiter: ';'}
"""


def _ingest(home: Path, env: dict[str, str], spark, path: Path):
    """`wap ingest PATH --table shop.payments --json` in `home`."""
    args = ("--home", str(home), "ingest", str(path), "--table", "shop.payments", "--json")
    return run_wap(*args, spark=spark, env=env)


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):
    """One drop of 2 good rows, 1 negative amount and 1 line that does not parse."""
    root = tmp_path_factory.mktemp("replay")
    home, tables = root / "home", root / "tables"
    tables.mkdir()
    (tables / "shop.payments.yaml").write_text(PAYMENTS)
    drop = root / "payments.csv"
    drop.write_text("payment_id;amount\n1;9.99\n2;-5.00\n3;ten\n4;1.00\n")
    env = {"WAP_TABLES_DIR": str(tables)}
    done = _ingest(home, env, spark, drop)
    [ingest] = json_document(done, "ingest")["ingests"]
    assert ingest["status"] == "PUBLISHED", done.output
    assert ingest["quarantined_rows"] == 2  # -5.00 (a range check) and "ten" (unparsed)
    return home, env, ingest["ingest_id"], root


def test_export_fix_and_drop_again_publishes_the_fixed_rows_once(lake, spark):
    home, env, ingest_id, root = lake
    out = root / "out"
    out.mkdir()
    assert count_rows(spark, home, "shop.payments") == 2

    done = run_wap(
        "--home",
        str(home),
        "replay",
        "shop.payments",
        ingest_id,
        "--out",
        str(out),
        "--json",
        env=env,
    )
    document = json_document(done, "replay")
    exported = Path(document["file"])
    assert exported.name == f"payments__replay_{ingest_id}.csv"
    assert document["rows"] == 2 and document["format"] == "csv"
    # The table's columns only, in its dialect; the unparsed line as it came.
    assert exported.read_text().splitlines() == ["payment_id;amount", "2;-5.00", "3;ten"]

    exported.write_text("payment_id;amount\n2;5.00\n3;10.00\n")
    dropped = _ingest(home, env, spark, exported)
    [again] = json_document(dropped, "ingest")["ingests"]
    assert again["status"] == "PUBLISHED", dropped.output
    assert again["quarantined_rows"] is None  # none set aside
    assert count_rows(spark, home, "shop.payments") == 4

    # The fixed file dropped a second time is refused before anything is uploaded.
    redropped = run_wap(
        "--home",
        str(home),
        "ingest",
        str(exported),
        "--table",
        "shop.payments",
        spark=spark,
        env=env,
    )
    assert_one_line_error(redropped, exported.name, "dropped already", again["ingest_id"])
    # A second replay of the same rows refuses: they cannot be published twice.
    twice = run_wap(
        "--home", str(home), "replay", "shop.payments", ingest_id, "--out", str(root), env=env
    )
    assert_one_line_error(twice, "exported already", exported.name, "publish them twice")
    by_check = run_wap(
        "--home",
        str(home),
        "replay",
        "shop.payments",
        ingest_id,
        "--check",
        "amount_range",
        "--out",
        str(root),
        env=env,
    )
    assert_one_line_error(by_check, "exported already")
    assert count_rows(spark, home, "shop.payments") == 4


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("shop.nothing", "0123456789abcdef"), ("no table shop.nothing on main",)),
        (("shop.payments", "0123456789abcdef"), ("no ingest 0123456789abcdef",)),
        (("shop.payments", "not-an-id"), ("not an ingest id",)),
        (("Shop", "0123456789abcdef"), ("invalid table name",)),
    ],
)
def test_bad_input_is_one_line(lake, args, fragments):
    home, env, _, root = lake
    done = run_wap("--home", str(home), "replay", *args, "--out", str(root), env=env)
    assert_one_line_error(done, *fragments)


def test_a_missing_out_directory_is_one_line(lake):
    home, env, ingest_id, root = lake
    missing = root / "nodir"
    args = ("replay", "shop.payments", ingest_id, "--out", str(missing))
    done = run_wap("--home", str(home), *args, env=env)
    assert_one_line_error(done, "no such directory", str(missing))
    assert not missing.exists()


def test_an_ingest_without_quarantined_rows_is_one_line(lake, spark):
    home, env, _, root = lake
    clean = root / "clean.csv"
    clean.write_text("payment_id;amount\n7;1.00\n")
    done = _ingest(home, env, spark, clean)
    [ingest] = json_document(done, "ingest")["ingests"]
    refused = run_wap("--home", str(home), "replay", "shop.payments", ingest["ingest_id"], env=env)
    assert_one_line_error(refused, "has no quarantined rows")
    assert json.loads(json.dumps(ingest))
