"""Batches (docs/batches.md): files queued behind a busy table run as one batch, and each
file still ends with its own outcome. The stand-in job judges each source by its name
(`fail` fails a check, `reject` cannot be read); the real job's per-source verdicts are
tested in tests/spark_jobs and end to end in test_end_to_end.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ingestion.ledger.records import Record
from tests.fixtures.local_stack import (
    fake_parquet,
    record_for_key,
    wait_for_key,
    wait_for_status,
    wait_until,
)
from tests.fixtures.standin_job import standin_job

TABLE = "bt.orders"


def gated_job(
    api_v1: str, calls: list[dict[str, Any]], gate: threading.Event, crash_batches: int = 0
) -> Callable[[list[str]], dict[str, Any]]:
    """The stand-in job, whose runs wait for `gate` (so files queue behind the first), and
    whose first `crash_batches` runs over several sources crash (EMR reports FAILED)."""
    inner = standin_job(api_v1, calls)
    crashes = [crash_batches]

    def job(argv: list[str]) -> dict[str, Any]:
        assert gate.wait(60), "the test never opened the gate"
        if argv.count("--source") > 1 and crashes[0] > 0:
            crashes[0] -= 1
            raise RuntimeError("executor lost (injected)")
        return inner(argv)

    return job


def queue_depth(stack, table: str = TABLE) -> int:
    return len(stack.ledger().get_lock(table).queue)


def burst(
    stack, keys: list[str], gate: threading.Event, *, in_order: bool = False
) -> list[dict[str, Any]]:
    """Drop `keys`: the first runs (held at the gate) while the rest queue; then go.

    S3 events, like S3's, reach the trigger in no fixed order; `in_order` waits for each
    file to be queued before dropping the next, for tests whose runs depend on the order.
    """
    dropped = [stack.drop_file(keys[0], fake_parquet(keys[0]))]
    wait_for_status(stack, keys[0], "RUNNING", timeout=60)
    for queued, key in enumerate(keys[1:], start=1):
        dropped.append(stack.drop_file(key, fake_parquet(key)))
        if in_order:
            wait_until(stack, lambda: queue_depth(stack), lambda n, q=queued: n >= q, poll=0.02)
    wait_until(stack, lambda: queue_depth(stack), lambda n: n >= len(keys) - 1, poll=0.1)
    gate.set()
    return dropped


def settle_burst(
    stack, keys: list[str], gate: threading.Event, *, in_order: bool = False
) -> list[Record]:
    """`burst` the keys, then each one's record once it reached its outcome, in the order
    of `keys`, after the stack has gone idle (alerts sent, locks released)."""
    burst(stack, keys, gate, in_order=in_order)
    records = [wait_for_key(stack, key) for key in keys]
    stack.wait_idle()
    return records


def run_sources(calls: list[dict[str, Any]]) -> list[list[str]]:
    """The sources of each job run, by file name (sorted), in run order."""
    return [sorted(uri.rsplit("/", 1)[-1] for uri in call["sources"]) for call in calls]


@pytest.fixture
def batch_stack(make_stack, nessie, tmp_path):
    def make(config: str | None = None, **overrides):
        if config is not None:
            (tmp_path / f"{TABLE}.yaml").write_text(config)
        calls: list[dict[str, Any]] = []
        gate = threading.Event()
        crash = overrides.pop("crash_batches", 0)
        stack = make_stack(
            job=gated_job(nessie.api_v1, calls, gate, crash), tables_dir=tmp_path, **overrides
        )
        return stack, calls, gate

    return make


def test_a_burst_queued_behind_a_run_is_one_batch_and_every_file_is_published(batch_stack):
    stack, calls, gate = batch_stack()
    keys = [f"bt/orders/part-{i:02d}.parquet" for i in range(12)]
    records = settle_burst(stack, keys, gate)

    assert [r.status for r in records] == ["PUBLISHED"] * 12, stack.describe()
    assert run_sources(calls) == [
        ["part-00.parquet"],
        [f"part-{i:02d}.parquet" for i in range(1, 12)],
    ]
    [batch] = stack.ledger().list_batches()
    assert batch.status == "PUBLISHED" and batch.files == 11
    assert sorted(batch.members) == sorted(r.ingest_id for r in records[1:])
    assert {r.batch_id for r in records[1:]} == {batch.ingest_id}
    assert all(r.snapshot_id == batch.snapshot_id for r in records[1:])
    assert records[0].batch_id is None  # the first ran alone, as before


@pytest.mark.parametrize(
    ("config", "name", "run_sizes"),
    [
        # max_files 1: one file at a time, no batch at all.
        pytest.param("batch: {max_files: 1}\n", "one", [1, 1, 1, 1], id="max_files_1"),
        # fake_parquet(key) is 4 + 4 * len(key) + 4 bytes: 108 for these keys.
        pytest.param(
            "batch: {max_files: 3, max_bytes: 250}\n", "size", [1, 2, 2, 1], id="max_bytes"
        ),
    ],
)
def test_a_batch_stops_at_max_files_and_max_bytes(batch_stack, config, name, run_sizes):
    stack, calls, gate = batch_stack(config)
    keys = [f"bt/orders/{name}-{i}.parquet" for i in range(sum(run_sizes))]
    burst(stack, keys, gate)
    assert [wait_for_key(stack, key).status for key in keys] == ["PUBLISHED"] * len(keys)
    assert [len(sources) for sources in run_sources(calls)] == run_sizes
    assert len(stack.ledger().list_batches()) == sum(1 for size in run_sizes if size > 1)


def test_a_mixed_burst_publishes_the_good_files_and_fails_each_bad_one_alone(batch_stack, slack):
    stack, calls, gate = batch_stack()
    names = ["first", "a-ok", "b-fail", "c-reject", "d-ok", "e-fail"]
    keys = [f"bt/orders/{name}.parquet" for name in names]
    # The halves are halves of the queue's order.
    records = dict(zip(names, settle_burst(stack, keys, gate, in_order=True), strict=True))

    assert {name: r.status for name, r in records.items()} == {
        "first": "PUBLISHED",
        "a-ok": "PUBLISHED",
        "b-fail": "AUDIT_FAILED",
        "c-reject": "REJECTED",
        "d-ok": "PUBLISHED",
        "e-fail": "AUDIT_FAILED",
    }
    # The first alone; the batch of five; the good two again; each failing file alone.
    runs = run_sources(calls)
    assert runs[:3] == [
        ["first.parquet"],
        ["a-ok.parquet", "b-fail.parquet", "c-reject.parquet", "d-ok.parquet", "e-fail.parquet"],
        ["a-ok.parquet", "d-ok.parquet"],
    ]
    assert sorted(runs[3:]) == [["b-fail.parquet"], ["e-fail.parquet"]]
    # created_at has a clock's resolution: two batches of one second tie, so go by status.
    batches = {b.status: b for b in stack.ledger().list_batches()}
    assert sorted(batches) == ["PUBLISHED", "SPLIT"]
    split, published = batches["SPLIT"], batches["PUBLISHED"]
    assert "AUDIT_FAILED" in split.error
    assert sorted(published.members) == sorted(
        [records["a-ok"].ingest_id, records["d-ok"].ingest_id]
    )
    # Each failing file has its own branch, holding its own run, and its own alert.
    assert records["b-fail"].branch != records["e-fail"].branch
    assert records["b-fail"].batch_id is None
    assert "corrupt parquet file" in records["c-reject"].error
    alerted = sorted(
        text
        for message in slack.messages
        for text in [str(message)]
        if "fail.parquet" in text or "reject" in text
    )
    assert len(slack.messages) == 3, slack.messages
    assert len(alerted) == 3


def test_a_batch_that_fails_with_no_file_to_blame_runs_its_halves_apart(batch_stack, slack):
    # Two files share a key: the batch fails, yet each file passes on its own. Running
    # every file alone would cost a run per file; the halves find the pair in two.
    stack, calls, gate = batch_stack()
    names = ["first", "a", "twin-1", "b", "c", "d", "twin-2", "e"]
    keys = [f"bt/orders/{name}.parquet" for name in names]
    # The halves are halves of the queue's order.
    records = settle_burst(stack, keys, gate, in_order=True)

    assert [r.status for r in records] == ["PUBLISHED"] * 8, stack.describe()
    assert (
        run_sources(calls)
        == [  # each run's files, sorted by name
            ["first.parquet"],
            sorted(f"{name}.parquet" for name in names[1:]),
            ["a.parquet", "b.parquet", "c.parquet", "twin-1.parquet"],  # the first half
            ["d.parquet", "e.parquet", "twin-2.parquet"],
        ]
    )
    assert slack.messages == []


def test_a_batch_whose_job_crashes_is_retried_as_one_batch(batch_stack):
    stack, calls, gate = batch_stack(crash_batches=1, state_retry_scale=0)
    keys = [f"bt/orders/crash-{i}.parquet" for i in range(4)]
    burst(stack, keys, gate)
    records = [wait_for_key(stack, key) for key in keys]
    assert [r.status for r in records] == ["PUBLISHED"] * 4, stack.describe()
    # The crashed run left no report; the retry took the same three sources.
    assert run_sources(calls) == [
        ["crash-0.parquet"],
        ["crash-1.parquet", "crash-2.parquet", "crash-3.parquet"],
    ]
    [batch] = stack.ledger().list_batches()
    assert batch.job_tries == 2


def test_a_duplicate_delivery_of_a_batched_file_appends_it_once(batch_stack):
    stack, calls, gate = batch_stack()
    keys = [f"bt/orders/dup-{i}.parquet" for i in range(3)]
    dropped = burst(stack, keys, gate)
    # While the batch runs, and again after, S3 delivers dup-1's event once more.
    wait_for_status(stack, keys[1], "RUNNING", timeout=300)
    redeliver(stack, dropped[1])
    records = [wait_for_key(stack, key) for key in keys]
    redeliver(stack, dropped[1])
    stack.wait_idle()
    assert [r.status for r in records] == ["PUBLISHED"] * 3
    assert sum(sources.count("dup-1.parquet") for sources in run_sources(calls)) == 1
    assert len(stack.ledger().list_ingests()) == 3


def redeliver(stack, dropped: dict[str, Any]) -> None:
    """The trigger invoked again with the same object version's event."""
    from tests.fixtures.local_stack import s3_notification

    size = len(fake_parquet(dropped["key"]))
    event = s3_notification(stack, dropped["key"], dropped["version_id"], size)
    event["Records"][0]["s3"]["object"]["eTag"] = dropped["etag"]
    stack.invoke("trigger", event)


