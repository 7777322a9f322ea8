"""The sweeper: stuck table locks are recovered, old failed branches are discarded."""

from __future__ import annotations

import io
import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from ingestion import metrics
from ingestion.lineage import run_id
from tests.fixtures.local_stack import (
    branch_exists,
    drop_dataset,
    fake_parquet,
    record_for_key,
    trigger_while_nessie_is_down,
    upload_with_notification,
    wait_for_batch,
    wait_for_key,
    wait_for_status,
)


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _wait_status(stack, key: str, status: str, timeout: float = 30) -> None:
    wait_for_status(stack, key, status, timeout)


def test_lock_of_a_dead_execution_is_recovered_and_the_queue_moves_on(
    make_stack, slack, receiver, monkeypatch
):
    emitted = io.StringIO()  # the functions' embedded metrics (their log)
    monkeypatch.setattr(metrics, "_log_stream", lambda: emitted)
    stack = make_stack(lineage_url=receiver.url)
    stack.emr.inject_hang(match="/first.parquet")
    stack.drop_file("stuck/orders/first.parquet", fake_parquet("s1"))
    _wait_status(stack, "stuck/orders/first.parquet", "RUNNING")
    stack.drop_file("stuck/orders/second.parquet", fake_parquet("s2"))
    _wait_status(stack, "stuck/orders/second.parquet", "QUEUED")
    first = record_for_key(stack, "stuck/orders/first.parquet")
    # Someone stops the execution by hand: Finish never runs, the table stays locked.
    stack.client("stepfunctions").stop_execution(executionArn=first.execution_arn)
    time.sleep(1.5)
    assert stack.ledger().get_lock("stuck.orders").active == first.ingest_id

    swept = stack.invoke("sweeper", {"source": "aws.events", "detail-type": "Scheduled Event"})

    assert swept["recovered_locks"] == ["stuck.orders"]
    first = stack.ledger().get_ingest(first.ingest_id)
    assert first.status == "JOB_FAILED" and "ABORTED" in first.error
    second = wait_for_key(stack, "stuck/orders/second.parquet")
    assert second.status == "PUBLISHED"
    stack.wait_idle()
    orphan = stack.client("emr-serverless").get_job_run(
        applicationId=stack.application_id, jobRunId=first.job_run_id
    )["jobRun"]
    assert orphan["state"] == "CANCELLED"
    assert any("ABORTED" in str(m) for m in slack.messages)
    # The outcome the sweeper recorded counts for the JobFailed alarm, and ends the run's
    # OpenLineage events (issue 29).
    documents = [json.loads(line) for line in emitted.getvalue().splitlines()]
    assert [d["Table"] for d in documents if d.get("JobFailed")] == ["stuck.orders"]
    [start, fail] = receiver.events_of(run_id(first.ingest_id))
    assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
    assert fail["run"]["facets"]["wap_ingest"]["status"] == "JOB_FAILED"
    assert "ABORTED" in fail["run"]["facets"]["errorMessage"]["message"]


def test_an_interrupted_start_is_restarted_once_it_is_stale(make_stack, monkeypatch):
    stack = make_stack()
    stack.client("events").disable_rule(Name="wap-source-object-created")
    key = "restart/orders/x.parquet"
    event = upload_with_notification(stack, key, fake_parquet("r"))
    trigger_while_nessie_is_down(stack, event, monkeypatch)

    assert stack.invoke("sweeper", {})["restarted"] == []  # too recent: maybe still retried
    ledger = stack.ledger()
    lock = ledger.get_lock("restart.orders")
    # Age the lock past the grace period (as if 20 minutes had passed).
    ledger._mutate_lock(
        "restart.orders",
        lambda lk: (
            setattr(lk, "active_since", _iso(datetime.now(UTC) - timedelta(minutes=20))) or True
        ),
    )
    assert stack.invoke("sweeper", {})["restarted"] == [lock.active]
    assert wait_for_key(stack, key).status == "PUBLISHED"
    stack.wait_idle()


