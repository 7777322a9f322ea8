"""End to end with the real PySpark job: upload -> trigger -> EMR (local) -> state machine ->
Nessie main / branch -> ledger -> Slack stand-in. Few, small files: Spark is the slow part."""

from __future__ import annotations

import io
import itertools
import json
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from local.aws.emr_serverless import spark_job
from tests.fixtures.lineage import check_runs_of_a_passing_and_a_failing_file
from tests.fixtures.local_stack import (
    branch_exists,
    record_for_key,
    s3_notification,
    wait_for_key,
    wait_until,
)

pytestmark = pytest.mark.slow

AUDITED_CONFIG = """
schema_policy: additive
checks:
  - {kind: not_null, name: amount_present, column: amount}
  - {kind: range, name: amount_positive, column: amount, min: 0}
"""


def parquet(rows: list[tuple[int, float | None]]) -> bytes:
    table = pa.table(
        {
            "order_id": pa.array([r[0] for r in rows], pa.int64()),
            "amount": pa.array([r[1] for r in rows], pa.float64()),
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


class GatedJob:
    """The real job, each run held until `gate` is set (`runs`: the arguments it got), so a
    test can queue files behind a run."""

    def __init__(self, job):
        self.job, self.gate, self.runs = job, threading.Event(), []

    def __call__(self, argv: list[str]):
        self.runs.append(argv)
        assert self.gate.wait(120)
        return self.job(argv)


def main_rows(spark, table: str) -> list[tuple]:
    return sorted(
        tuple(r) for r in spark.sql(f"SELECT order_id, amount FROM lake.{table}").collect()
    )


@pytest.fixture
def e2e_stack(make_stack, lake, tmp_path):
    (tmp_path / "e2e.audited.yaml").write_text(AUDITED_CONFIG)

    def make(**overrides):
        return make_stack(
            job=spark_job(lake), tables_dir=tmp_path, poll_interval_seconds=1, **overrides
        )

    return make


def test_clean_file_delivered_20_times_is_published_once(e2e_stack, lake, nessie_client, slack):
    stack = e2e_stack()
    key = "e2e/orders/2026-11-22 batch.parquet"
    rows = [(1, 10.0), (2, 20.5), (3, 0.0)]
    dropped = stack.drop_file(key, parquet(rows))
    event = s3_notification(stack, key, dropped["version_id"], len(parquet(rows)))
    for _ in range(20):
        stack.dispatcher.invoke_async("trigger", event)
    record = wait_for_key(stack, key, timeout=300)
    stack.wait_idle(timeout=300)

    assert record.status == "PUBLISHED", record
    assert main_rows(lake, "e2e.orders") == rows
    assert not branch_exists(nessie_client, record.branch)
    assert len(stack.emr.started_runs) == 1
    assert slack.messages == []
    assert record.rows_written == 3


def test_failing_check_keeps_main_and_alerts_with_the_check(
    e2e_stack, lake, nessie_client, slack, receiver, waits
):
    stack = e2e_stack(lineage_url=receiver.url)
    good, bad = [(1, 5.0)], [(2, -1.0), (3, None), (4, -7.5)]
    good_put = stack.drop_file("e2e/audited/good.parquet", parquet(good))
    published = wait_for_key(stack, "e2e/audited/good.parquet", timeout=300)
    stack.wait_idle(timeout=300)
    main_before = nessie_client.get_reference("main").hash_

    bad_put = stack.drop_file("e2e/audited/bad.parquet", parquet(bad))
    record = wait_for_key(stack, "e2e/audited/bad.parquet", timeout=300)
    stack.wait_idle(timeout=300)

    assert record.status == "AUDIT_FAILED", record
    assert nessie_client.get_reference("main").hash_ == main_before
    assert main_rows(lake, "e2e.audited") == good
    assert branch_exists(nessie_client, record.branch)
    on_branch = sorted(
        tuple(r)
        for r in lake.sql(
            f"SELECT order_id, amount FROM lake.e2e.`audited@{record.branch}`"
        ).collect()
    )
    assert on_branch == sorted(good + bad, key=lambda r: r[0])
    [message] = slack.messages
    text = json.dumps(message)
    assert "amount_positive" in text and record.branch in text
    # -1.0 and -7.5 break the range; the null is the not_null check's single violation.
    assert "amount_positive" in text and "Violations: *2*" in text
    assert "amount_present" in text and "Violations: *1*" in text
    # The same two runs as OpenLineage events: every check's result, the outcome (issue 29).
    check_runs_of_a_passing_and_a_failing_file(
        stack,
        receiver,
        good=published,
        good_version=good_put["version_id"],
        bad=record,
        bad_version=bad_put["version_id"],
    )
    assert waits == []  # the receiver answered every event the first time


def test_a_burst_of_30_files_while_another_table_is_busy_takes_at_most_3_runs(make_stack, lake):
    intervals: dict[str, list[tuple[float, float]]] = {"e2e_q.orders": [], "e2e_r.orders": []}
    real = spark_job(lake)

    def timed_job(argv: list[str]):
        begin = time.monotonic()
        try:
            return real(argv)
        finally:
            intervals[argv[argv.index("--table") + 1]].append((begin, time.monotonic()))

    stack = make_stack(job=timed_job, emr_workers=2)  # the executor could overlap anything
    burst = {
        f"e2e_q/orders/part-{i:02d}.parquet": [(10 * i + j, float(j)) for j in range(3)]
        for i in range(30)
    }
    other = {f"e2e_r/orders/part-{i}.parquet": [(100 + i, 1.0)] for i in range(2)}
    for key, rows in {**other, **burst}.items():
        stack.drop_file(key, parquet(rows))
    records = [wait_for_key(stack, key, timeout=600) for key in {**burst, **other}]
    stack.wait_idle(timeout=600)

    assert [r.status for r in records] == ["PUBLISHED"] * 32, stack.describe()
    batches = stack.ledger().list_batches()
    assert all(b.status == "PUBLISHED" and b.attempts == 1 for b in batches)  # no rebase
    assert all((r.attempts or 0) <= 1 for r in records)
    # Main holds the union of the rows, each exactly once.
    assert main_rows(lake, "e2e_q.orders") == sorted(r for rows in burst.values() for r in rows)
    assert main_rows(lake, "e2e_r.orders") == sorted(r for rows in other.values() for r in rows)
    q_runs = sorted(intervals["e2e_q.orders"])
    assert len(q_runs) <= 3, q_runs
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(q_runs)), q_runs  # one at a time
    assert any(q0 < r1 and r0 < q1 for q0, q1 in q_runs for r0, r1 in intervals["e2e_r.orders"]), (
        "the two tables never ran at the same time"
    )


def test_corrupt_and_disguised_files_are_rejected(e2e_stack, slack, lake):
    stack = e2e_stack()
    good = parquet([(1, 1.0), (2, 2.0)])
    corrupt = good[:4] + b"\x00garbage\x00" * 20 + good[-8:]  # parquet magic, broken body
    stack.drop_file("e2e/bad/corrupt.parquet", corrupt)
    stack.drop_file("e2e/bad/disguised.parquet", b"order_id,amount\n1,2.0\n")
    first = wait_for_key(stack, "e2e/bad/corrupt.parquet", timeout=300)
    stack.wait_idle(timeout=300)
    second = record_for_key(stack, "e2e/bad/disguised.parquet")

    assert first.status == "REJECTED" and first.error, first
    assert second.status == "REJECTED" and "PAR1" in second.error
    assert len(slack.messages) == 2
    s3 = stack.client("s3")
    assert (
        s3.get_object(Bucket=stack.settings.source_bucket, Key="e2e/bad/corrupt.parquet")[
            "Body"
        ].read()
        == corrupt
    )


def test_a_mixed_burst_ends_with_exact_outcomes_per_file(make_stack, lake, slack, tmp_path):
    import threading

    gate, runs = threading.Event(), []

    def gated(argv: list[str]):
        runs.append([a for i, a in enumerate(argv[1:]) if argv[i] == "--source"])
        assert gate.wait(120)
        return real(argv)

    real = spark_job(lake)
    (tmp_path / "e2e_m.orders.yaml").write_text(AUDITED_CONFIG)
    stack = make_stack(job=gated, tables_dir=tmp_path, poll_interval_seconds=1)
    first = {"e2e_m/orders/first.parquet": [(1, 1.0)]}
    stack.drop_file("e2e_m/orders/first.parquet", parquet([(1, 1.0)]))
    while not runs:
        time.sleep(0.05)
    good = {
        f"e2e_m/orders/good-{i}.parquet": [(10 * (i + 1) + j, 1.0) for j in range(3)]
        for i in range(3)
    }
    valid = parquet([(90, 1.0)])
    text = pa.table({"order_id": pa.array([91], pa.int64()), "amount": pa.array(["1.0"])})
    buffer = io.BytesIO()
    pq.write_table(text, buffer)
    bad = {
        "e2e_m/orders/corrupt.parquet": valid[:4] + b"\x00garbage\x00" * 20 + valid[-8:],
        "e2e_m/orders/retyped.parquet": buffer.getvalue(),
        "e2e_m/orders/negative.parquet": parquet([(92, -1.0), (93, 2.0)]),
    }
    for key, rows in good.items():
        stack.drop_file(key, parquet(rows))
    for key, body in bad.items():
        stack.drop_file(key, body)
    wait_until(
        stack, lambda: len(stack.ledger().get_lock("e2e_m.orders").queue), lambda n: n >= 6, 600
    )
    gate.set()
    records = {
        key.rsplit("/", 1)[-1]: wait_for_key(stack, key, timeout=600)
        for key in [*first, *good, *bad]
    }
    stack.wait_idle(timeout=600)

    assert {name: r.status for name, r in records.items()} == {
        "first.parquet": "PUBLISHED",
        "good-0.parquet": "PUBLISHED",
        "good-1.parquet": "PUBLISHED",
        "good-2.parquet": "PUBLISHED",
        "corrupt.parquet": "REJECTED",
        "retyped.parquet": "REJECTED",
        "negative.parquet": "AUDIT_FAILED",
    }, stack.describe()
    assert "'amount' is string in the file but double" in records["retyped.parquet"].error
    # The first; the six; the three good ones together; the failing one alone.
    assert [len(sources) for sources in runs] == [1, 6, 3, 1]
    assert main_rows(lake, "e2e_m.orders") == sorted(
        [(1, 1.0)] + [r for rows in good.values() for r in rows]
    )
    negative = records["negative.parquet"]
    on_branch = sorted(
        tuple(r)
        for r in lake.sql(
            f"SELECT order_id, amount FROM lake.e2e_m.`orders@{negative.branch}`"
        ).collect()
    )
    assert on_branch == sorted(
        [(1, 1.0)] + [r for rows in good.values() for r in rows] + [(92, -1.0), (93, 2.0)]
    )  # main's rows, plus its own only
    alerted = json.dumps(slack.messages)
    assert len(slack.messages) == 3  # each bad file its own alert
    assert all(
        name in alerted for name in ("corrupt.parquet", "retyped.parquet", "negative.parquet")
    )


def test_a_dataset_publishes_all_its_parts_or_none(e2e_stack, lake, nessie_client, tmp_path):
    (tmp_path / "e2e_d.orders.yaml").write_text(AUDITED_CONFIG + "arrival: marker\n")
    stack = e2e_stack()
    clean = {
        f"e2e_d/orders/run-1/part-{i:05d}.parquet": [(10 * i + j, 1.0) for j in range(2)]
        for i in range(5)
    }
    dirty = {
        f"e2e_d/orders/run-2/part-{i:05d}.parquet": [(100 + i, -1.0 if i == 3 else 1.0)]
        for i in range(5)
    }
    for key, rows in {**clean, **dirty}.items():
        stack.drop_file(key, parquet(rows))
    stack.drop_file("e2e_d/orders/run-1/_SUCCESS", b"")
    assert {wait_for_key(stack, key, timeout=600).status for key in clean} == {"PUBLISHED"}
    published = main_rows(lake, "e2e_d.orders")
    assert published == sorted(r for rows in clean.values() for r in rows)  # all at once

    stack.drop_file("e2e_d/orders/run-2/_SUCCESS", b"")
    records = [wait_for_key(stack, key, timeout=600) for key in dirty]
    stack.wait_idle(timeout=600)
    assert {r.status for r in records} == {"AUDIT_FAILED"}
    assert main_rows(lake, "e2e_d.orders") == published  # none of run-2
    branches = {
        r.branch for r in stack.ledger().list_batches() if r.dataset == "e2e_d/orders/run-2/"
    }
    assert len(branches) == 1 and branch_exists(nessie_client, branches.pop())


def test_snapshots_name_the_uploaded_object_versions_alone_and_in_a_batch(make_stack, lake):
    """`wap.source` names what was uploaded (bucket, key, version), not the staged copy the
    job was given nor the local file the EMR double handed it."""
    gated = GatedJob(spark_job(lake))
    gate, runs = gated.gate, gated.runs
    stack = make_stack(job=gated, poll_interval_seconds=1)
    bucket = stack.settings.source_bucket
    key = "e2e_v/orders/2026-11-22 orders.parquet"
    first = stack.drop_file(key, parquet([(1, 1.0)]))
    while not runs:
        time.sleep(0.05)
    # While the first runs: the same key uploaded again (a new version), and another file.
    again = stack.drop_file(key, parquet([(2, 2.0)]))
    other = stack.drop_file("e2e_v/orders/other.parquet", parquet([(3, 3.0)]))
    wait_until(
        stack, lambda: len(stack.ledger().get_lock("e2e_v.orders").queue), lambda n: n >= 2, 600
    )
    gate.set()
    stack.wait_idle(timeout=600)
    assert len(runs) == 2, stack.describe()  # the first alone, then the other two together
    assert main_rows(lake, "e2e_v.orders") == [(1, 1.0), (2, 2.0), (3, 3.0)]

    sources = [
        r.summary["wap.source"]
        for r in lake.sql(
            "SELECT summary FROM lake.e2e_v.orders.snapshots ORDER BY committed_at"
        ).collect()
    ]

    def uploaded(dropped: dict) -> str:
        assert dropped["version_id"]
        return f"s3://{bucket}/{dropped['key']}?versionId={dropped['version_id']}"

    assert sources[0] == uploaded(first)
    assert sorted(sources[1].split(",")) == sorted([uploaded(again), uploaded(other)])
    assert len(sources) == 2


def test_a_burst_of_parquet_and_csv_publishes_each_good_file_and_fails_the_bad_csv_alone(
    make_stack, lake, tmp_path
):
    """Issue 26: formats mix in one batch; a CSV with unparsable lines fails on its own."""
    (tmp_path / "e2e_mix.orders.yaml").write_text(
        "schema:\n  - {name: order_id, type: bigint}\n  - {name: amount, type: double}\n"
    )
    gated = GatedJob(spark_job(lake))
    gate, runs = gated.gate, gated.runs
    stack = make_stack(job=gated, tables_dir=tmp_path, poll_interval_seconds=1)
    stack.drop_file("e2e_mix/orders/first.parquet", parquet([(1, 1.0)]))
    while not runs:
        time.sleep(0.05)
    stack.drop_file("e2e_mix/orders/more.parquet", parquet([(2, 2.0)]))
    stack.drop_file("e2e_mix/orders/good.csv", b"order_id,amount\n3,3.0\n4,4.0\n")
    stack.drop_file("e2e_mix/orders/bad.csv", b"order_id,amount\n5,5.0\n6,six\n")
    wait_until(
        stack, lambda: len(stack.ledger().get_lock("e2e_mix.orders").queue), lambda n: n >= 3, 600
    )
    gate.set()
    stack.wait_idle(timeout=600)

    status = {
        key.rsplit("/", 1)[-1]: record_for_key(stack, key).status
        for key in (
            "e2e_mix/orders/first.parquet",
            "e2e_mix/orders/more.parquet",
            "e2e_mix/orders/good.csv",
            "e2e_mix/orders/bad.csv",
        )
    }
    assert status == {
        "first.parquet": "PUBLISHED",
        "more.parquet": "PUBLISHED",
        "good.csv": "PUBLISHED",
        "bad.csv": "AUDIT_FAILED",
    }, stack.describe()
    assert main_rows(lake, "e2e_mix.orders") == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)]
    assert "parse_errors" in record_for_key(stack, "e2e_mix/orders/bad.csv").error
