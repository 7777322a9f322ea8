"""`wap suggest`'s profile: sample files read by the job's readers (parquet, CSV and JSON
Lines with the config's options), every column counted."""

from __future__ import annotations

import gzip
from datetime import UTC, date, datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from contracts.table_config import parse_table_config
from tests.fixtures.spark_files import write_parquet
from wap.exceptions import InvalidInputError
from wap.ops.profiling import profile_files

CSV = (
    "payment_id;amount;paid_at;method;note\n"
    "1;9.99;2026-11-25 10:00:00;card;\n"
    "2;5.00;2026-11-25 11:00:00;cash;late\n"
    "3;12.50;2026-11-25 12:30:00;card;\n"
    "4;7.25;2026-11-25 13:00:00;card;x\n"
)


def columns(profile) -> dict:
    return {c.name: c for c in profile.columns}


def test_a_parquet_sample_is_profiled_column_by_column(spark, tmp_path):
    path = tmp_path / "orders.parquet"
    write_parquet(
        path,
        {
            "order_id": pa.array([1, 2, 3, 4], pa.int64()),
            "status": ["NEW", "PAID", None, "NEW"],
            "amount": pa.array(
                [Decimal("3.50"), Decimal("990.00"), Decimal("10.00"), None], pa.decimal128(12, 2)
            ),
            "ordered_at": pa.array(
                [datetime(2026, 11, d, 10, tzinfo=UTC) for d in (1, 2, 3, 4)],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": [date(2026, 11, 1), date(2026, 11, 9), None, None],
            "score": [1.5, float("nan"), 0.5, 2.0],
        },
    )

    profile = profile_files(spark, [path], parse_table_config({}))

    assert profile.rows == 4 and profile.parse_errors == 0 and not profile.inferred
    found = columns(profile)
    assert [(c.name, c.type) for c in profile.columns] == [
        ("order_id", "bigint"),
        ("status", "string"),
        ("amount", "decimal(12,2)"),
        ("ordered_at", "timestamp"),
        ("day", "date"),
        ("score", "double"),
    ]
    assert (found["order_id"].nulls, found["order_id"].distinct) == (0, 4)
    assert (found["order_id"].minimum, found["order_id"].maximum) == (1, 4)
    assert found["status"].nulls == 1 and found["status"].values == ("NEW", "PAID")
    assert (found["amount"].minimum, found["amount"].maximum) == (Decimal("3.50"), Decimal("990"))
    # In UTC whatever this machine's zone (a collected timestamp would be local time).
    assert found["ordered_at"].minimum == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert found["day"].nulls == 2 and found["day"].maximum == date(2026, 11, 9)
    assert found["score"].nan == 1


def test_a_csv_sample_is_read_with_the_configs_options_and_its_types_inferred(spark, tmp_path):
    path = tmp_path / "payments.csv.gz"
    path.write_bytes(gzip.compress(CSV.encode()))
    config = parse_table_config({"csv": {"delimiter": ";"}})

    profile = profile_files(spark, [path], config)

    assert profile.rows == 4 and profile.inferred
    assert [(c.name, c.type) for c in profile.columns] == [
        ("payment_id", "bigint"),  # Spark infers int: widened, a later file may hold more
        ("amount", "double"),
        ("paid_at", "timestamp"),
        ("method", "string"),
        ("note", "string"),
    ]
    found = columns(profile)
    assert found["note"].nulls == 2  # the empty field is the CSV's null
    assert found["paid_at"].maximum == datetime(2026, 11, 25, 13, tzinfo=UTC)
    assert found["method"].values == ("card", "cash")


def test_a_csv_sample_takes_the_declared_types_and_counts_what_does_not_parse(spark, tmp_path):
    path = tmp_path / "payments.csv"
    path.write_text(CSV + "5;ten;2026-11-25 14:00:00;card;\n")
    config = parse_table_config(
        {
            "csv": {"delimiter": ";"},
            "schema": [
                {"name": "payment_id", "type": "bigint", "required": True},
                {"name": "amount", "type": "decimal(10,2)"},
                {"name": "paid_at", "type": "timestamp"},
                {"name": "method", "type": "string"},
                {"name": "note", "type": "string"},
            ],
        }
    )

    profile = profile_files(spark, [path], config)

    assert (profile.rows, profile.parse_errors, profile.inferred) == (4, 1, False)
    found = columns(profile)
    assert found["amount"].type == "decimal(10,2)" and found["amount"].maximum == Decimal("12.50")
    assert found["payment_id"].required and not found["amount"].required


def test_a_json_lines_sample_keeps_the_order_of_its_keys(spark, tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"zeta": 1, "at": "2026-11-25T10:00:00Z", "kind": "a", "v": 0.5, "on": "2026-11-25"}\n'
        "\n"
        '{"zeta": 2, "at": "2026-11-25T11:00:00Z", "kind": "b", "v": null, "extra": true}\n'
    )

    profile = profile_files(spark, [path], parse_table_config({}))

    assert [(c.name, c.type) for c in profile.columns] == [
        ("zeta", "bigint"),
        ("at", "timestamp"),
        ("kind", "string"),
        ("v", "double"),
        ("on", "date"),  # Spark infers a timestamp: JSON has no dates
        ("extra", "boolean"),
    ]
    assert profile.rows == 2 and columns(profile)["v"].nulls == 1
    assert columns(profile)["on"].maximum == date(2026, 11, 25)


def test_parquet_and_csv_samples_line_up_as_one_drop(spark, tmp_path):
    parquet = tmp_path / "a.parquet"
    write_parquet(parquet, {"payment_id": pa.array([10, 11], pa.int32()), "method": ["card", "x"]})
    text = tmp_path / "b.csv"
    text.write_text("payment_id,amount\n12,1.5\n")

    profile = profile_files(spark, [parquet, text], parse_table_config({}))

    assert [(c.name, c.type) for c in profile.columns] == [
        ("payment_id", "int"),  # the parquet file's type: the CSV's values are read as it
        ("method", "string"),
        ("amount", "double"),
    ]
    assert profile.rows == 3 and columns(profile)["payment_id"].maximum == 12


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("header-only.csv", "a,b\n", "no rows to profile"),
        ("not.parquet", "a,b\n1,2\n", "not a parquet file"),
        ("array.jsonl", '[{"a": 1}]\n', "holds a JSON array"),
    ],
)
def test_a_sample_the_job_would_refuse_or_without_rows_is_refused(
    spark, tmp_path, name, content, fragment
):
    path = tmp_path / name
    path.write_text(content)

    with pytest.raises(InvalidInputError, match=fragment):
        profile_files(spark, [path], parse_table_config({}))


def test_a_gzip_sample_cut_short_is_refused_saying_where(spark, tmp_path):
    """An interrupted download is the file's fault, said as the job says it (bytes read,
    line), not as Hadoop's `Unexpected end of input stream`."""
    whole = gzip.compress(("payment_id;amount\n" + "1;9.99\n" * 20_000).encode())
    path = tmp_path / "payments.csv.gz"
    path.write_bytes(whole[: len(whole) // 2])

    with pytest.raises(InvalidInputError, match=r"payments\.csv\.gz: the gzip stream ends early"):
        profile_files(spark, [path], parse_table_config({"csv": {"delimiter": ";"}}))
