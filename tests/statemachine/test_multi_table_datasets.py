"""Multi-table datasets through the whole flow (issue 27; docs/datasets.md): a drop under
`_datasets/<name>/<drop>/` with a `_manifest.json` naming several tables runs once, on one
branch, and lands on main in one merge or not at all. The stand-in job commits each table
(and judges files by name: `fail`, `reject`); tests/statemachine/test_multi_table_e2e.py
runs the real job."""

from __future__ import annotations

import json
import threading

import pytest

from tests.fixtures.local_stack import (
    batch_for_marker,
    branch_exists,
    drop_dataset,
    drop_dataset_files,
    fake_parquet,
    status_for_key,
    table_on,
    wait_for_batch,
    wait_for_status,
)
from tests.fixtures.standin_job import standin_job

DATASET_CONFIG = """tables: [{a}, {b}]
checks:
  - {{kind: row_count_relation, name: both_have_rows, expression: "{sa} > 0"}}
"""


def dataset_config(name: str, a: str, b: str) -> str:
    return DATASET_CONFIG.format(a=a, b=b, sa=b.split(".")[1])


@pytest.fixture(scope="module")
def mt_stack(nessie, tmp_path_factory):
    """One stack for this module's stand-in tests (each waits until it is idle): the
    stack's start is most of a test's time. Yields (stack, job calls, Slack stand-in)."""
    from local.aws.stack import LocalAwsStack
    from local.slack_standin import SlackStandin
    from tests.fixtures.local_stack import SLACK_CHANNEL, SLACK_TOKEN, stack_settings

    tables = tmp_path_factory.mktemp("mt-tables")
    (tables / "datasets").mkdir()
    (tables / "datasets" / "shop.yaml").write_text(
        dataset_config("shop", "mt.orders", "mt.order_items")
    )
    (tables / "datasets" / "shop_reversed.yaml").write_text(
        dataset_config("shop_reversed", "mt.order_items", "mt.orders")
    )
    (tables / "datasets" / "faults.yaml").write_text(
        dataset_config("faults", "mf.orders", "mf.order_items")
    )
    (tables / "datasets" / "redeployed.yaml").write_text(
        dataset_config("redeployed", "mr.a", "mr.b")
    )
    calls: list[dict] = []
    inner = standin_job(nessie.api_v1, calls)
    started: list = []

    def job(argv: list[str]):
        for match, release in list(HOLDS.items()):
            if match in " ".join(argv):
                release.wait(60)
        report = inner(argv)
        if "--dataset-config-uri" in argv and started:  # who held each table it wrote
            ledger = started[0].ledger()
            DATASET_RUNS.append(
                (
                    report["ingest_id"],
                    {
                        part["table"]: ledger.get_lock(part["table"]).active
                        for part in report.get("tables") or ()
                    },
                )
            )
        return report

    slack = SlackStandin(SLACK_TOKEN, (SLACK_CHANNEL,)).start()
    stack = LocalAwsStack(
        stack_settings(
            nessie, slack, tables_dir=tables, emr_workers=2, job=job, job_retry_base_seconds=1
        )
    ).start()
    started.append(stack)
    yield stack, calls, slack
    stack.stop()
    slack.stop()


# A job run whose arguments contain a key waits (up to a minute) until its event is set.
HOLDS: dict[str, threading.Event] = {}
# Each dataset run of the stand-in: (its id, {table it wrote: the lock's holder then}).
DATASET_RUNS: list[tuple[str, dict[str, str | None]]] = []


def undelivered_drop(stack, prefix: str) -> dict:
    """A drop of one file per table under `prefix` whose manifest is uploaded with the
    S3 rule off: returns the manifest's event, for a test to deliver to the trigger."""
    from tests.fixtures.local_stack import upload_with_notification

    stack.wait_idle()
    listed = {}
    for table in ("mt.orders", "mt.order_items"):
        body = fake_parquet(f"{prefix}{table}")
        stack.drop_file(f"{prefix}{table}/f.parquet", body)  # ignored: the manifest names it
        listed[table] = [{"path": f"{table}/f.parquet", "size": len(body)}]
    stack.wait_idle()
    rule = "wap-source-object-created"
    stack.client("events").disable_rule(Name=rule)
    try:
        return upload_with_notification(
            stack, f"{prefix}_manifest.json", json.dumps({"tables": listed}).encode()
        )
    finally:
        stack.client("events").enable_rule(Name=rule)


def main_log(nessie_client) -> list:
    return [entry.commit_meta.hash_ for entry in nessie_client.get_log("main")]


