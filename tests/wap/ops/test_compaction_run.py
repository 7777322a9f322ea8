"""Compaction as Write-Audit-Publish on a lake the real flow wrote: local stack, real PySpark
job and Iceberg procedure, our Nessie server. It holds the table like an ingest (an ingest
that arrives meanwhile queues, then runs, and both land), and it publishes only when the
content is unchanged: in-process as `wap maintain` runs it (wap/ops/compaction.py), and as
on AWS, where the maintenance Lambda (its role, every call evaluated) starts the job's
compaction mode on EMR Serverless (the local double runs the deployed archive) and
publishes when it ended (ingestion/compaction_runs.py). One module: one lake for all
(every ingest costs seconds of Spark)."""

from __future__ import annotations

import json
import time

import pytest

from contracts.table_config import MaintenanceOptions
from ingestion.lineage.events import run_id as lineage_run_id
from local.lineage_receiver import LineageReceiver
from tests.fixtures.faulty_rewrites import drop_one_data_file
from tests.fixtures.local_stack import wait_for_key, wait_for_status
from tests.fixtures.spark_stack import spark_lake
from wap.exceptions import NotAllowedError
from wap.ops.compaction import (
    SOURCE,
    compact_table,
    compact_via_lambda,
    lambda_invoker,
    line_of,
    stack_hooks,
)

pytestmark = pytest.mark.slow

TABLE = "cmp.sales"
DROPS = 4
OPTIONS = MaintenanceOptions(min_files=2)


@pytest.fixture(scope="module")
def cmp_lake(lake, nessie, tmp_path_factory):
    """DROPS published ingests of one row each into cmp.sales: DROPS data files on main.
    The stack sends OpenLineage events to a receiver (`cmp_lake.lineage`)."""
    receiver = LineageReceiver().start()
    try:
        with spark_lake(
            lake,
            nessie,
            tmp_path_factory,
            {TABLE: "batch: {max_files: 1}\nmaintenance: {min_files: 2}\n"},
            lineage_url=receiver.url,
        ) as built:
            built.lineage = receiver
            for i in range(DROPS):
                assert built.ingest(TABLE, f"drop{i}", [(i, float(i))]).status == "PUBLISHED"
            yield built
    finally:
        receiver.stop()


def main_state(lake, cmp_lake) -> tuple[int, list[tuple]]:
    """(data files, sorted rows) of cmp.sales on main, read by Spark's NessieCatalog."""
    lake._jsparkSession.sessionState().catalogManager().reset()  # no cached table
    files = lake.sql(f"SELECT count(*) FROM lake.{TABLE}.files").collect()[0][0]
    rows = sorted(tuple(r) for r in lake.sql(f"SELECT * FROM lake.{TABLE}").collect())
    return files, rows


def run(cmp_lake, lake, **kwargs):
    alert, start_next = stack_hooks(cmp_lake.stack, cmp_lake.stack.ledger(), cmp_lake.nessie)
    return compact_table(
        ledger=cmp_lake.stack.ledger(),
        nessie=cmp_lake.nessie,
        spark=lake,
        table=TABLE,
        options=OPTIONS,
        alert=alert,
        start_next=start_next,
        **kwargs,
    )


def dropping_one_file(spark, catalog, table, options):
    """A broken rewrite: every row but those of one data file."""
    drop_one_data_file(spark, f"{catalog}.{table}")
    return {}


def test_a_rewrite_that_drops_a_file_is_not_published_and_alerts(cmp_lake, lake):
    main_before = cmp_lake.nessie.main_hash()
    files_before, rows_before = main_state(lake, cmp_lake)
    alerts_before = len(cmp_lake.slack.messages)

    sent: list = []
    done = run(cmp_lake, lake, rewrite=dropping_one_file, lineage=sent.extend)

    assert done.status == "AUDIT_FAILED"
    # Its OpenLineage run (issue 29): START, then FAIL with the reason, as job compaction.<t>.
    assert [(e.eventType.value, e.job.name) for e in sent] == [
        ("START", f"compaction.{TABLE}"),
        ("FAIL", f"compaction.{TABLE}"),
    ]
    assert "after" in sent[1].run.facets["errorMessage"].message
    assert f"{DROPS} before, {DROPS - 1} after" in done.reason
    assert cmp_lake.nessie.main_hash() == main_before
    assert main_state(lake, cmp_lake) == (files_before, rows_before)
    assert cmp_lake.nessie.branch_hash(done.branch) is not None  # left for inspection
    record = cmp_lake.stack.ledger().get_ingest(done.run_id)
    assert (record.status, record.source_uri, record.branch) == (
        "AUDIT_FAILED",
        SOURCE,
        done.branch,
    )
    alerts = cmp_lake.slack.messages[alerts_before:]
    assert len(alerts) == 1 and TABLE in alerts[0]["text"]
    assert cmp_lake.stack.ledger().get_lock(TABLE).active is None  # the table is free again


