"""The real state machine in moto's interpreter, real handlers, our Nessie server, the Slack
stand-in; the Spark job replaced by `standin_job` (commits to the branch, writes a report).
The end-to-end versions with the real Spark job are in test_end_to_end.py."""

from __future__ import annotations

import itertools
import json
import math
import threading
import time

import pytest

from ingestion.exceptions import NessieUnavailableError
from tests.fixtures.catalog_auth import harness_auth
from tests.fixtures.local_stack import (
    branch_exists,
    fake_parquet,
    record_for_key,
    table_on,
    trigger_while_nessie_is_down,
    upload_with_notification,
    wait_for_key,
    wait_for_status,
)
from tests.fixtures.standin_job import commit_table_on_branch, standin_job


def _publish_raises(stack, error: Exception, times: float = math.inf) -> None:
    """The publish handler raises `error` on its first `times` calls (on every call by
    default), then runs as usual."""
    left = [times]

    def intercept(handler):
        def wrapped(event, context):
            if left[0] > 0:
                left[0] -= 1
                raise error
            return handler(event, context)

        return wrapped

    stack.dispatcher.interceptors["publish"] = intercept


def test_clean_file_is_published(make_stack, nessie_client, slack):
    stack = make_stack()
    stack.drop_file("clean/orders/2026 11 22.parquet", fake_parquet("a"))
    record = wait_for_key(stack, "clean/orders/2026 11 22.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISHED", record
    main_table = table_on(nessie_client, "main", "clean.orders")
    assert main_table is not None
    assert main_table.metadata_location.endswith(f"/{record.ingest_id}.json")
    assert not branch_exists(nessie_client, record.branch)
    assert slack.messages == []
    assert stack.ledger().get_lock("clean.orders").active is None


def test_failed_audit_leaves_main_alone_and_alerts_once(make_stack, nessie_client, slack):
    stack = make_stack()
    main_before = nessie_client.get_reference("main").hash_
    stack.drop_file("audit/orders/fail-batch.parquet", fake_parquet("b"))
    record = wait_for_key(stack, "audit/orders/fail-batch.parquet")
    stack.wait_idle()

    assert record.status == "AUDIT_FAILED"
    assert "amount_positive" in record.error
    assert nessie_client.get_reference("main").hash_ == main_before
    assert table_on(nessie_client, "main", "audit.orders") is None
    assert branch_exists(nessie_client, record.branch)
    assert table_on(nessie_client, record.branch, "audit.orders") is not None
    [message] = slack.messages
    text = json.dumps(message)
    assert "amount_positive" in text and record.branch in text
    assert "Violations: *3*" in text


def test_duplicate_events_make_one_ingest(make_stack, nessie_client):
    stack = make_stack()
    key = "dupes/orders/batch 1.parquet"
    event = upload_with_notification(stack, key, fake_parquet("c"))
    # Twice concurrently, then 20 more deliveries (the EventBridge one came on upload).
    errors: list[BaseException] = []

    def invoke() -> None:
        try:
            stack.dispatcher.run_handler("trigger", event)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=invoke) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in range(20):
        stack.dispatcher.invoke_async("trigger", event)
    record = wait_for_key(stack, key)
    stack.wait_idle()

    assert errors == []
    assert record.status == "PUBLISHED"
    assert len(stack.ledger().list_ingests(table="dupes.orders")) == 1
    assert len(stack.emr.started_runs) == 1
    assert [e["name"] for e in stack.executions()] == [record.ingest_id]
    assert table_on(nessie_client, "main", "dupes.orders").metadata_location.endswith(
        f"/{record.ingest_id}.json"
    )


def test_one_table_runs_one_ingest_at_a_time_and_tables_run_in_parallel(
    nessie, make_stack, nessie_client
):
    # Different namespaces: two branches that both create one namespace conflict on merge.
    intervals: dict[str, list[tuple[float, float]]] = {"qa.orders": [], "qb.orders": []}
    lock = threading.Lock()
    inner = standin_job(nessie.api_v1)

    def slow_job(argv: list[str]):
        start = time.monotonic()
        time.sleep(0.8)
        result = inner(argv)
        with lock:
            intervals[argv[argv.index("--table") + 1]].append((start, time.monotonic()))
        return result

    stack = make_stack(job=slow_job, emr_workers=2)
    keys = [f"qa/orders/part-{i}.parquet" for i in range(5)] + [
        "qb/orders/part-0.parquet",
        "qb/orders/part-1.parquet",
    ]
    for i, key in enumerate(keys):
        stack.drop_file(key, fake_parquet(f"q{i}"))
    records = [wait_for_key(stack, key, timeout=120) for key in keys]
    stack.wait_idle()

    assert [r.status for r in records] == ["PUBLISHED"] * len(keys), stack.describe()
    a_runs = sorted(intervals["qa.orders"])
    # The first file runs alone at once; the others queue and run in one batch or more.
    assert 2 <= len(a_runs) <= 5
    assert all(prev[1] <= nxt[0] for prev, nxt in itertools.pairwise(a_runs))
    b_runs = intervals["qb.orders"]
    assert any(a0 < b1 and b0 < a1 for a0, a1 in a_runs for b0, b1 in b_runs), (
        "the two tables never ran at the same time"
    )
    # Main holds the last append of each table; every ingest merged without conflict.
    assert all((r.attempts or 0) <= 1 for r in records)
    assert all(b.attempts == 1 for b in stack.ledger().list_batches())
    assert stack.ledger().get_lock("qa.orders").active is None