def test_a_dataset_publishes_every_table_in_one_merge(mt_stack, nessie_client):
    stack, calls, slack = mt_stack
    stack.wait_idle()
    calls.clear()
    alerts = len(slack.messages)
    before = main_log(nessie_client)
    key = drop_dataset(
        stack,
        "shop",
        "2026-11-25",
        {
            "mt.orders": ["orders-0.parquet"],
            "mt.order_items": ["items-0.parquet", "items-1.parquet"],
        },
    )
    dataset = wait_for_batch(stack, key)

    assert dataset.status == "PUBLISHED", stack.describe()
    assert dataset.tables == ("mt.order_items", "mt.orders")  # lock order
    assert dataset.branch.startswith("wap_dataset_shop_")
    [run] = calls  # one job run over both tables
    assert sorted(run["source_tables"]) == ["mt.order_items", "mt.order_items", "mt.orders"]
    after = main_log(nessie_client)
    assert len(after) == len(before) + 1  # one commit on main: the merge
    for table in dataset.tables:
        assert table_on(nessie_client, "main", table) is not None
    members = stack.ledger().get_ingests(dataset.members)
    assert {m.status for m in members.values()} == {"PUBLISHED"}
    assert {m.table for m in members.values()} == set(dataset.tables)
    for member in members.values():  # each file names its own table's snapshot
        assert member.snapshot_id == str(dataset.audited_snapshots[member.table])
    assert all(lock.active is None and not lock.queue for lock in stack.ledger().list_locks())
    assert len(slack.messages) == alerts
    assert not branch_exists(nessie_client, dataset.branch)

    # A failing file in one table: main unchanged for every table, one branch, one alert.
    before = main_log(nessie_client)
    key = drop_dataset(
        stack,
        "shop",
        "bad-day",
        {"mt.orders": ["orders-0.parquet"], "mt.order_items": ["items-fail.parquet"]},
    )
    dataset = wait_for_batch(stack, key)

    assert dataset.status == "AUDIT_FAILED"
    assert main_log(nessie_client) == before
    assert branch_exists(nessie_client, dataset.branch)
    [alert] = slack.messages[alerts:]
    assert "items-fail.parquet" in json.dumps(alert)


def test_a_bad_drop_is_rejected_before_any_run_with_one_alert_each(mt_stack):
    stack, calls, slack = mt_stack
    stack.wait_idle()
    calls.clear()
    alerts = len(slack.messages)
    a = fake_parquet("unlisted/a")
    cases = [  # (dataset, its files: {table: {file: bytes}}, manifest, the error's fragment)
        ("shop", {}, {"tables": {"mt.orders": []}}, "must list every table"),
        ("shop", {}, {"files": []}, "is not a dataset manifest"),
        (
            "shop",
            {},
            {"tables": {"mt.orders": [{"path": "o.parquet", "size": 1}], "mt.order_items": []}},
            "which does not exist",
        ),
        (
            "nothing_here",
            {"mt.orders": {"a.parquet": fake_parquet("nothing_here/a")}},
            None,
            "tables/datasets/nothing_here.yaml",
        ),
        (
            "shop",
            {"mt.orders": {"a.parquet": a, "b.parquet": fake_parquet("unlisted/b")}},
            {
                "tables": {
                    "mt.orders": [{"path": "mt.orders/a.parquet", "size": len(a)}],
                    "mt.order_items": [],
                }
            },
            "1 file(s) under",
        ),  # b.parquet is in the drop, not listed
        (
            "shop",
            {"mt.orders": {"empty.parquet": b""}},
            {
                "tables": {
                    "mt.orders": [{"path": "mt.orders/empty.parquet", "size": 0}],
                    "mt.order_items": [],
                }
            },
            "empty file (0 bytes)",
        ),
    ]  # one alert: the dataset's
    for number, (name, files, manifest, fragment) in enumerate(cases):
        key = drop_dataset_files(stack, name, f"bad-{number}", files, manifest=manifest)
        dataset = wait_for_batch(stack, key)
        assert dataset.status == "REJECTED" and fragment in dataset.error, dataset.error
        assert fragment in json.dumps(slack.messages[-1])
    assert calls == [] and len(slack.messages) == alerts + len(cases)


