"""Datasets of `arrival: marker` tables (docs/batches.md): part files are held until
`_SUCCESS` or `_manifest.json` arrives, then run as one batch, published all together or
not at all. The stand-in job judges each part by its name (`fail`, `reject`)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ingestion import metrics
from tests.fixtures.catalog_auth import harness_client
from tests.fixtures.local_stack import (
    branch_exists,
    fake_parquet,
    record_for_key,
    table_on,
    wait_for_key,
)
from tests.fixtures.standin_job import standin_job
from wap.exceptions import NotAllowedError
from wap.ops import operations as ops
from wap.ops.backend import Backend

TABLE = "ds.orders"
MARKER_CONFIG = "arrival: marker\n"


@pytest.fixture
def dataset_stack(make_stack, nessie, tmp_path):
    (tmp_path / f"{TABLE}.yaml").write_text(MARKER_CONFIG)
    calls: list[dict[str, Any]] = []
    stack = make_stack(job=standin_job(nessie.api_v1, calls), tables_dir=tmp_path)
    return stack, calls


def drop_parts(stack, prefix: str, names: list[str]) -> list[str]:
    keys = [f"ds/orders/{prefix}/{name}" for name in names]
    for key in keys:
        stack.drop_file(key, fake_parquet(key))
    for key in keys:  # each is staged and held, none runs
        _wait_status(stack, key, "HELD")
    return keys


def _wait_status(stack, key: str, status: str) -> dict[str, Any]:
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        record = record_for_key(stack, key)
        if record and record.status == status:
            return record
        time.sleep(0.05)
    raise AssertionError(f"{key} never {status}: {stack.describe()}")


def the_batch(stack) -> dict[str, Any]:
    [batch] = stack.ledger().list_batches()
    return batch


def test_a_dataset_waits_for_success_and_publishes_all_its_parts_at_once(
    dataset_stack, nessie_client
):
    stack, calls = dataset_stack
    keys = drop_parts(stack, "run-1", [f"part-{i:05d}.parquet" for i in range(5)])
    stack.wait_idle()
    assert calls == []  # nothing runs before the marker

    stack.drop_file("ds/orders/run-1/_SUCCESS", b"")
    records = [wait_for_key(stack, key) for key in keys]
    stack.wait_idle()

    assert [r.status for r in records] == ["PUBLISHED"] * 5, stack.describe()
    [run] = calls
    assert len(run["sources"]) == 5 and run.get("all_or_nothing")
    batch = the_batch(stack)
    assert batch.status == "PUBLISHED" and batch.dataset == "ds/orders/run-1/"
    assert {r.batch_id for r in records} == {batch.ingest_id}
    assert table_on(nessie_client, "main", TABLE) is not None


def test_a_dataset_with_one_failing_part_publishes_nothing_and_leaves_one_branch(
    dataset_stack, nessie_client, slack
):
    stack, calls = dataset_stack
    before = table_on(nessie_client, "main", TABLE)  # the Nessie server is the session's
    keys = drop_parts(stack, "run-2", ["part-0.parquet", "part-1-fail.parquet", "part-2.parquet"])
    stack.drop_file("ds/orders/run-2/_SUCCESS", b"")
    records = [wait_for_key(stack, key) for key in keys]
    stack.wait_idle()

    assert [r.status for r in records] == ["AUDIT_FAILED"] * 3
    assert len(calls) == 1  # never split: all or nothing
    assert table_on(nessie_client, "main", TABLE) == before
    batch = the_batch(stack)
    assert batch.status == "AUDIT_FAILED" and branch_exists(nessie_client, batch.branch)
    [alert] = slack.messages
    assert "part-1-fail.parquet (amount_positive)" in json.dumps(alert)
    assert "1 of 3 files failed" in json.dumps(alert)


class StackBackend(Backend):
    """What `wap` commands work on, over this test's stack."""

    def __init__(self, stack, nessie) -> None:
        super().__init__(stack.ledger(), harness_client(nessie))
        self.stack = stack

    @property
    def source_bucket(self) -> str:
        return self.stack.settings.source_bucket

    def s3(self):
        return self.stack.client("s3")

    def iceberg_properties(self) -> dict[str, str]:
        return {}