def test_compaction_publishes_and_an_ingest_queued_meanwhile_runs_after_it(cmp_lake, lake):
    files_before, rows_before = main_state(lake, cmp_lake)
    assert files_before == DROPS
    queued: dict[str, str] = {}

    def meanwhile() -> None:
        queued["key"] = cmp_lake.drop(TABLE, "meanwhile", [(99, 9.9)])
        wait_for_status(cmp_lake.stack, queued["key"], "QUEUED")

    sent: list = []
    done = run(cmp_lake, lake, meanwhile=meanwhile, lineage=sent.extend)
    late = wait_for_key(cmp_lake.stack, queued["key"], timeout=300)
    cmp_lake.stack.wait_idle(timeout=300)

    assert done.status == "PUBLISHED", done.reason
    assert (done.verdict.files_before, done.verdict.files_after) == (DROPS, 1)
    assert late.status == "PUBLISHED"
    compacted = cmp_lake.stack.ledger().get_ingest(done.run_id)
    assert compacted.finished_at <= late.job_started_at  # it ran after the compaction
    files_after, rows_after = main_state(lake, cmp_lake)
    assert rows_after == sorted([*rows_before, (99, 9.9)])  # both landed
    assert files_after == 2  # the compacted file and the late ingest's
    assert cmp_lake.nessie.branch_hash(done.branch) is None
    assert [e.eventType.value for e in sent] == ["START", "COMPLETE"]
    [table] = sent[1].outputs
    assert table.facets["wap_nessie"].reference == "main"
    assert table.facets["wap_nessie"].hash == done.main_hash


def test_a_busy_table_is_refused(cmp_lake, lake):
    ledger = cmp_lake.stack.ledger()
    ledger.create_ingest("00000000000000aa", {"table": TABLE, "status": "RECEIVED"})
    assert ledger.acquire_or_enqueue(TABLE, "00000000000000aa") == "ACTIVE"
    try:
        with pytest.raises(NotAllowedError, match="busy"):
            run(cmp_lake, lake)
    finally:
        ledger.release(TABLE, "00000000000000aa")


# ---- on AWS: the maintenance Lambda and the job's compaction mode ---------------------------


def maintenance_calls(cmp_lake) -> tuple[set[str], list]:
    """The actions the maintenance Lambda's role was allowed, and those it was denied."""
    iam = cmp_lake.stack.iam
    return (
        {r.action for r in iam.records if r.principal == "maintenance"},
        [r for r in iam.denied if r.principal == "maintenance"],
    )


def test_on_aws_a_rewrite_that_drops_a_file_is_not_published_and_alerts(
    cmp_lake, lake, monkeypatch
):
    files_before, rows_before = main_state(lake, cmp_lake)
    assert files_before >= 2  # the tests above leave at least two
    alerts_before = len(cmp_lake.slack.messages)
    # The job the EMR double runs is the deployed archive's: break its rewrite there.
    job = cmp_lake.stack.settings.job
    monkeypatch.setattr(job.module.compaction, "iceberg_rewrite", dropping_one_file)
    invoke = lambda_invoker(cmp_lake.stack.client("lambda"), "maintenance")
    queued: dict[str, str] = {}

    def invoke_and_drop(event: dict) -> dict:
        answer = invoke(event)
        if event["action"] == "compact":  # the job runs and the table is held: it queues
            queued["key"] = cmp_lake.drop(TABLE, "meanwhile-failed", [(88, 8.8)])
            wait_for_status(cmp_lake.stack, queued["key"], "QUEUED")
        return answer

    # `wap --aws maintain`'s path: compact, then compact_finish until the outcome.
    done = compact_via_lambda(invoke_and_drop, TABLE, poll_seconds=0.2, timeout=300)
    late = wait_for_key(cmp_lake.stack, queued["key"], timeout=300)
    cmp_lake.stack.wait_idle(timeout=300)

    assert done["status"] == "AUDIT_FAILED", done
    assert f"{len(rows_before)} before, {len(rows_before) - 1} after" in done["reason"]
    assert "nothing was published" in line_of(done)
    # Nothing of it reached main: the ingest that waited behind it added its file and row.
    assert late.status == "PUBLISHED"
    assert main_state(lake, cmp_lake) == (files_before + 1, sorted([*rows_before, (88, 8.8)]))
    assert cmp_lake.nessie.branch_hash(done["branch"]) is not None  # left for inspection
    record = cmp_lake.stack.ledger().get_ingest(done["run_id"])
    assert (record.status, record.source_uri) == ("AUDIT_FAILED", SOURCE)
    alerts = cmp_lake.slack.messages[alerts_before:]
    assert len(alerts) == 1 and TABLE in alerts[0]["text"]
    assert cmp_lake.stack.ledger().get_lock(TABLE).active is None
    allowed, denied = maintenance_calls(cmp_lake)
    assert {
        "emr-serverless:StartJobRun",
        "iam:PassRole",
        "emr-serverless:GetJobRun",
        "secretsmanager:GetSecretValue",
        "states:StartExecution",
    } <= allowed
    assert denied == []