def test_failed_branches_past_retention_are_discarded(make_stack, nessie_client):
    stack = make_stack()
    assert stack.env["WAP_BRANCH_RETENTION_DAYS"] == "14"  # the template's
    stack.drop_file("retain/orders/fail-old.parquet", fake_parquet("o"))
    stack.drop_file("retain/orders/fail-new.parquet", fake_parquet("n"))
    old = wait_for_key(stack, "retain/orders/fail-old.parquet")
    new = wait_for_key(stack, "retain/orders/fail-new.parquet")
    stack.wait_idle()
    assert branch_exists(nessie_client, old.branch) and branch_exists(nessie_client, new.branch)
    stack.ledger().update_ingest(
        old.ingest_id, {"finished_at": _iso(datetime.now(UTC) - timedelta(days=15))}
    )

    swept = stack.invoke("sweeper", {})

    assert swept["discarded_branches"] == [old.branch]
    assert not branch_exists(nessie_client, old.branch)
    assert branch_exists(nessie_client, new.branch)
    record = stack.ledger().get_ingest(old.ingest_id)
    assert record.status == "DISCARDED" and record.previous_status == "AUDIT_FAILED"
    assert record.branch_deleted_at
    assert stack.ledger().get_ingest(new.ingest_id).status == "AUDIT_FAILED"
    assert stack.invoke("sweeper", {})["discarded_branches"] == []  # idempotent


def test_the_sweep_reports_each_tables_queue_as_cloudwatch_metrics(make_stack, capsys):
    stack = make_stack()
    stack.emr.inject_hang(match="/first.parquet")
    stack.drop_file("backlog/orders/first.parquet", fake_parquet("b1"))
    _wait_status(stack, "backlog/orders/first.parquet", "RUNNING")
    for name in ("second", "third"):
        stack.drop_file(f"backlog/orders/{name}.parquet", fake_parquet(name))
        _wait_status(stack, f"backlog/orders/{name}.parquet", "QUEUED")
    capsys.readouterr()

    swept = stack.invoke("sweeper", {"source": "aws.events", "detail-type": "Scheduled Event"})

    [queue] = swept["queues"]
    assert queue["table"] == "backlog.orders" and queue["depth"] == 2
    assert 0 <= queue["oldest_age_seconds"] < 60
    emitted = [
        json.loads(line)
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("{") and '"_aws"' in line
    ]
    by_name = {}
    for blob in emitted:
        [directive] = blob["_aws"]["CloudWatchMetrics"]
        # The namespace comes from the function's environment in the synthesized template.
        assert directive["Namespace"] == "WAP/Ingest"
        by_name[directive["Metrics"][0]["Name"]] = (blob, directive["Dimensions"])
    depth, dimensions = by_name["QueueDepth"]
    assert depth["QueueDepth"] in (2, [2]) and depth["Table"] == "backlog.orders"
    assert dimensions == [["Table", "service"]]  # Powertools adds the function's service
    oldest, dimensions = by_name["OldestQueuedAgeSeconds"]
    value = oldest["OldestQueuedAgeSeconds"]
    assert (value[0] if isinstance(value, list) else value) == pytest.approx(
        queue["oldest_age_seconds"]
    )
    # One value over all tables, what the alarm watches (it names the same service).
    assert dimensions == [["service"]] and oldest["service"] == "wap-ingest-sweeper"
    first = record_for_key(stack, "backlog/orders/first.parquet")
    stack.client("stepfunctions").stop_execution(executionArn=first.execution_arn)


def test_a_running_compaction_keeps_its_table_until_its_lease_ends(make_stack):
    """`wap maintain` holds the table without an execution: the sweeper leaves it be while
    its lease lasts, and frees the table after."""
    stack = make_stack()
    ledger = stack.ledger()
    ledger.create_ingest(
        "0000000000000c0c",
        {"table": "kept.orders", "status": "RECEIVED", "source_uri": "maintenance:compaction"},
    )
    assert ledger.acquire_or_enqueue("kept.orders", "0000000000000c0c") == "ACTIVE"
    ledger.update_ingest("0000000000000c0c", {"status": "RUNNING"})
    event = {"source": "aws.events", "detail-type": "Scheduled Event"}

    assert stack.invoke("sweeper", event)["recovered_locks"] == []
    assert ledger.get_lock("kept.orders").active == "0000000000000c0c"

    ledger._mutate_lock(
        "kept.orders",
        lambda lock: (
            setattr(lock, "lease_expires_at", _iso(datetime.now(UTC) - timedelta(minutes=1)))
            or True
        ),
    )
    assert stack.invoke("sweeper", event)["recovered_locks"] == ["kept.orders"]
    assert ledger.get_ingest("0000000000000c0c").status == "JOB_FAILED"


