"""Bad input through the whole flow with the real PySpark job (issue 38): a cut gzip, text
not valid in its declared encoding and a check Spark can only refuse inside the audit are
the input's fault, REJECTED after one job run with a reason saying what and where, never
retried as infrastructure (JOB_FAILED after three) nor published altered."""

from __future__ import annotations

import gzip

import pytest

from local.aws.emr_serverless import spark_job
from tests.fixtures.local_stack import record_for_key, wait_for_key

pytestmark = pytest.mark.slow

SCHEMA = """format: csv
csv: {encoding: utf-8}
schema:
  - {name: order_id, type: bigint}
  - {name: customer, type: string}
"""
CONFIGS = {
    "e2ebad.cut": SCHEMA,
    "e2ebad.names": SCHEMA,
    "e2ebad.sub": (
        "checks:\n  - {kind: expression, name: known_ids, "
        'sql: "order_id IN (SELECT id FROM range(5))"}\n' + SCHEMA
    ),
}


def test_bad_bytes_and_bad_checks_are_rejected_after_one_run(make_stack, lake, slack, tmp_path):
    for table, config in CONFIGS.items():
        (tmp_path / f"{table}.yaml").write_text(config)
    stack = make_stack(job=spark_job(lake), tables_dir=tmp_path, poll_interval_seconds=1)
    rows = "order_id,customer\n" + "".join(f"{i},customer {i}\n" for i in range(1, 5001))
    whole = gzip.compress(rows.encode())
    stack.drop_file("e2ebad/cut/orders.csv.gz", whole[: len(whole) // 2])
    stack.drop_file("e2ebad/names/names.csv", b"order_id,customer\n1,ann\n2,b\xff\xfeb\n")
    stack.drop_file("e2ebad/sub/orders.csv", b"order_id,customer\n1,ann\n")
    wait_for_key(stack, "e2ebad/sub/orders.csv", timeout=300)
    stack.wait_idle(timeout=300)

    records = {
        key: record_for_key(stack, key)
        for key in ("e2ebad/cut/orders.csv.gz", "e2ebad/names/names.csv", "e2ebad/sub/orders.csv")
    }
    assert {key: r.status for key, r in records.items()} == dict.fromkeys(records, "REJECTED"), (
        stack.describe()
    )
    assert len(stack.emr.started_runs) == 3  # one run each, none retried
    assert "gzip stream ends early" in records["e2ebad/cut/orders.csv.gz"].error
    assert "line 3" in records["e2ebad/names/names.csv"].error
    assert "known_ids" in records["e2ebad/sub/orders.csv"].error
