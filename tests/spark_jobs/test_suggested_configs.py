"""The job on a sample under the config `wap suggest` made from that sample: written and
passed, every suggested check run (the bounds of decimals, dates and timestamps read back
in their column's type). The whole local flow does the same for a CSV in
tests/wap/cli/test_suggest_command.py."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pyarrow as pa
import pytest

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import write_parquet
from wap.ops.suggest import suggest_config


def parquet_sample(path):
    rows = 60
    start = datetime(2026, 11, 20, 6, tzinfo=UTC)
    write_parquet(
        path,
        {
            "order_id": pa.array(range(1, rows + 1), pa.int64()),
            "status": [("NEW", "PAID", "SHIPPED")[i % 3] for i in range(rows)],
            "amount": pa.array(
                [Decimal(350 + 97 * i) / 100 for i in range(rows)], pa.decimal128(12, 2)
            ),
            "ordered_at": pa.array(
                [start + timedelta(minutes=37 * i) for i in range(rows)],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": [date(2026, 11, 1) + timedelta(days=i % 9) for i in range(rows)],
            "discount": [None if i % 5 else i / 7 for i in range(rows)],
            "quantity": pa.array([(i * 7) % 13 - 2 for i in range(rows)], pa.int32()),
        },
    )


def jsonl_sample(path):
    lines = []
    for i in range(40):
        value = "null" if i % 6 == 0 else i * 1.5
        lines.append(
            f'{{"event_id": "e{i}", "kind": "{"ab"[i % 2]}", "on": "2026-11-{1 + i % 20:02d}", '
            f'"at": "2026-11-25T{i % 24:02d}:00:00Z", "value": {value}}}\n'
        )
    path.write_text("".join(lines))


@pytest.mark.parametrize(
    ("name", "write"), [("orders.parquet", parquet_sample), ("events.jsonl", jsonl_sample)]
)
def test_the_job_passes_a_sample_under_the_config_suggested_for_it(
    lake, ingest, tmp_path, name, write
):
    path = tmp_path / name
    write(path)
    conf = {key: lake.conf.get(key) for key in ("spark.sql.catalog.lake.uri",)}
    suggested = suggest_config([path])
    assert {key: lake.conf.get(key) for key in conf} == conf  # the session is lent as it is
    table = f"suggested.{path.stem}"

    report = run_ingest(lake, ingest(table, [path.as_uri()], config=suggested.text))

    assert report["outcome"] == "passed", report["reason"]
    assert report["rows_written"] == suggested.profile.rows
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks) >= {s.check.get("name", _default_name(s.check)) for s in suggested.checks}
    assert [
        c for c in checks.values() if c["severity"] == "error" and c["status"] != "passed"
    ] == []
    kinds = {s.check["kind"] for s in suggested.checks}
    assert {"not_null", "unique", "accepted_values", "range", "anomaly"} <= kinds


def _default_name(check: dict) -> str:
    return "_".join(filter(None, (check.get("column"), check["kind"])))
