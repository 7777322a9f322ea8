"""The promises under ordinary races and faults (docs/contracts.md, "Invariants").

Each test provokes one race or fault through the real state machine, the real
handlers, our Nessie server and moto; the Spark job is the stand-in that commits
to the branch (tests/fixtures/standin_job.py).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ingestion.exceptions import NessieError, NessieUnavailableError
from tests.fixtures.local_stack import (
    branch_exists,
    fake_parquet,
    record_for_key,
    s3_notification,
    table_on,
    upload_with_notification,
    wait_for_key,
    wait_for_status,
)
from tests.fixtures.standin_job import standin_job


def test_a_queued_ingest_reads_its_own_object_version_not_the_newest(nessie, make_stack):
    """Upload v1, then a corrected v2 of the same key while v1 waits in the table's queue:
    each ingest must read exactly the version its event named."""
    inner = standin_job(nessie.api_v1)
    read: dict[str, list[bytes]] = {}  # each run's sources, in order
    release = threading.Event()

    def recording_job(argv: list[str]):
        sources = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--source"]
        read[argv[argv.index("--ingest-id") + 1]] = [
            Path(source.removeprefix("file://")).read_bytes() for source in sources
        ]
        if any("blocker" in source for source in sources):
            release.wait(30)  # keeps the table busy while v1 and v2 arrive
        return inner(argv)

    stack = make_stack(job=recording_job)
    stack.drop_file("ver/orders/blocker.parquet", fake_parquet("blocker"))
    wait_for_status(stack, "ver/orders/blocker.parquet", "RUNNING")
    v1, v2 = fake_parquet("version-one"), fake_parquet("version-two")
    first = stack.drop_file("ver/orders/x.parquet", v1)
    deadline = time.monotonic() + 30
    while len(stack.ledger().list_ingests(table="ver.orders")) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = stack.drop_file("ver/orders/x.parquet", v2)
    assert first["version_id"] != second["version_id"]
    deadline = time.monotonic() + 30
    while len(stack.ledger().list_ingests(table="ver.orders")) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    release.set()
    stack.wait_idle()

    records = {r.object_version: r for r in stack.ledger().list_ingests(table="ver.orders")}
    one, two = records[first["version_id"]], records[second["version_id"]]
    assert one.status == two.status == "PUBLISHED", stack.describe()
    ledger = stack.ledger()

    def read_for(record: dict) -> bytes:
        """What the run that ingested `record` read as its source (in a batch: its member's)."""
        if not record.batch_id:
            [body] = read[record.ingest_id]
            return body
        batch = ledger.get_ingest(record.batch_id)
        return read[batch.ingest_id][batch.members.index(record.ingest_id)]

    assert read_for(one) == v1
    assert read_for(two) == v2
    # The user's object is untouched; the ledger names it and its version for display.
    assert (
        one.source_uri
        == two.source_uri
        == f"s3://{stack.settings.source_bucket}/ver/orders/x.parquet"
    )
    source = stack.client("s3").get_object(
        Bucket=stack.settings.source_bucket,
        Key="ver/orders/x.parquet",
        VersionId=first["version_id"],
    )
    assert source["Body"].read() == v1
    assert one.staged_uri.startswith(
        f"s3://{stack.settings.artifacts_bucket}/staging/{one.ingest_id}/"
    )


# ---- 2. an infrastructure error is retried, then JOB_FAILED; never REJECTED -------------


def _scripted(nessie, outcomes: list[str]):
    """A job that reports `outcomes[i]` on its i-th run ("ok" = the stand-in's own report)."""
    inner = standin_job(nessie.api_v1)
    runs: list[list[str]] = []

    def job(argv: list[str]):
        runs.append(argv)
        scripted = outcomes[len(runs) - 1] if len(runs) <= len(outcomes) else "ok"
        if scripted == "ok":
            return inner(argv)
        report = {
            "report_version": 1,
            "ingest_id": argv[argv.index("--ingest-id") + 1],
            "table": argv[argv.index("--table") + 1],
            "branch": argv[argv.index("--branch") + 1],
            "source_uris": [],
            "branch_hash": None,
            "snapshot_id": None,
            "rows_written": 0,
            "checks": [],
            "schema_changes": [],
            "timings": {},
            "outcome": "error",
            "reason_code": "infrastructure_error",
            "reason": "job error: Nessie unreachable (HttpClientException: Connection refused)",
        }
        path = Path(argv[argv.index("--report-uri") + 1].removeprefix("file://"))
        path.write_text(__import__("json").dumps(report))
        return report

    return job, runs


def test_an_infrastructure_error_is_retried_on_the_same_branch(nessie, make_stack, slack):
    job, runs = _scripted(nessie, ["error"])
    stack = make_stack(job=job)
    stack.drop_file("flaky/orders/x.parquet", fake_parquet("err1"))
    record = wait_for_key(stack, "flaky/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISHED", record
    assert len(runs) == 2
    branches = {argv[argv.index("--branch") + 1] for argv in runs}
    assert len(branches) == 1  # the retry runs on the same branch
    assert record.job_tries == 2 and "Nessie unreachable" in record.last_job_error
    assert slack.messages == []


def test_a_persistent_infrastructure_error_ends_job_failed_not_rejected(nessie, make_stack, slack):
    job, runs = _scripted(nessie, ["error"] * 5)
    stack = make_stack(job=job)
    stack.drop_file("down/orders/x.parquet", fake_parquet("err2"))
    record = wait_for_key(stack, "down/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "JOB_FAILED", record
    assert "Nessie unreachable" in record.error and "gave up after 3 tries" in record.error
    assert len(runs) == 3
    [message] = slack.messages
    assert "REJECTED" not in json.dumps(message).upper().replace("NOT REJECTED", "")
    assert stack.ledger().get_lock("down.orders").active is None


# ---- 3. a failure after a successful merge is recorded as PUBLISHED -----------------------


def _assert_published_once(stack, nessie_client, record, table: str, slack) -> None:
    assert record.status == "PUBLISHED", record
    assert record.error is None
    assert len(stack.emr.started_runs) == 1  # no rebase, no second append
    assert table_on(nessie_client, "main", table).metadata_location.endswith(
        f"/{record.ingest_id}.json"
    )
    assert slack.messages == []
    assert stack.ledger().get_lock(table).active is None


def test_a_crash_between_merge_and_ledger_write_is_recorded_published(
    make_stack, nessie_client, slack, monkeypatch
):
    from botocore.exceptions import ClientError

    from ingestion.ledger import Ledger

    original = Ledger.update_ingest

    def crash_on_published(self, ingest_id, changes=None, **kwargs):
        # Ledger.update_ingest takes one Changes or the fields as keywords.
        if "published_branch" in (changes or kwargs):
            raise ClientError(
                {"Error": {"Code": "ValidationException", "Message": "injected"}}, "UpdateItem"
            )
        return original(self, ingest_id, changes, **kwargs)

    monkeypatch.setattr(Ledger, "update_ingest", crash_on_published)
    stack = make_stack()
    stack.drop_file("crashmerge/orders/x.parquet", fake_parquet("cm"))
    record = wait_for_key(stack, "crashmerge/orders/x.parquet")
    stack.wait_idle()

    _assert_published_once(stack, nessie_client, record, "crashmerge.orders", slack)
    assert not branch_exists(nessie_client, record.branch)
    assert record.branch_deleted_at


def test_a_lost_merge_response_does_not_merge_or_run_again(
    make_stack, nessie_client, slack, monkeypatch
):
    from ingestion.nessie import NessieClient

    original = NessieClient.merge_into_main
    merges: list[str] = []

    def merge_then_lose_the_answer(self, branch, from_hash, meta):
        merges.append(branch)
        result = original(self, branch, from_hash, meta)
        if len(merges) == 1:
            raise NessieUnavailableError("Nessie unreachable: read timed out (injected)")
        return result

    monkeypatch.setattr(NessieClient, "merge_into_main", merge_then_lose_the_answer)
    stack = make_stack()
    main_before = nessie_client.get_reference("main").hash_
    stack.drop_file("lostmerge/orders/x.parquet", fake_parquet("lm"))
    record = wait_for_key(stack, "lostmerge/orders/x.parquet")
    stack.wait_idle()

    _assert_published_once(stack, nessie_client, record, "lostmerge.orders", slack)
    assert len(merges) == 1  # the retried publish saw main holding the audited snapshot
    new_commits = []
    for entry in nessie_client.get_log("main"):
        if entry.commit_meta.hash_ == main_before:
            break
        new_commits.append(entry)
    assert len(new_commits) == 1  # one merge commit


def test_a_lambda_timeout_after_the_merge_is_recorded_published(make_stack, nessie_client, slack):
    timed_out = type("Sandbox.Timedout", (Exception,), {})  # what Step Functions sees

    def time_out_after(handler):
        def wrapped(event, context):
            handler(event, context)  # the merge commits...
            raise timed_out("Task timed out after 120.00 seconds")  # ...the answer is lost

        return wrapped

    stack = make_stack()
    stack.dispatcher.interceptors["publish"] = time_out_after
    stack.drop_file("timeout/orders/x.parquet", fake_parquet("to"))
    record = wait_for_key(stack, "timeout/orders/x.parquet")
    stack.wait_idle()

    _assert_published_once(stack, nessie_client, record, "timeout.orders", slack)


def test_a_failed_branch_delete_after_the_merge_is_retried_by_the_sweeper(
    make_stack, nessie_client, slack, monkeypatch
):
    from ingestion.nessie import NessieClient

    original = NessieClient.delete_branch
    monkeypatch.setattr(
        NessieClient,
        "delete_branch",
        lambda self, b: (_ for _ in ()).throw(NessieError("injected 403")),
    )
    stack = make_stack()
    stack.drop_file("keepbranch/orders/x.parquet", fake_parquet("kb"))
    record = wait_for_key(stack, "keepbranch/orders/x.parquet")
    stack.wait_idle()
    assert record.status == "PUBLISHED" and not record.branch_deleted_at
    assert branch_exists(nessie_client, record.branch)  # recorded truthfully

    monkeypatch.setattr(NessieClient, "delete_branch", original)
    swept = stack.invoke("sweeper", {"source": "aws.events"})
    record = stack.ledger().get_ingest(record.ingest_id)
    assert swept["deleted_branches"] == [record.branch]
    assert record.branch_deleted_at and not branch_exists(nessie_client, record.branch)
    assert swept["deleted_staged"] == [record.staged_uri]  # branch gone: staged copy too
    assert slack.messages == []


# ---- 4. the audited hash must hold the audited snapshot ----------------------------------


def test_publish_refuses_a_hash_that_does_not_hold_the_audited_snapshot(
    nessie, make_stack, nessie_client, slack
):
    inner = standin_job(nessie.api_v1)

    def job_reporting_another_snapshot(argv: list[str]):
        report = inner(argv)
        report["snapshot_id"] += 1  # the audit read something other than what the hash holds
        path = Path(argv[argv.index("--report-uri") + 1].removeprefix("file://"))
        path.write_text(json.dumps(report))
        return report

    stack = make_stack(job=job_reporting_another_snapshot)
    main_before = nessie_client.get_reference("main").hash_
    stack.drop_file("mismatch/orders/x.parquet", fake_parquet("mm"))
    record = wait_for_key(stack, "mismatch/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISH_FAILED", record
    assert "refusing to publish" in record.error
    assert nessie_client.get_reference("main").hash_ == main_before
    assert table_on(nessie_client, "main", "mismatch.orders") is None
    assert len(slack.messages) == 1


# ---- 5. a late duplicate event cannot re-take a finished ingest's table ------------------


def test_a_stalled_duplicate_event_does_not_retake_the_table(make_stack, monkeypatch):
    from ingestion.ledger import Ledger

    stack = make_stack()
    key = "late/orders/x.parquet"
    stack.drop_file(key, fake_parquet("late"))
    record = wait_for_key(stack, key)
    stack.wait_idle()
    assert record.status == "PUBLISHED"
    assert stack.ledger().get_lock("late.orders").active is None

    # The duplicate read the record while the first copy was still running.
    stale = replace(record, status="RECEIVED")
    original = Ledger.get_ingest
    reads = {"n": 0}

    def stale_first_read(self, ingest_id):
        reads["n"] += 1
        return stale if reads["n"] == 1 else original(self, ingest_id)

    monkeypatch.setattr(Ledger, "get_ingest", stale_first_read)
    event = s3_notification(stack, key, record.object_version, len(fake_parquet("late")))
    result = stack.dispatcher.run_handler("trigger", event)

    assert result["results"][0]["action"] == "DUPLICATE"
    lock = stack.ledger().get_lock("late.orders")
    assert lock.active is None and lock.queue == []
    assert len(stack.emr.started_runs) == 1


# ---- 6. one poisoned table does not stop the sweeper --------------------------------------


def test_one_poisoned_table_does_not_stop_the_sweep_of_the_others(make_stack, monkeypatch):
    from botocore.exceptions import ClientError

    from lambdas.sweeper import service as sweeper_service

    stack = make_stack()
    ledger = stack.ledger()
    old = "2026-01-01T00:00:00Z"
    # Table a.t: an interrupted start whose restart AWS keeps refusing.
    ledger.create_ingest("a" * 16, {"table": "a.t", "status": "RECEIVED"})
    ledger.acquire_or_enqueue("a.t", "a" * 16)
    ledger._table.update_item(
        Key={"pk": "table#a.t"},
        UpdateExpression="SET active_since = :o",
        ExpressionAttributeValues={":o": old},
    )
    # Table b.t: its execution is gone; the lock must be recovered.
    ledger.create_ingest("b" * 16, {"table": "b.t", "status": "RECEIVED"})
    ledger.acquire_or_enqueue("b.t", "b" * 16)
    ledger.update_ingest(
        "b" * 16,
        {
            "status": "RUNNING",
            "execution_arn": f"{stack.state_machine_arn}:gone".replace(
                ":stateMachine:", ":execution:"
            ),
        },
    )

    def refused(settings, ledger, nessie, record):
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "injected"}}, "StartJobRun"
        )

    monkeypatch.setattr(sweeper_service, "start_or_fail", refused)
    swept = stack.invoke("sweeper", {"source": "aws.events"})

    assert swept["recovered_locks"] == ["b.t"]
    assert any(e.startswith("a.t: ClientError") for e in swept["errors"]), swept
    assert stack.ledger().get_lock("b.t").active is None
    assert stack.ledger().get_ingest("b" * 16).status == "JOB_FAILED"


# ---- 7. transient AWS errors while polling are retried; a run given up is cancelled -------


def _fail_get_job_run(stack, code: str, times: int | None):
    """job_status' own EMR client fails GetJobRun with `code` (`times` times; None: always)."""
    from botocore.exceptions import ClientError

    from ingestion import aws

    left = {"n": times}

    def fail(**_):
        if left["n"] is None or left["n"] > 0:
            if left["n"] is not None:
                left["n"] -= 1
            raise ClientError(
                {
                    "Error": {"Code": code, "Message": "injected"},
                    "ResponseMetadata": {"HTTPStatusCode": 400},
                },
                "GetJobRun",
            )
        return None

    with stack.dispatcher.sandboxes["job_status"].running():  # the function's cached client
        aws.client("emr-serverless").meta.events.register(
            "before-call.emr-serverless.GetJobRun", fail
        )


def test_a_throttled_poll_is_retried_and_the_ingest_publishes(make_stack, slack):
    stack = make_stack()
    _fail_get_job_run(stack, "ThrottlingException", times=2)
    stack.drop_file("throttle/orders/x.parquet", fake_parquet("th"))
    record = wait_for_key(stack, "throttle/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISHED", record
    errors = [c.error["errorType"] for c in stack.dispatcher.calls("job_status") if c.error]
    assert errors == ["AwsUnavailableError"] * 2
    assert slack.messages == []


def test_an_ingest_given_up_while_polling_cancels_its_job_run(make_stack, slack):
    stack = make_stack()
    stack.emr.inject_hang()
    # job_status' role loses emr-serverless:GetJobRun: every poll is AccessDenied.
    assert stack.iam.revoke_action("job_status", "emr-serverless:GetJobRun")
    stack.drop_file("denied/orders/x.parquet", fake_parquet("dn"))
    record = wait_for_key(stack, "denied/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "JOB_FAILED" and "AccessDenied" in record.error
    job = stack.emr_job_run(record.job_run_id)
    assert job.state in ("CANCELLED", "CANCELLING"), job.state
    assert stack.ledger().get_lock("denied.orders").active is None


def test_a_state_that_breaks_its_contract_still_ends_with_a_recorded_outcome(make_stack, slack):
    """Finish is where every execution ends, Catches included: a state that fails its own
    contract (here a run without a branch) is rebuilt from the ledger, recorded JOB_FAILED
    with the contract error, and the table goes to the next file."""
    stack = make_stack()
    stack.emr.inject_hang(match="/first.parquet")
    stack.drop_file("contract/orders/first.parquet", fake_parquet("c1"))
    wait_for_status(stack, "contract/orders/first.parquet", "RUNNING")
    stack.drop_file("contract/orders/second.parquet", fake_parquet("c2"))
    first = record_for_key(stack, "contract/orders/first.parquet")
    broken = {
        "ingest_id": first.ingest_id,
        "table": "contract.orders",
        "run": {"attempt": 1, "job_run_id": first.job_run_id},
    }

    result = stack.dispatcher.run_handler("finish", {"state": broken, "execution_arn": None})

    assert result["status"] == "JOB_FAILED"
    first = stack.ledger().get_ingest(first.ingest_id)
    assert first.status == "JOB_FAILED" and "branch" in first.error, first
    assert wait_for_key(stack, "contract/orders/second.parquet").status == "PUBLISHED"
    assert stack.emr_job_run(first.job_run_id).state in ("CANCELLED", "CANCELLING")
    stack.client("stepfunctions").stop_execution(executionArn=first.execution_arn)


# ---- 8. the job timeout counts from startedAt, not from StartJobRun ------------------------


def test_time_queued_for_capacity_does_not_count_against_the_job_timeout(make_stack):
    stack = make_stack(job_timeout_seconds=3)
    stack.emr.inject_queue_delay(5)  # EMR waits 5 s for capacity; the job itself is quick
    stack.drop_file("queued/orders/x.parquet", fake_parquet("qd"))
    record = wait_for_key(stack, "queued/orders/x.parquet", timeout=60)
    stack.wait_idle()

    assert record.status == "PUBLISHED", record


# ---- 9. a burst of triggers for one table is recorded, with backoff on contention --------


def _network_latency_on_lock_items(stack, seconds: float):
    """DynamoDB answers in milliseconds, moto in microseconds: give the lock's read-modify-write
    a real service's latency, so concurrent writers collide as they would on AWS."""

    def delay(params, **_):
        key = params.get("Key") or params.get("Item") or {}
        if str(key.get("pk", {}).get("S", "")).startswith("table#"):
            time.sleep(seconds)

    # Every function's own boto3 session (clients are created from it on first use).
    emitters = [box.boto3_session().events for box in stack.dispatcher.sandboxes.values()]
    names = ("before-call.dynamodb.GetItem", "before-call.dynamodb.PutItem")
    for events in emitters:
        for name in names:
            events.register(name, delay)
    return lambda: [events.unregister(name, delay) for events in emitters for name in names]


def test_fifty_concurrent_triggers_for_one_table_are_all_recorded(make_stack):

    stack = make_stack()
    restore = _network_latency_on_lock_items(stack, 0.01)
    stack.client("events").disable_rule(Name="wap-source-object-created")
    stack.emr.inject_hang()  # the first ingest holds the table; the others queue
    events = []
    for i in range(50):
        key = f"burst/orders/part-{i:02d}.parquet"
        events.append(upload_with_notification(stack, key, fake_parquet(f"b{i}")))
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(events))

    def invoke(event) -> None:
        barrier.wait()
        try:
            stack.dispatcher.run_handler("trigger", event)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=invoke, args=(e,)) for e in events]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        restore()

    assert errors == []
    records = stack.ledger().list_ingests(table="burst.orders")
    assert len(records) == 50
    assert sorted(r.status for r in records) == ["QUEUED"] * 49 + ["RUNNING"]
    lock = stack.ledger().get_lock("burst.orders")
    assert lock.active and len(lock.queue) == 49