def failed_dataset(stack, prefix: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    keys = drop_parts(stack, prefix, ["part-0.parquet", "part-1-fail.parquet"])
    stack.drop_file(f"ds/orders/{prefix}/_SUCCESS", b"")
    records = [wait_for_key(stack, key) for key in keys]
    stack.wait_idle()
    [batch] = [b for b in stack.ledger().list_batches() if b.dataset.endswith(f"/{prefix}/")]
    assert batch.status == "AUDIT_FAILED" and {r.status for r in records} == {"AUDIT_FAILED"}
    return batch, records


def test_a_failed_dataset_is_reviewed_and_published_whole_by_its_branch(
    dataset_stack, nessie, nessie_client
):
    stack, _calls = dataset_stack
    backend = StackBackend(stack, nessie)
    batch, records = failed_dataset(stack, "run-9")

    [branch] = [b for b in ops.list_branches(backend) if b.name == batch.branch]
    assert (branch.ingest_id, branch.status) == (batch.ingest_id, "AUDIT_FAILED")
    found = ops.find_ingest(backend, batch.branch)  # `wap show BRANCH` (no row counts here:
    assert found.ingest_id == batch.ingest_id  # the stand-in job writes no table)
    report = ops.read_report(backend, found)
    assert [(v.uri.rsplit("/", 1)[-1], v.status) for v in report.sources] == [
        ("part-0.parquet", "passed"),
        ("part-1-fail.parquet", "failed"),
    ]
    # One file of a dataset is never published alone.
    with pytest.raises(NotAllowedError, match=f"wap publish {batch.ingest_id}"):
        ops.publish(backend, records[0].ingest_id, reason="looks fine", actor="dana")

    ops.publish(backend, batch.branch, reason="the amounts are refunds", actor="dana")

    ledger = stack.ledger()
    assert ledger.get_ingest(batch.ingest_id).status == "PUBLISHED"
    for record in records:
        member = ledger.get_ingest(record.ingest_id)
        assert (member.status, member.published_by) == ("PUBLISHED", "dana"), member
    assert table_on(nessie_client, "main", TABLE) is not None
    assert not branch_exists(nessie_client, batch.branch)


def test_a_failed_dataset_is_discarded_whole(dataset_stack, nessie, nessie_client):
    stack, _calls = dataset_stack
    backend = StackBackend(stack, nessie)
    batch, records = failed_dataset(stack, "run-10")
    with pytest.raises(NotAllowedError, match=f"wap discard {batch.ingest_id}"):
        ops.discard(backend, records[1].ingest_id, actor="dana")

    ops.discard(backend, batch.ingest_id, actor="dana", reason="re-exporting")

    ledger = stack.ledger()
    statuses = [ledger.get_ingest(r.ingest_id).status for r in records]
    assert [ledger.get_ingest(batch.ingest_id).status, *statuses] == ["DISCARDED"] * 3
    assert not branch_exists(nessie_client, batch.branch)


def test_a_dataset_with_an_unreadable_part_is_rejected_whole(dataset_stack, nessie_client):
    stack, _calls = dataset_stack
    before = table_on(nessie_client, "main", TABLE)
    keys = drop_parts(stack, "run-3", ["part-0.parquet", "part-1-reject.parquet"])
    stack.drop_file("ds/orders/run-3/_SUCCESS", b"")
    records = [wait_for_key(stack, key) for key in keys]
    assert [r.status for r in records] == ["REJECTED"] * 2
    assert table_on(nessie_client, "main", TABLE) == before


def test_a_manifest_naming_a_missing_file_is_rejected_with_an_alert(
    dataset_stack, slack, monkeypatch
):
    emitted = io.StringIO()  # the functions' embedded metrics (their log)
    monkeypatch.setattr(metrics, "_log_stream", lambda: emitted)
    stack, calls = dataset_stack
    keys = drop_parts(stack, "run-4", ["part-0.parquet"])
    manifest = {
        "files": [
            {"path": "part-0.parquet", "size": len(fake_parquet(keys[0]))},
            {"path": "part-1.parquet", "size": 10},
        ]
    }
    stack.drop_file("ds/orders/run-4/_manifest.json", json.dumps(manifest).encode())
    [record] = [wait_for_key(stack, key) for key in keys]
    stack.wait_idle()

    assert record.status == "REJECTED" and "lists ds/orders/run-4/part-1.parquet" in (record.error)
    assert calls == []
    batch = the_batch(stack)
    assert batch.status == "REJECTED" and "does not exist" in batch.error
    [alert] = slack.messages
    assert "part-1.parquet" in json.dumps(alert)
    # One rejected run of the table in the outcome metrics, with the one file that came.
    [counted] = [
        json.loads(line) for line in emitted.getvalue().splitlines() if '"Rejected"' in line
    ]
    assert (counted["Table"], counted["Rejected"], counted["FilesPerRun"]) == ("ds.orders", 1, 1)


def test_a_manifest_whose_size_differs_is_rejected(dataset_stack):
    stack, calls = dataset_stack
    keys = drop_parts(stack, "run-5", ["part-0.parquet"])
    manifest = {"files": [{"path": "part-0.parquet", "size": 1}]}
    stack.drop_file("ds/orders/run-5/_manifest.json", json.dumps(manifest).encode())
    record = wait_for_key(stack, keys[0])
    assert record.status == "REJECTED" and "with 1 bytes" in record.error
    assert calls == []


def test_a_manifest_takes_a_listed_part_whose_own_event_is_late(dataset_stack):
    stack, calls = dataset_stack
    # part-1 is in S3 but its event has not reached the trigger (events are unordered).
    stack.client("events").disable_rule(Name="wap-source-object-created")
    late = "ds/orders/run-6/part-1.parquet"
    stack.client("s3").put_object(
        Bucket=stack.settings.source_bucket, Key=late, Body=fake_parquet(late)
    )
    stack.client("events").enable_rule(Name="wap-source-object-created")
    keys = [*drop_parts(stack, "run-6", ["part-0.parquet"]), late]
    manifest = {
        "files": [{"path": k.rsplit("/", 1)[-1], "size": len(fake_parquet(k))} for k in keys]
    }
    stack.drop_file("ds/orders/run-6/_manifest.json", json.dumps(manifest).encode())
    assert [wait_for_key(stack, key).status for key in keys] == ["PUBLISHED"] * 2
    [run] = calls
    assert len(run["sources"]) == 2


def test_held_parts_whose_marker_never_comes_are_rejected_after_the_timeout(dataset_stack, slack):
    stack, calls = dataset_stack
    keys = drop_parts(stack, "run-7", ["part-0.parquet", "part-1.parquet"])
    assert stack.invoke("sweeper", {})["expired_held"] == []  # not yet
    ledger = stack.ledger()
    day_ago = (datetime.now(UTC) - timedelta(hours=25)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for key in keys:
        ledger.update_ingest(record_for_key(stack, key).ingest_id, {"created_at": day_ago})

    swept = stack.invoke("sweeper", {})

    assert len(swept["expired_held"]) == 2
    records = [record_for_key(stack, key) for key in keys]
    assert [r.status for r in records] == ["REJECTED"] * 2
    assert "no _SUCCESS or _manifest.json arrived in ds/orders/run-7/" in records[0].error
    assert len(slack.messages) == 1  # one alert for the dataset
    assert calls == []


def test_markers_of_other_tables_are_still_ignored(make_stack):
    stack = make_stack()
    stack.drop_file("plain/orders/run-1/_SUCCESS", b"")
    stack.wait_idle()
    assert stack.ledger().list_batches() == [] and stack.ledger().list_ingests() == []


def test_a_manifest_of_csv_parts_is_read_as_its_table_format(make_stack, nessie, tmp_path):
    """The parts the marker records itself (a late event) are read as the table's
    `format:` too: `.txt` parts of a `format: csv` table."""
    (tmp_path / "ds.text.yaml").write_text("arrival: marker\nformat: csv\n")
    calls: list[dict[str, Any]] = []
    stack = make_stack(job=standin_job(nessie.api_v1, calls), tables_dir=tmp_path)
    body = b"id,amount\n1,2.5\n"
    first = "ds/text/run-1/part-0.txt"
    stack.drop_file(first, body)
    _wait_status(stack, first, "HELD")
    stack.client("events").disable_rule(Name="wap-source-object-created")
    late = "ds/text/run-1/part-1.txt"
    stack.client("s3").put_object(Bucket=stack.settings.source_bucket, Key=late, Body=body)
    stack.client("events").enable_rule(Name="wap-source-object-created")
    manifest = {"files": [{"path": k.rsplit("/", 1)[-1], "size": len(body)} for k in (first, late)]}
    stack.drop_file("ds/text/run-1/_manifest.json", json.dumps(manifest).encode())

    assert [wait_for_key(stack, key).status for key in (first, late)] == ["PUBLISHED"] * 2
    [run] = calls
    assert sorted(uri.rsplit("/", 1)[-1] for uri in run["sources"]) == ["part-0.txt", "part-1.txt"]