def test_datasets_sharing_tables_and_single_ingests_all_finish_without_deadlock(mt_stack):
    """{orders, items} and {items, orders} together with single-table ingests on both: the
    interleaving that deadlocks when locks are taken in listing order."""
    stack = mt_stack[0]
    stack.wait_idle()
    keys = []
    for round_ in range(2):
        stack.drop_file(f"mt/orders/single-{round_}.parquet", fake_parquet(f"o{round_}"))
        keys.append(
            drop_dataset(
                stack,
                "shop",
                f"r{round_}",
                {"mt.orders": ["o.parquet"], "mt.order_items": ["i.parquet"]},
            )
        )
        keys.append(
            drop_dataset(
                stack,
                "shop_reversed",
                f"r{round_}",
                {"mt.order_items": ["i.parquet"], "mt.orders": ["o.parquet"]},
            )
        )
        stack.drop_file(f"mt/order_items/single-{round_}.parquet", fake_parquet(f"i{round_}"))
    datasets = [wait_for_batch(stack, key, timeout=120) for key in keys]

    assert [d.status for d in datasets] == ["PUBLISHED"] * 4, stack.describe()
    singles = [r for r in stack.ledger().list_ingests() if "single-" in (r.key or "")]
    assert len(singles) == 4 and {r.status for r in singles} == {"PUBLISHED"}
    assert all(lock.active is None and not lock.queue for lock in stack.ledger().list_locks())


def test_a_retried_job_and_a_timeout_after_the_merge_still_publish_every_table_once(
    mt_stack, nessie_client
):
    """An infrastructure error retries the dataset on the same branch; a publish whose
    answer is lost after the merge is recorded PUBLISHED (main holds every table's audited
    snapshot): one merge, no alert, every lock free."""
    stack, calls, slack = mt_stack
    stack.wait_idle()
    calls.clear()
    alerts = len(slack.messages)

    def time_out_after(handler):
        def wrapped(event, context):
            handler(event, context)  # the merge commits...
            raise type("Sandbox.Timedout", (Exception,), {})("Task timed out")  # ...lost

        return wrapped

    stack.emr.inject_crash("executor lost (injected)")
    stack.dispatcher.interceptors["publish"] = time_out_after
    try:
        before = main_log(nessie_client)
        key = drop_dataset(
            stack, "faults", "d1", {"mf.orders": ["o.parquet"], "mf.order_items": ["i.parquet"]}
        )
        dataset = wait_for_batch(stack, key, timeout=90)
    finally:
        stack.dispatcher.interceptors.pop("publish", None)

    assert dataset.status == "PUBLISHED", stack.describe()
    assert len(calls) == 1  # the failed try crashed before the stand-in
    assert len(stack.emr.started_runs) >= 2 and dataset.job_tries == 2
    assert calls[0]["branch"] == dataset.branch  # the retry ran on the same branch
    assert len(main_log(nessie_client)) == len(before) + 1
    assert len(slack.messages) == alerts
    assert all(lock.active is None for lock in stack.ledger().list_locks())


def test_a_dataset_whose_trigger_gave_up_before_its_locks_is_adopted_by_the_sweeper(
    mt_stack, monkeypatch
):
    """Every trigger retry failed between recording the dataset and taking its tables: the
    sweeper starts it (a recorded outcome for every input)."""
    from botocore.exceptions import ClientError

    from ingestion.ledger import Ledger

    stack = mt_stack[0]
    prefix = "_datasets/shop/orphan/"
    event = undelivered_drop(stack, prefix)

    def refused(self, tables, holder):
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "x"}}, "TransactWriteItems"
        )

    with monkeypatch.context() as patched:
        patched.setattr(Ledger, "acquire_in_order", refused)
        for _ in range(3):  # the invocation and Lambda's two async retries
            with pytest.raises(ClientError):
                stack.dispatcher.run_handler("trigger", event)
    dataset = batch_for_marker(stack, f"{prefix}_manifest.json")
    assert dataset is not None and dataset.status == "RECEIVED", stack.describe()

    stack.ledger()._table.update_item(  # 20 minutes later
        Key={"pk": f"ingest#{dataset.ingest_id}"},
        UpdateExpression="SET created_at = :t",
        ExpressionAttributeValues={":t": "2026-01-01T00:00:00Z"},
    )
    swept = stack.invoke("sweeper", {"source": "aws.events"})
    assert dataset.ingest_id in swept["restarted"]
    assert wait_for_batch(stack, f"{prefix}_manifest.json").status == "PUBLISHED"