def daily_compactions(cmp_lake, data_files: dict[str, int]) -> dict[str, list[str]]:
    """The daily run's compaction part, as the maintenance Lambda runs it after garbage
    collection (in its sandbox: its environment and role), given main's data files."""
    from ingestion.config import load_settings
    from ingestion.ledger import Ledger
    from ingestion.nessie import client_for
    from lambdas.maintenance.compaction import daily
    from lambdas.maintenance.service import table_maintenance

    with cmp_lake.stack.dispatcher.sandboxes["maintenance"].running():
        settings = load_settings()
        return daily(
            settings,
            Ledger(settings.ledger_table, lease=settings.lock_lease),
            client_for(settings),  # the maintenance Lambda's client (its role)
            data_files,
            table_maintenance(settings, sorted(data_files)),
        )


def test_the_daily_run_compacts_with_the_job_the_sweep_publishes_and_the_queued_ingest_runs(
    cmp_lake, lake
):
    files_before, rows_before = main_state(lake, cmp_lake)

    # The table reaches its `min_files` (2): the day's run starts a compaction ...
    started = daily_compactions(cmp_lake, {TABLE: files_before})
    assert started["finished"] == [] and len(started["started"]) == 1
    run_id = started["started"][0]
    # ... which holds the table while its job runs: an upload queues behind it.
    key = cmp_lake.drop(TABLE, "meanwhile-aws", [(77, 7.7)])
    wait_for_status(cmp_lake.stack, key, "QUEUED")
    # The sweeper (every 5 minutes) concludes it once the job ended, as its own role.
    deadline = time.monotonic() + 300
    while (swept := cmp_lake.stack.invoke("sweeper", {})) and (
        cmp_lake.stack.ledger().get_ingest(run_id).status == "RUNNING"
    ):
        assert time.monotonic() < deadline, swept
        time.sleep(0.2)
    assert swept["recovered_locks"] == [TABLE] and swept["errors"] == []
    late = wait_for_key(cmp_lake.stack, key, timeout=300)
    cmp_lake.stack.wait_idle(timeout=300)
    # A daily run now finds nothing left to finish (and, told one file on main, starts none).
    assert daily_compactions(cmp_lake, {TABLE: 1}) == {"finished": [], "started": []}

    invoke = lambda_invoker(cmp_lake.stack.client("lambda"), "maintenance")
    done = invoke({"action": "compact_finish", "run_id": run_id})  # the recorded outcome
    assert done["status"] == "PUBLISHED", done
    assert (done["files_before"], done["files_after"]) == (files_before, 1)
    assert line_of(done).startswith(f"PUBLISHED {TABLE}: {files_before} -> 1 data files")
    assert late.status == "PUBLISHED"
    compacted = cmp_lake.stack.ledger().get_ingest(run_id)
    assert compacted.finished_at <= late.job_started_at  # it ran after the compaction
    assert main_state(lake, cmp_lake) == (2, sorted([*rows_before, (77, 7.7)]))
    assert cmp_lake.nessie.branch_hash(done["branch"]) is None
    # Main moved by merging exactly the head the job audited (its result names it).
    bucket, key = compacted.field_value("compaction_report_uri")[5:].split("/", 1)
    result = json.loads(
        cmp_lake.stack.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    )
    assert compacted.audited_hash == result["head_hash"] and result["passed"] is True
    assert compacted.published_hash == done["main_hash"]
    iam = cmp_lake.stack.iam
    assert [r for r in iam.denied if r.principal in ("maintenance", "sweeper")] == []
    # Its OpenLineage run, as `wap maintain` sends it: START, then COMPLETE at main's hash.
    sent = cmp_lake.lineage.events_of(lineage_run_id(run_id))
    assert [(e["eventType"], e["job"]["name"]) for e in sent] == [
        ("START", f"compaction.{TABLE}"),
        ("COMPLETE", f"compaction.{TABLE}"),
    ]
    assert sent[1]["outputs"][0]["facets"]["wap_nessie"]["hash"] == done["main_hash"]