def test_the_alert_of_a_file_rejected_in_a_batch_speaks_of_that_file_only(batch_stack, slack):
    stack, _calls, gate = batch_stack()
    names = ["first", "a-ok", "c-reject", "d-ok"]
    keys = [f"bt/orders/{name}.parquet" for name in names]
    records = dict(zip(names, settle_burst(stack, keys, gate), strict=True))

    assert records["c-reject"].status == "REJECTED"
    assert records["a-ok"].status == records["d-ok"].status == "PUBLISHED"
    [alert] = [str(message) for message in slack.messages]
    assert "c-reject.parquet" in alert and "corrupt parquet file" in alert
    # Not the batch's summary: its other files, its rows, its file counts.
    for batch_words in ("a-ok", "d-ok", "Rows written", "in this run", "files did not pass"):
        assert batch_words not in alert, (batch_words, alert)


def test_a_batch_rejected_with_no_verdict_runs_its_halves_not_each_file(make_stack, nessie):
    # A run stopped as a whole (no per-file verdict: e.g. rows that do not decode, found
    # only by the write) must not cost a run per file.
    calls: list[dict[str, Any]] = []
    gate = threading.Event()
    inner = gated_job(nessie.api_v1, calls, gate)

    def job(argv: list[str]) -> dict[str, Any]:
        report = inner(argv)
        if argv.count("--source") > 1 and "undecodable" in " ".join(argv):
            report = {
                **report,
                "sources": [],
                "outcome": "rejected",
                "checks": [],
                "branch_hash": None,
                "rows_written": 0,
                "reason": "the rows could not be written: page does not decode",
            }
            written = argv[argv.index("--report-uri") + 1].removeprefix("file://")
            Path(written).write_text(json.dumps(report))
        return report

    stack = make_stack(job=job)
    names = ["first", *[f"p{i}" for i in range(7)], "p-reject-undecodable"]
    keys = [f"bt/orders/{name}.parquet" for name in names]
    records = dict(zip(names, settle_burst(stack, keys, gate, in_order=True), strict=True))

    assert records.pop("p-reject-undecodable").status == "REJECTED"
    assert {r.status for r in records.values()} == {"PUBLISHED"}
    # first, the batch of 8, then halves: 4+4, 2+2, 1+1 at most: not 1 + 1 + 8 runs.
    assert len(calls) <= 2 + 2 * 3, run_sources(calls)


