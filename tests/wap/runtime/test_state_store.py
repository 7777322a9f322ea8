"""The home keeps what moto forgets: ledger items and objects survive a restart of moto."""

from __future__ import annotations

import json
from decimal import Decimal

import boto3
from moto import mock_aws

from ingestion.ledger import Ledger
from local.aws.stack import create_ledger_table
from tests.fixtures.fake_aws import use_fake_credentials
from tests.fixtures.ledger_items import ledger_item
from tests.fixtures.paths import REPO
from wap.runtime.home import WapHome
from wap.runtime.state_store import INTERRUPTED_REASON, StateStore, StoredBucket

BUCKETS = (StoredBucket("src"), StoredBucket("art", ("reports/",)))


def _resources():
    dynamodb = boto3.resource("dynamodb", region_name="us-east-1")
    create_ledger_table(dynamodb.meta.client, "ledger")
    s3 = boto3.client("s3", region_name="us-east-1")
    for bucket in ("src", "art"):
        s3.create_bucket(Bucket=bucket)
    s3.put_bucket_notification_configuration(
        Bucket="src", NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    return dynamodb, s3


def test_ledger_and_objects_survive_and_unfinished_ingests_are_marked_interrupted(
    tmp_path, monkeypatch
):
    use_fake_credentials(monkeypatch)
    home = WapHome(tmp_path / "home").create()

    with mock_aws():
        dynamodb, s3 = _resources()
        store = StateStore(home, ledger_table="ledger", buckets=BUCKETS)
        store.restore(dynamodb, s3, recover_interrupted=True)
        ledger = Ledger("ledger", dynamodb)
        ledger.create_ingest(
            "a" * 16, {"table": "ns.t", "status": "PUBLISHED", "rows_written": 3, "ratio": 0.25}
        )
        ledger.create_ingest("b" * 16, {"table": "ns.t", "status": "RUNNING"})
        ledger.acquire_or_enqueue("ns.t", "b" * 16)
        s3.put_object(Bucket="src", Key="ns/t/f.parquet", Body=b"PAR1 data PAR1")
        s3.put_object(Bucket="art", Key="reports/ns.t/r.json", Body=b"{}")
        s3.put_object(Bucket="art", Key="tables/ns.t.yaml", Body=b"checks: []")
        store.save(dynamodb, s3)
        store.close()

    with mock_aws():
        dynamodb, s3 = _resources()
        store = StateStore(home, ledger_table="ledger", buckets=BUCKETS)
        interrupted = store.restore(dynamodb, s3, recover_interrupted=True)
        ledger = Ledger("ledger", dynamodb)
        done, running = ledger.get_ingest("a" * 16), ledger.get_ingest("b" * 16)
        body = s3.get_object(Bucket="src", Key="ns/t/f.parquet")["Body"].read()
        report = s3.get_object(Bucket="art", Key="reports/ns.t/r.json")["Body"].read()
        art_keys = [o["Key"] for o in s3.list_objects_v2(Bucket="art")["Contents"]]
        lock = ledger.get_lock("ns.t")
        store.close()

    assert interrupted == ["b" * 16]
    assert done.status == "PUBLISHED" and done.rows_written == 3 and done.extra["ratio"] == 0.25
    assert running.status == "JOB_FAILED" and running.error == INTERRUPTED_REASON
    assert body == b"PAR1 data PAR1" and report == b"{}"
    assert art_keys == ["reports/ns.t/r.json"]  # tables/ is uploaded fresh on every start
    assert lock.active is None and lock.queue == []


KILLED = """
import os, signal, sys
from pathlib import Path
import json
from decimal import Decimal

import boto3
from moto import mock_aws
sys.path.insert(0, {repo!r})
from ingestion.ledger import Ledger
from wap.runtime.home import WapHome
from wap.runtime.state_store import StateStore
from tests.wap.runtime.test_state_store import BUCKETS, _resources

home = WapHome(Path({home!r}))
with mock_aws():
    dynamodb, s3 = _resources()
    store = StateStore(home, ledger_table="ledger", buckets=BUCKETS)
    store.restore(dynamodb, s3, recover_interrupted=True)
    ledger = Ledger("ledger", dynamodb)
    ledger.create_ingest("c" * 16, {{"table": "ns.t", "status": "RECEIVED"}})
    ledger.acquire_or_enqueue("ns.t", "c" * 16)
    ledger.update_ingest("c" * 16, {{"status": "RUNNING", "audited_snapshot_id": {snapshot}}})
    ledger.create_ingest("d" * 16, {{"table": "ns.u", "status": "RUNNING"}})
    os.kill(os.getpid(), signal.SIGKILL)  # no save, no close: as `kill -9 wap`
"""


def test_a_killed_command_loses_no_ledger_write_and_a_merged_ingest_is_published(
    tmp_path, monkeypatch, nessie
):
    import subprocess
    import sys

    from tests.fixtures.catalog_auth import harness_auth, harness_client
    from tests.fixtures.standin_job import commit_table_on_branch, snapshot_of

    use_fake_credentials(monkeypatch)
    home = WapHome(tmp_path / "home").create()
    # Main holds c's audited snapshot: the merge went through, the recording did not.
    commit_table_on_branch(nessie.api_v1, "ns.t", "main", "c" * 16, auth=harness_auth(nessie))
    repo = str(REPO)
    script = KILLED.format(repo=repo, home=str(home.root), snapshot=snapshot_of("c" * 16))
    killed = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert killed.returncode == -9, killed.stderr

    with mock_aws():
        dynamodb, s3 = _resources()
        store = StateStore(home, ledger_table="ledger", buckets=BUCKETS)
        interrupted = store.restore(
            dynamodb, s3, recover_interrupted=True, nessie=harness_client(nessie, nessie.api_v1)
        )
        ledger = Ledger("ledger", dynamodb)
        merged, cut = ledger.get_ingest("c" * 16), ledger.get_ingest("d" * 16)
        store.close()

    assert sorted(interrupted) == ["c" * 16, "d" * 16]
    # The error is cleared as the ledger clears a field: the attribute is gone, not null.
    assert merged.status == "PUBLISHED" and merged.error is None
    assert cut.status == "JOB_FAILED" and cut.error == INTERRUPTED_REASON
    assert ledger_rows(home) == 2  # the lock item the kill left is dropped


def ledger_rows(home: WapHome) -> int:
    from wap.runtime.state_store import read_ledger_items

    return len(read_ledger_items(home))


def test_keys_that_would_escape_the_home_are_not_written(tmp_path, monkeypatch):
    use_fake_credentials(monkeypatch)
    home = WapHome(tmp_path / "home").create()
    with mock_aws():
        dynamodb, s3 = _resources()
        s3.put_object(Bucket="src", Key="ns/../../../escape.parquet", Body=b"x")
        s3.put_object(Bucket="src", Key="ns/t/ok.parquet", Body=b"y")
        StateStore(home, ledger_table="ledger", buckets=BUCKETS).save(dynamodb, s3)

    assert not list(tmp_path.rglob("escape.parquet"))
    assert (home.objects / "src" / "ns" / "t" / "ok.parquet").read_bytes() == b"y"


def test_a_home_from_before_the_ledger_database_is_imported_once(tmp_path):
    from wap.runtime.state_store import read_ledger_items

    home = WapHome(tmp_path / "home").create()
    item = ledger_item(
        "c" * 16,
        table="ns.t",
        status="PUBLISHED",
        ratio=0.5,
    )
    home.ledger_file.write_text(json.dumps([item]))

    for _ in range(2):  # the second open finds the file renamed: nothing imported again
        StateStore(home, ledger_table="ledger", buckets=BUCKETS).close()

    assert read_ledger_items(home) == [{**item, "ratio": Decimal("0.5")}]
    assert not home.ledger_file.exists()
    assert home.ledger_file.with_name("ledger.json.imported").is_file()