def test_job_crash_ends_job_failed_with_reason_and_log(make_stack, slack):
    stack = make_stack()
    for _ in range(3):  # every try crashes
        stack.emr.inject_crash("executor lost: OutOfMemoryError")
    stack.drop_file("crash/orders/x.parquet", fake_parquet("d"))
    record = wait_for_key(stack, "crash/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "JOB_FAILED"
    assert "OutOfMemoryError" in record.error and "gave up after 3 tries" in record.error
    assert len(stack.emr.started_runs) == 3
    assert record.log_uri.startswith("s3://")
    bucket, prefix = record.log_uri[5:].split("/", 1)
    logs = stack.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
    assert logs["KeyCount"] >= 1
    [message] = slack.messages
    assert "OutOfMemoryError" in json.dumps(message)
    assert record.log_uri in json.dumps(message)
    assert stack.ledger().get_lock("crash.orders").active is None


def test_job_timeout_cancels_the_run_and_frees_the_table(make_stack, slack):
    stack = make_stack(job_timeout_seconds=3)
    stack.emr.inject_hang()
    stack.drop_file("hang/orders/x.parquet", fake_parquet("e"))
    record = wait_for_key(stack, "hang/orders/x.parquet", timeout=60)
    stack.wait_idle()

    assert record.status == "JOB_FAILED"
    assert "timed out" in record.error
    job = stack.client("emr-serverless").get_job_run(
        applicationId=stack.application_id, jobRunId=record.job_run_id
    )["jobRun"]
    assert job["state"] == "CANCELLED"
    assert len(slack.messages) == 1 and "timed out" in json.dumps(slack.messages[0])
    assert stack.ledger().get_lock("hang.orders").active is None


def test_nessie_down_fails_the_trigger_retryably_and_a_retry_ingests_once(
    make_stack, nessie_client, monkeypatch
):
    stack = make_stack()
    # Deliver the event by hand (not from the upload) to control when the trigger runs.
    stack.client("events").disable_rule(Name="wap-source-object-created")
    key = "outage/orders/x.parquet"
    event = upload_with_notification(stack, key, fake_parquet("f"))
    main_before = nessie_client.get_reference("main").hash_

    trigger_while_nessie_is_down(stack, event, monkeypatch)
    pending = record_for_key(stack, key)
    assert pending.status == "RECEIVED"
    assert stack.emr.started_runs == [] and stack.executions() == []
    assert nessie_client.get_reference("main").hash_ == main_before

    stack.dispatcher.run_handler("trigger", event)  # Lambda's retry
    stack.dispatcher.run_handler("trigger", event)  # and a late duplicate
    record = wait_for_key(stack, key)
    stack.wait_idle()

    assert record.status == "PUBLISHED"
    assert record.ingest_id == pending.ingest_id
    assert len(stack.emr.started_runs) == 1
    assert len(stack.executions()) == 1
    assert table_on(nessie_client, "main", "outage.orders").metadata_location.endswith(
        f"/{record.ingest_id}.json"
    )


def test_slack_errors_are_retried_and_never_change_the_outcome(make_stack, slack, monkeypatch):
    import functools

    from ingestion.alerting import slack as slack_client

    # The alert Lambda's backoff through the policy's injectable sleep: recorded, not slept.
    waits: list[float] = []
    monkeypatch.setattr(
        slack_client, "RetryPolicy", functools.partial(slack_client.RetryPolicy, sleep=waits.append)
    )
    stack = make_stack()
    slack.fail_next(2, "server_error", status=503)
    stack.drop_file("slack/orders/fail-1.parquet", fake_parquet("h"))
    first = wait_for_key(stack, "slack/orders/fail-1.parquet")
    stack.wait_idle()
    assert first.status == "AUDIT_FAILED"
    assert len(slack.messages) == 1
    assert slack.request_count("chat.postMessage") == 3
    # The policy's backoff: 0.5 * 2**attempt, plus slack-sdk's jitter of up to 1 s.
    assert len(waits) == 2 and 0.5 <= waits[0] < 1.5 and 1.0 <= waits[1] < 2.0, waits

    slack.fail_next(None, "server_error", status=500)  # Slack stays down
    stack.drop_file("slack/orders/fail-2.parquet", fake_parquet("i"))
    second = wait_for_key(stack, "slack/orders/fail-2.parquet")
    stack.wait_idle(timeout=120)
    slack.clear_failures()
    assert second.status == "AUDIT_FAILED"
    assert stack.ledger().get_ingest(second.ingest_id).status == "AUDIT_FAILED"
    assert len(slack.messages) == 1
    assert len(stack.dispatcher.calls("alert")) >= 2  # Step Functions retried the alert
    [execution] = [e for e in stack.executions() if e["name"] == second.ingest_id]
    assert execution["status"] == "SUCCEEDED"
    assert stack.ledger().get_lock("slack.orders").active is None


@pytest.mark.parametrize(
    ("key", "body", "fragment"),
    [
        ("reject/orders/renamed.parquet", b"id,amount\n1,2.5\n", "magic bytes PAR1"),
        ("reject/orders/empty.parquet", b"", "empty file (0 bytes)"),
        ("orders-without-table.parquet", b"PAR1xxxxPAR1", "cannot tell which table"),
        ("reject/Orders/x.parquet", b"PAR1xxxxPAR1", "not a valid identifier"),
        ("reject/orders/data.txt", b"id\n1\n", "unsupported file type 'data.txt'"),
    ],
)
def test_bad_input_is_rejected_with_a_reason_and_the_source_kept(
    make_stack, slack, key, body, fragment
):
    stack = make_stack()
    stack.drop_file(key, body)
    stack.wait_idle()
    record = record_for_key(stack, key)

    assert record is not None and record.status == "REJECTED"
    assert fragment in record.error
    [message] = slack.messages
    assert fragment in json.dumps(message)
    assert stack.emr.started_runs == []
    kept = stack.client("s3").get_object(Bucket=stack.settings.source_bucket, Key=key)
    assert kept["Body"].read() == body


def test_job_rejection_goes_through_the_state_machine(make_stack, slack, nessie_client):
    stack = make_stack()
    stack.drop_file("jobreject/orders/reject-me.parquet", fake_parquet("j"))
    record = wait_for_key(stack, "jobreject/orders/reject-me.parquet")
    stack.wait_idle()
    assert record.status == "REJECTED"
    assert "corrupt parquet" in record.error
    assert table_on(nessie_client, "main", "jobreject.orders") is None
    assert len(slack.messages) == 1
    # The job wrote nothing on its branch: none is left behind; the ledger keeps the name.
    names = {r.name for r in nessie_client.list_references().references}
    assert record.branch and record.branch not in names
    assert record.branch_deleted_at
    alerted = json.dumps(slack.messages)
    assert record.branch not in alerted and "wap publish" not in alerted


def test_outside_writer_on_main_forces_a_rebase(nessie, make_stack, nessie_client):
    inner = standin_job(nessie.api_v1)
    calls: list[str] = []

    def job_with_outside_writer(argv: list[str]):
        result = inner(argv)
        calls.append(argv[argv.index("--branch") + 1])
        if len(calls) == 1:  # someone else appends to the same table on main meanwhile
            commit_table_on_branch(
                nessie.api_v1, "rebase.orders", "main", "outside", auth=harness_auth(nessie)
            )
        return result

    stack = make_stack(job=job_with_outside_writer)
    stack.drop_file("rebase/orders/x.parquet", fake_parquet("k"))
    record = wait_for_key(stack, "rebase/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISHED", record
    assert record.attempts == 2
    assert len(calls) == 2 and calls[0] != calls[1]
    assert not branch_exists(nessie_client, calls[0])
    assert not branch_exists(nessie_client, calls[1])
    assert table_on(nessie_client, "main", "rebase.orders").metadata_location.endswith(
        f"/{record.ingest_id}.json"
    )


def test_rebase_gives_up_after_max_attempts(nessie, make_stack, nessie_client, slack):
    inner = standin_job(nessie.api_v1)

    def always_raced(argv: list[str]):
        result = inner(argv)
        commit_table_on_branch(
            nessie.api_v1,
            "raced.orders",
            "main",
            f"outside{time.time()}",
            auth=harness_auth(nessie),
        )
        return result

    stack = make_stack(job=always_raced, max_publish_attempts=2)
    stack.drop_file("raced/orders/x.parquet", fake_parquet("l"))
    record = wait_for_key(stack, "raced/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISH_FAILED"
    assert "gave up after 2 attempts" in record.error
    assert len(stack.emr.started_runs) == 2
    assert len(slack.messages) == 1
    assert stack.ledger().get_lock("raced.orders").active is None


def test_transient_publish_failure_is_retried_by_the_state_machine(make_stack, nessie_client):
    stack = make_stack()
    _publish_raises(stack, NessieUnavailableError("Nessie unreachable (injected)"), times=1)
    stack.drop_file("flaky/orders/x.parquet", fake_parquet("m"))
    record = wait_for_key(stack, "flaky/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISHED"
    publish_calls = stack.dispatcher.calls("publish")
    assert [c.error["errorType"] if c.error else None for c in publish_calls] == [
        "NessieUnavailableError",
        None,
    ]


def test_a_publish_bug_ends_publish_failed_and_frees_the_table(make_stack, slack):
    stack = make_stack()
    _publish_raises(stack, KeyError("branch_hash"))
    stack.drop_file("broken/orders/x.parquet", fake_parquet("p"))
    record = wait_for_key(stack, "broken/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISH_FAILED"
    assert "KeyError" in record.error and "branch_hash" in record.error
    assert len(stack.dispatcher.calls("publish")) == 1  # not a retryable error
    assert len(slack.messages) == 1
    assert stack.ledger().get_lock("broken.orders").active is None


def test_publish_merges_the_audited_hash_not_a_later_branch_head(nessie, make_stack, nessie_client):
    inner = standin_job(nessie.api_v1)

    def job_then_unaudited_commit(argv: list[str]):
        report = inner(argv)  # audited: the report names this hash
        branch = argv[argv.index("--branch") + 1]
        commit_table_on_branch(
            nessie.api_v1, "exact.orders", branch, "unaudited", auth=harness_auth(nessie)
        )
        return report

    stack = make_stack(job=job_then_unaudited_commit)
    stack.drop_file("exact/orders/x.parquet", fake_parquet("x"))
    record = wait_for_key(stack, "exact/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISHED"
    location = table_on(nessie_client, "main", "exact.orders").metadata_location
    assert location.endswith(f"/{record.ingest_id}.json"), location


def test_an_ingest_that_cannot_start_is_failed_and_the_queue_moves_on(
    nessie, make_stack, slack, monkeypatch, tmp_path
):
    from ingestion.exceptions import NessieError
    from ingestion.nessie import NessieClient

    inner = standin_job(nessie.api_v1)

    def slow_job(argv: list[str]):
        time.sleep(1.5)  # keeps the table busy while the others queue
        return inner(argv)

    # One file per run: b starts on its own (tests/statemachine/test_batches.py: batches).
    (tmp_path / "nostart.orders.yaml").write_text("batch: {max_files: 1}\n")
    stack = make_stack(job=slow_job, tables_dir=tmp_path)
    stack.drop_file("nostart/orders/a.parquet", fake_parquet("na"))
    wait_for_status(stack, "nostart/orders/a.parquet", "RUNNING")
    stack.drop_file("nostart/orders/b.parquet", fake_parquet("nb"))
    wait_for_status(stack, "nostart/orders/b.parquet", "QUEUED")
    stack.drop_file("nostart/orders/c.parquet", fake_parquet("nc"))
    wait_for_status(stack, "nostart/orders/c.parquet", "QUEUED")
    doomed = record_for_key(stack, "nostart/orders/b.parquet").ingest_id
    original = NessieClient.ensure_branch_from_main

    def refuse_b(self, branch: str) -> str:
        if branch.endswith(doomed[:8]):
            raise NessieError("Nessie refused to create branch: Bad Request (injected)")
        return original(self, branch)

    monkeypatch.setattr(NessieClient, "ensure_branch_from_main", refuse_b)
    b = wait_for_key(stack, "nostart/orders/b.parquet")
    c = wait_for_key(stack, "nostart/orders/c.parquet")
    stack.wait_idle()

    assert b.status == "JOB_FAILED" and "could not be started" in b.error
    assert c.status == "PUBLISHED"
    assert record_for_key(stack, "nostart/orders/a.parquet").status == "PUBLISHED"
    assert [json.dumps(m).count(doomed) > 0 for m in slack.messages] == [True]
    assert stack.ledger().get_lock("nostart.orders").active is None