def test_a_trigger_stopped_before_or_while_recording_the_dataset_loses_nothing(
    mt_stack, monkeypatch
):
    """The manifest's trigger stops after recording the files but before the dataset, then
    after the dataset but before joining its files: the sweeper never runs a dataset's
    file alone, and the next delivery publishes every file with the dataset."""
    from lambdas.trigger import datasets, multi_table

    stack = mt_stack[0]
    prefix = "_datasets/shop/stopped/"
    event = undelivered_drop(stack, prefix)

    def stop(*args, **kwargs):
        raise RuntimeError("the invocation stopped here (injected)")

    with monkeypatch.context() as patched:
        patched.setattr(multi_table, "record_batch", stop)
        with pytest.raises(RuntimeError):
            stack.dispatcher.run_handler("trigger", event)
    files = [r for r in stack.ledger().list_ingests() if (r.key or "").startswith(prefix)]
    assert len(files) == 2 and {f.status for f in files} == {"RECEIVED"}
    for file in files:  # 20 minutes later, the sweeper must leave them to their dataset
        stack.ledger()._table.update_item(
            Key={"pk": f"ingest#{file.ingest_id}"},
            UpdateExpression="SET created_at = :t",
            ExpressionAttributeValues={":t": "2026-01-01T00:00:00Z"},
        )
    swept = stack.invoke("sweeper", {"source": "aws.events"})
    assert not {f.ingest_id for f in files} & set(swept["restarted"])

    with monkeypatch.context() as patched:
        patched.setattr(datasets, "join_members", stop)
        with pytest.raises(RuntimeError):
            stack.dispatcher.run_handler("trigger", event)
    stack.dispatcher.run_handler("trigger", event)  # the next delivery
    dataset = wait_for_batch(stack, f"{prefix}_manifest.json")
    assert dataset.status == "PUBLISHED"
    members = stack.ledger().get_ingests(dataset.members)
    assert len(members) == 2 and {m.status for m in members.values()} == {"PUBLISHED"}


def test_a_config_redeployed_while_the_dataset_waits_does_not_change_its_run(
    mt_stack, nessie_client
):
    """The dataset waits QUEUED behind a single-table ingest of its first table while its
    config is redeployed with other tables: its run reads the config its trigger parsed
    and took the locks by (frozen beside its staged files), publishes what was dropped,
    and writes no table whose lock it does not hold."""
    stack, calls, _ = mt_stack
    stack.wait_idle()
    calls.clear()
    s3, bucket = stack.client("s3"), stack.settings.artifacts_bucket
    deployed = "tables/datasets/redeployed.yaml"
    dropped_with = s3.get_object(Bucket=bucket, Key=deployed)["Body"].read()
    hold = HOLDS["/hold-a.parquet"] = threading.Event()
    try:
        stack.drop_file("mr/a/hold-a.parquet", fake_parquet("hold-a"))
        wait_for_status(stack, "mr/a/hold-a.parquet", "RUNNING")
        key = drop_dataset(
            stack, "redeployed", "d1", {"mr.a": ["a.parquet"], "mr.b": ["b.parquet"]}
        )
        wait_for_batch(stack, key, "QUEUED", timeout=30)
        # Redeployed while it waits: another table list (its first table changes too).
        s3.put_object(
            Bucket=bucket, Key=deployed, Body=dataset_config("redeployed", "mr.b", "mr.c").encode()
        )
    finally:
        hold.set()
        HOLDS.clear()
    try:
        dataset = wait_for_batch(stack, key)
    finally:
        s3.put_object(Bucket=bucket, Key=deployed, Body=dropped_with)

    assert dataset.status == "PUBLISHED", dataset.error
    [run] = [call for call in calls if call["ingest_id"] == dataset.ingest_id]
    assert run["dataset_tables"] == ["mr.a", "mr.b"]  # the config it was dropped with
    frozen = dataset.dataset_config_uri
    assert run["dataset_config_uri"].endswith("/redeployed.yaml")
    assert frozen.startswith(f"s3://{bucket}/staging/{dataset.ingest_id}/")
    frozen_bucket, frozen_key = frozen[len("s3://") :].split("/", 1)
    assert s3.get_object(Bucket=frozen_bucket, Key=frozen_key)["Body"].read() == dropped_with
    [(_, holders)] = [run for run in DATASET_RUNS if run[0] == dataset.ingest_id]
    assert holders == {"mr.a": dataset.ingest_id, "mr.b": dataset.ingest_id}
    assert table_on(nessie_client, "main", "mr.c") is None
    assert status_for_key(stack, "mr/a/hold-a.parquet") == "PUBLISHED"
    # Published and its branch gone: the sweeper deletes the frozen copy with the files'.
    swept = stack.invoke("sweeper", {"source": "aws.events"})
    assert frozen in swept["deleted_staged"], swept
    assert "Contents" not in s3.list_objects_v2(
        Bucket=bucket, Prefix=f"staging/{dataset.ingest_id}/"
    )
