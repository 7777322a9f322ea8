"""`wap suggest`: a commented table config from sample files, written to stdout or a file;
bad input refused in one line with nothing written; and the config it writes accepted by
the service, its checks passing when the sample itself is ingested."""

from __future__ import annotations

import gzip
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from contracts.table_config import parse_table_config_text
from tests.fixtures.wap_cli import assert_one_line_error, json_document, ledger_items, run_wap

SAMPLE_ROWS = 200


def payments_csv(rows: int = SAMPLE_ROWS, seed: int = 7) -> str:
    """A `;`-separated export: a key, amounts, times, a few methods, a column with nulls."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 25, 8, tzinfo=UTC)
    lines = ["payment_id;amount;paid_at;method;coupon"]
    for i in range(1, rows + 1):
        at = (start + timedelta(minutes=7 * i)).strftime("%Y-%m-%d %H:%M:%S")
        coupon = "" if i % 4 else f"C{rng.randint(100, 999)}"
        method = rng.choice(["card", "cash", "voucher"])
        lines.append(f"{i};{rng.randint(100, 99_000) / 100:.2f};{at};{method};{coupon}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "payments-2026-11-25.csv"
    path.write_text(payments_csv())
    return path


def wap(tmp_path, *args: str, spark=None, env=None):
    return run_wap("--home", str(tmp_path / "home"), *args, spark=spark, env=env)


@pytest.mark.parametrize(
    ("name", "content", "args", "fragment"),
    [
        ("absent.csv", None, (), "no such file"),
        ("empty.csv", b"", (), "empty file (0 bytes)"),
        ("orders.xlsx", b"a,b\n1,2\n", (), "unsupported file type 'orders.xlsx'"),
        ("orders.parquet", b"a,b\n1,2\n", (), "not a parquet file"),
        ("orders.csv", b"PAR1....PAR1", (), "is a parquet file"),
        ("orders.csv", b"a;b\n1;2\n", ("--delimiter", ";;"), "delimiter must be one character"),
        ("orders.csv", b"a;b\n1;2\n", ("--format", "xlsx"), "format must be one of"),
        ("orders.csv", b"a;b\n1;2\n", ("--config", "nope.yaml"), "no such config file"),
    ],
)
def test_bad_input_is_refused_in_one_line_and_nothing_is_written(
    tmp_path, name, content, args, fragment
):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    output = tmp_path / "tables" / "shop.payments.yaml"
    output.parent.mkdir()

    result = wap(tmp_path, "suggest", str(path), *args, "--output", str(output))

    assert_one_line_error(result, fragment)
    assert result.exit_code == 1 and result.stdout == ""
    assert not output.exists()


def test_an_existing_output_is_kept_without_force(tmp_path, sample):
    output = tmp_path / "shop.payments.yaml"
    output.write_text("# mine\n")

    result = wap(tmp_path, "suggest", str(sample), "--output", str(output))

    assert_one_line_error(result, "exists; --force overwrites it")
    assert output.read_text() == "# mine\n"


def test_an_output_in_a_missing_directory_is_refused(tmp_path, sample):
    result = wap(tmp_path, "suggest", str(sample), "-o", str(tmp_path / "nope" / "t.yaml"))

    assert_one_line_error(result, "no such directory")


def test_a_sample_without_rows_is_refused_after_reading_and_nothing_is_written(spark, tmp_path):
    path = tmp_path / "header-only.csv"
    path.write_text("payment_id;amount\n")
    output = tmp_path / "shop.payments.yaml"

    result = wap(tmp_path, "suggest", str(path), "--delimiter", ";", "-o", str(output), spark=spark)

    assert_one_line_error(result, "header-only.csv: no rows to profile")
    assert not output.exists()


def test_the_config_goes_to_stdout_or_to_a_file_and_json_gives_the_suggestions(
    spark, tmp_path, sample
):
    output = tmp_path / "shop.payments.yaml"
    output.write_text("# an older suggestion\n")

    written = wap(
        tmp_path,
        "suggest",
        str(sample),
        "--delimiter",
        ";",
        "--output",
        str(output),
        "--force",
        "--json",
        spark=spark,
    )
    printed = wap(tmp_path, "suggest", str(sample), "--delimiter", ";", spark=spark)

    document = json_document(written, "suggest")
    # Written outside the folder the local stack reads: the user is told so (stderr).
    assert f"note: {output} is not read by the local stack" in written.stderr
    text = output.read_text()
    assert printed.exit_code == 0, printed.output
    assert printed.stdout == text == document["config"]
    assert document["output"] == str(output) and document["rows"] == SAMPLE_ROWS
    assert document["types_inferred"] is True and document["parse_errors"] == 0
    config = parse_table_config_text(text, str(output), yaml=yaml)
    assert config.csv.delimiter == ";"
    assert [(c.name, c.type) for c in config.columns] == [
        ("payment_id", "bigint"),
        ("amount", "double"),
        ("paid_at", "timestamp"),
        ("method", "string"),
        ("coupon", "string"),
    ]
    assert [s["check"] for s in document["checks"]] == yaml.safe_load(text)["checks"]
    by_name = {check.name: check for check in config.checks}
    assert by_name["payment_id_unique"].kind == "unique"
    assert by_name["payment_id_unique"].params == {"against_main": True}
    assert by_name["method_accepted_values"].params == {"values": ["card", "cash", "voucher"]}
    assert "coupon_not_null" not in by_name
    assert by_name["coupon_null_fraction_anomaly"].severity == "warn"
    assert f"  # 0 nulls in {SAMPLE_ROWS} rows\n  - kind: not_null\n" in text
    assert "  # 150 nulls in 200 rows (75%)\n" in text
    [coupon] = [c for c in document["columns"] if c["name"] == "coupon"]
    assert coupon == {
        "name": "coupon",
        "type": "string",
        "nulls": 150,
        "distinct": coupon["distinct"],
        "min": None,
        "max": None,
    }


@pytest.mark.slow
def test_the_suggested_config_is_accepted_and_its_checks_pass_on_the_sample(
    spark, tmp_path, sample
):
    """The whole local flow (trigger, state machine, the real job) with the config the
    command wrote under tables/: the sample itself is published, no check failing."""
    tables = tmp_path / "tables"
    tables.mkdir()
    gzipped = tmp_path / "payments-2026-11-25.csv.gz"
    gzipped.write_bytes(gzip.compress(sample.read_bytes()))
    suggested = wap(
        tmp_path,
        "suggest",
        str(gzipped),
        "--delimiter",
        ";",
        "-o",
        str(tables / "shop.payments.yaml"),
        spark=spark,
    )
    assert suggested.exit_code == 0, suggested.output
    env = {"WAP_TABLES_DIR": str(tables)}

    ingested = wap(
        tmp_path, "ingest", str(gzipped), "--table", "shop.payments", spark=spark, env=env
    )

    assert ingested.exit_code == 0, ingested.output
    [record] = ledger_items(tmp_path / "home").values()
    assert record["status"] == "PUBLISHED", record
    shown = json_document(wap(tmp_path, "show", record["ingest_id"], "--json", env=env), "show")
    checks = shown["report"]["checks"]
    config = parse_table_config_text(
        (tables / "shop.payments.yaml").read_text(), "suggested", yaml=yaml
    )
    assert {c["name"] for c in checks} >= {check.name for check in config.checks}
    assert [c for c in checks if c["severity"] == "error" and c["status"] != "passed"] == []
    assert shown["report"]["rows_written"] == SAMPLE_ROWS


def test_a_config_outside_the_tables_folder_is_named_with_where_configs_are_read(
    tmp_path, monkeypatch
):
    from wap.runtime.embedded_stack import ENV_TABLES_DIR, unread_config_note

    mine = tmp_path / "tables" / "fin.pay.yaml"
    mine.parent.mkdir()
    mine.write_text("checks: []\n")
    monkeypatch.chdir(tmp_path)

    note = unread_config_note(Path("tables/fin.pay.yaml"))
    assert note is not None and f"{ENV_TABLES_DIR}={mine.parent}" in note
    # `wap ingest` run beside it says so before anything starts (here: a missing file).
    result = wap(tmp_path, "ingest", "absent.csv", "--table", "fin.pay")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == note, result.stderr
    assert "no such file" in result.stderr.splitlines()[-1]

    monkeypatch.setenv(ENV_TABLES_DIR, str(mine.parent))
    assert unread_config_note(Path("tables/fin.pay.yaml")) is None
    result = wap(tmp_path, "ingest", "absent.csv", "--table", "fin.pay")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