def test_an_event_for_a_deleted_version_is_rejected_with_a_reason(make_stack, slack):
    """A version deleted before the trigger ran: a recorded REJECTED, never a silent drop."""

    stack = make_stack()
    stack.client("events").disable_rule(Name="wap-source-object-created")
    key = "gone/orders/x.parquet"
    body = fake_parquet("gone")
    put = stack.client("s3").put_object(Bucket=stack.settings.source_bucket, Key=key, Body=body)
    stack.client("s3").put_object(
        Bucket=stack.settings.source_bucket, Key=key, Body=fake_parquet("newer")
    )
    stack.client("s3").delete_object(
        Bucket=stack.settings.source_bucket, Key=key, VersionId=put["VersionId"]
    )
    event = s3_notification(stack, key, put["VersionId"], len(body))
    result = stack.dispatcher.run_handler("trigger", event)

    assert result["results"][0]["action"] == "REJECTED"
    record = record_for_key(stack, key)
    assert record.status == "REJECTED" and "no longer exists" in record.error
    assert len(slack.messages) == 1


def test_an_ingest_whose_trigger_gave_up_before_the_lock_is_adopted_by_the_sweeper(
    make_stack, monkeypatch
):
    """Every trigger retry failed between recording the ingest and taking the table lock:
    the sweeper queues it (a recorded outcome for every input)."""
    from botocore.exceptions import ClientError

    from ingestion.ledger import Ledger

    stack = make_stack()
    stack.client("events").disable_rule(Name="wap-source-object-created")
    key = "orphan/orders/x.parquet"
    event = upload_with_notification(stack, key, fake_parquet("orphan"))
    original = Ledger.acquire_or_enqueue

    def refused(self, table, ingest_id):
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "x"}}, "TransactWriteItems"
        )

    monkeypatch.setattr(Ledger, "acquire_or_enqueue", refused)
    for _ in range(3):  # the invocation and Lambda's two async retries
        with pytest.raises(ClientError):
            stack.dispatcher.run_handler("trigger", event)
    monkeypatch.setattr(Ledger, "acquire_or_enqueue", original)
    record = record_for_key(stack, key)
    assert record.status == "RECEIVED" and record.staged_at

    stack.invoke("sweeper", {"source": "aws.events"})  # too early: left alone
    assert record_for_key(stack, key).status == "RECEIVED"
    stack.ledger()._table.update_item(  # 20 minutes later
        Key={"pk": f"ingest#{record.ingest_id}"},
        UpdateExpression="SET created_at = :t",
        ExpressionAttributeValues={":t": "2026-01-01T00:00:00Z"},
    )
    swept = stack.invoke("sweeper", {"source": "aws.events"})
    assert swept["restarted"] == [record.ingest_id]
    assert wait_for_key(stack, key).status == "PUBLISHED"


def test_a_run_that_succeeds_without_its_report_is_never_a_pass(make_stack, slack):
    """EMR says SUCCESS but no report exists: job_status (allowed to list the artifacts
    bucket, so S3 answers 404, not 403) records an infrastructure error, never PASSED."""
    stack = make_stack(job=lambda argv: None)
    stack.drop_file("noreport/orders/x.parquet", fake_parquet("nr"))
    record = wait_for_key(stack, "noreport/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "JOB_FAILED", record
    assert "wrote no audit report" in record.error, record
    assert stack.iam.denied == []
