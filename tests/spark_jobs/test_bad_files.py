"""Files Spark cannot take and configs it refuses only at run time are the input's fault:
`rejected` in one run, with a reason that names the column or setting (issue 30), not
`error` retried three times. Real Spark and Iceberg; the files are written with pyarrow."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from pyspark.sql import types as T

from contracts.table_config import parse_table_config_text
from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import write_parquet


def _old_dates(path):
    pq.write_table(pa.table({"order_id": [1], "day": [dt.date(1500, 1, 1)]}), path)


def _nanos(path):
    stamps = pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))
    pq.write_table(
        pa.table({"order_id": [1], "at": stamps}), path, coerce_timestamps=None, version="2.6"
    )


def _wide_decimal(path):
    values = pa.array([decimal.Decimal("1.5")], pa.decimal256(40, 2))
    pq.write_table(pa.table({"order_id": [1], "price": values}), path)


def _duplicate_columns(path):
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["amount", "amount"])
    pq.write_table(table, path)


def _no_columns(path):
    pq.write_table(pa.table({}), path)


def _time_of_day(path):
    times = pa.array([3600 * 1_000_000], pa.time64("us"))
    pq.write_table(pa.table({"order_id": [1], "at": times}), path)


def _brotli(path):
    pq.write_table(pa.table({"order_id": [1, 2], "amount": [1.0, 2.0]}), path, compression="brotli")


@pytest.mark.parametrize(
    ("write", "named"),
    [
        (_old_dates, "day"),
        (_nanos, "at"),
        (_wide_decimal, "price"),
        (_duplicate_columns, "amount"),
        (_no_columns, "no columns"),
        (_time_of_day, "at"),
        (_brotli, "brotli"),
    ],
    ids=[
        "dates-before-1582",
        "nanosecond-timestamps",
        "decimal-40",
        "duplicate-columns",
        "zero-columns",
        "time64",
        "brotli",
    ],
)
def test_a_file_spark_cannot_take_is_rejected_naming_what(lake, ingest, tmp_path, write, named):
    path = tmp_path / "odd.parquet"
    write(path)
    report = run_ingest(lake, ingest(f"badfile.{write.__name__.strip('_')}", [path.as_uri()]))

    assert (report["outcome"], report["reason_code"]) == ("rejected", "unreadable_input"), (
        report["outcome"],
        report["reason"],
    )
    assert named in report["reason"]


ORDERS = {"order_id": [1, 2], "amount": [1.0, -2.0], "note": ["a", "b"]}


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("partition_by: ['bucket(0, order_id)']\n", "bucket"),
        (
            "checks:\n  - {kind: expression, name: sub, sql: "
            "'amount > (SELECT max(amount) FROM range(1))'}\n",
            "sub",
        ),
        (
            'checks:\n  - {kind: expression, name: boom, sql: "assert_true(amount > 0) IS NULL"}\n',
            "boom",
        ),
    ],
    ids=["partition-transform", "subquery-in-expression", "expression-failing-at-eval"],
)
def test_a_config_spark_refuses_at_run_time_is_a_config_error(
    lake, ingest, tmp_path, config, named
):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    report = run_ingest(lake, ingest("badcfg.orders", [source], config=config))

    assert (report["outcome"], report["reason_code"]) == ("rejected", "config_error"), (
        report["outcome"],
        report["reason"],
    )
    assert named in report["reason"]


@pytest.mark.parametrize(
    "sql",
    [
        "order_id IN (SELECT id FROM range(5))",
        "EXISTS (SELECT 1 FROM range(1) WHERE id = order_id)",
        "order_id NOT IN (SELECT id FROM range(5))",
    ],
    ids=["in-subquery", "correlated-exists", "not-in-subquery"],
)
def test_a_check_whose_sql_the_audit_cannot_run_is_rejected_in_one_run(lake, ingest, tmp_path, sql):
    # Spark analyses these per row, but refuses them inside the audit's aggregates: the
    # job builds those queries on an empty frame of the table before the write, so
    # whatever Spark's error class, the config is at fault (rejected, not retried).
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    config = f'checks:\n  - {{kind: expression, name: known_ids, sql: "{sql}"}}\n'
    args = ingest("badcfg.subquery", [source], config=config)
    report = run_ingest(lake, args)

    assert (report["outcome"], report["reason_code"]) == ("rejected", "config_error"), (
        report["outcome"],
        report["reason"],
    )
    assert "known_ids" in report["reason"] and "subquer" in report["reason"].lower()
    assert report["snapshot_id"] is None  # decided before anything was written


def test_an_analysis_that_cannot_reach_the_jvm_stays_an_error(lake, monkeypatch):
    # The queries are analysed in the driver JVM: a gateway failure there is not the
    # config's fault.
    from py4j.protocol import Py4JNetworkError

    from spark_jobs import checks
    from spark_jobs.errors import InfrastructureError

    def gone(*_args, **_kwargs):
        raise Py4JNetworkError("Answer from Java side is empty")

    monkeypatch.setattr(checks, "_build_audit_queries", gone)
    config = parse_table_config_text(
        "checks:\n  - {kind: expression, name: e, sql: 'order_id > 0'}\n", yaml=yaml
    )
    schema = T.StructType([T.StructField("order_id", T.LongType())])
    with pytest.raises(InfrastructureError):
        checks.compile_checks(lake, config, schema)