def test_each_load_records_its_cost_and_a_batchs_cost_is_split_across_its_files(batch_stack):
    # The whole path: the local EMR reports what each run used (GetJobRun), job_status
    # reads it, finish prices and records it, the batch's files get their share by bytes.
    from ingestion.time_split import time_split, upload_to_outcome_seconds

    stack, _calls, gate = batch_stack()
    keys = [f"bt/orders/cost-{i}.parquet" for i in range(3)]
    records = settle_burst(stack, keys, gate)
    records = [record_for_key(stack, key) for key in keys]  # as settled
    [batch] = stack.ledger().list_batches()

    alone, files = records[0], records[1:]
    assert alone.cost_usd > 0 and alone.vcpu_hours > 0, alone
    assert batch.cost_usd > 0 and batch.job_running_at is not None, batch
    assert sum(f.cost_usd for f in files) == pytest.approx(batch.cost_usd)
    sizes = [f.size for f in files]
    assert [f.cost_usd for f in files] == pytest.approx(
        [batch.cost_usd * size / sum(sizes) for size in sizes]
    )
    for record in records:
        assert record.uploaded_at is not None, record
        phases = time_split(record)
        assert [p.name for p in phases][-3:] == ["EMR start-up", "job", "to outcome"]
        assert sum(p.seconds for p in phases) == upload_to_outcome_seconds(record)