def test_a_dataset_queued_behind_a_live_ingest_is_left_alone_until_it_is_stuck(
    make_stack, tmp_path
):
    """A dataset holds sw.a and waits QUEUED at sw.b behind a running single ingest: not
    stuck, so no sweep restarts (or counts) it, however long it waits. Once sw.b's queue
    no longer lists it, or its holder is gone, the sweeper takes it on again."""
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "sweepy.yaml").write_text("tables: [sw.a, sw.b]\n")
    stack = make_stack(tables_dir=tmp_path)
    stack.emr.inject_hang(match="/single.parquet")
    stack.drop_file("sw/b/single.parquet", fake_parquet("single"))
    single = wait_for_status(stack, "sw/b/single.parquet", "RUNNING")
    key = drop_dataset(stack, "sweepy", "d1", {"sw.a": ["f.parquet"], "sw.b": ["f.parquet"]})
    dataset = wait_for_batch(stack, key, "QUEUED", timeout=30)
    assert dataset.dataset_name == "sweepy"
    ledger = stack.ledger()
    assert dataset.field_value("waiting_for") == "sw.b"
    assert ledger.get_lock("sw.a").active == dataset.ingest_id
    assert ledger.get_lock("sw.b").queue == [dataset.ingest_id]
    ledger._mutate_lock(
        "sw.a",
        lambda lock: (
            setattr(  # as if it had waited 20 minutes
                lock, "active_since", _iso(datetime.now(UTC) - timedelta(minutes=20))
            )
            or True
        ),
    )
    event = {"source": "aws.events", "detail-type": "Scheduled Event"}

    for _ in range(2):  # every pass: nothing restarted, nothing changed
        swept = stack.invoke("sweeper", event)
        assert swept["restarted"] == [] and swept["recovered_locks"] == [], swept
        assert ledger.get_ingest(dataset.ingest_id).status == "QUEUED"
        assert ledger.get_lock("sw.b").queue == [dataset.ingest_id]

    # Stuck: sw.b's queue lost it (its release would never hand it the table).
    ledger._mutate_lock("sw.b", lambda lock: lock.queue.clear() or True)
    swept = stack.invoke("sweeper", event)
    assert swept["restarted"] == [dataset.ingest_id]
    assert ledger.get_lock("sw.b").queue == [dataset.ingest_id]  # queued there again

    # The holder is gone (its execution stopped by hand): sw.b is freed and handed on.
    stack.client("stepfunctions").stop_execution(executionArn=single.execution_arn)
    time.sleep(1.5)
    swept = stack.invoke("sweeper", event)
    assert swept["recovered_locks"] == ["sw.b"], swept
    deadline = time.monotonic() + 60
    while not (done := ledger.get_ingest(dataset.ingest_id)).is_terminal:
        assert time.monotonic() < deadline, stack.describe()
        time.sleep(0.1)
    assert done.status == "PUBLISHED", stack.describe()
    stack.wait_idle()


def test_a_late_table_is_alerted_once_and_once_when_a_drop_is_published(
    make_stack, slack, tmp_path, monkeypatch
):
    """Issue 42, through the synthesized sweeper (its IAM enforced): a table whose config
    expects a daily drop and has none alerts once, counts in `LateTables`, and is alerted
    once more when a drop is published."""
    emitted = io.StringIO()
    monkeypatch.setattr(metrics, "_log_stream", lambda: emitted)
    (tmp_path / "late.orders.yaml").write_text("expect:\n  every: 1d\n")
    stack = make_stack(tables_dir=tmp_path)

    def late_alerts() -> list[str]:
        return [str(m) for m in slack.messages if "late.orders" in str(m)]

    swept = [stack.invoke("sweeper", {}) for _ in range(2)]

    [alert] = late_alerts()
    assert "late.orders: nothing published on record; expected daily UTC" in alert
    [row] = swept[1]["arrivals"]
    assert row["subject"] == "late.orders" and row["late"] and row["late_alerted_at"]
    documents = [json.loads(line) for line in emitted.getvalue().splitlines()]
    assert [d["LateTables"] for d in documents if "LateTables" in d] == [1, 1]

    stack.drop_file("late/orders/today.parquet", fake_parquet("t"))
    assert wait_for_key(stack, "late/orders/today.parquet").status == "PUBLISHED"
    stack.wait_idle()
    for _ in range(2):
        [row] = stack.invoke("sweeper", {})["arrivals"]

    assert not row["late"] and row["last_published_at"]
    [_, recovered] = late_alerts()
    assert "late.orders: published again at" in recovered
