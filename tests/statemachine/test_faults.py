"""Faults found outside the suite (issue 30): each gets its outcome at once, never a stall."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.fixtures.local_stack import fake_parquet, wait_for_key, wait_for_status
from tests.fixtures.standin_job import standin_job

BROKEN_YAML = "checks:\n  - name: amount_positive\n    kind: range\n   columns: [amount]\n"


def _put_config(stack, table: str, text: str) -> None:
    stack.client("s3").put_object(
        Bucket=stack.settings.artifacts_bucket, Key=f"tables/{table}.yaml", Body=text.encode()
    )


def test_a_table_config_that_is_not_yaml_rejects_the_upload_at_once_and_frees_the_table(
    make_stack, slack, tmp_path
):
    (tmp_path / "cfg.orders.yaml").write_text(BROKEN_YAML)
    stack = make_stack(tables_dir=tmp_path)
    stack.drop_file("cfg/orders/a.parquet", fake_parquet("ca"))
    record = wait_for_key(stack, "cfg/orders/a.parquet", timeout=20)

    assert record.status == "REJECTED", stack.describe()
    assert record.reason_code == "config_error"
    assert "not valid YAML" in record.error and "line 4, column 4" in record.error
    assert stack.emr.started_runs == []
    stack.wait_idle(timeout=30)  # the trigger alerts after it recorded the rejection
    assert len(slack.messages) == 1 and "line 4, column 4" in json.dumps(slack.messages[0])
    assert stack.ledger().get_lock("cfg.orders").active is None

    _put_config(stack, "cfg.orders", "batch: {max_files: 2}\n")  # fixed: the next file runs
    stack.drop_file("cfg/orders/b.parquet", fake_parquet("cb"))
    assert wait_for_key(stack, "cfg/orders/b.parquet").status == "PUBLISHED"


@pytest.mark.parametrize(
    ("table", "config", "messages"),
    [
        # A bad batch setting is a config error, not one file per run.
        pytest.param(
            "cfgb.orders", "batch: {max_files: many}\n", ["batch", "max_files"], id="batch"
        ),
        # A check the job would refuse is refused before any run.
        pytest.param(
            "cfgc.orders",
            "checks:\n  - {kind: no_such_check, column: a}\n",
            ["checks[0]: unknown check kind 'no_such_check'"],
            id="check",
        ),
    ],
)
def test_a_config_the_job_would_refuse_is_a_config_error_before_any_run(
    make_stack, slack, tmp_path, table, config, messages
):
    (tmp_path / f"{table}.yaml").write_text(config)
    stack = make_stack(tables_dir=tmp_path)
    key = f"{table.replace('.', '/')}/a.parquet"
    stack.drop_file(key, fake_parquet(table))
    record = wait_for_key(stack, key, timeout=20)

    assert record.status == "REJECTED" and record.reason_code == "config_error"
    for message in messages:
        assert message in record.error
    assert stack.emr.started_runs == []
    assert stack.ledger().get_lock(table).active is None


def test_a_config_broken_while_files_queue_rejects_them_at_the_hand_off(
    make_stack, nessie, slack, tmp_path
):
    inner = standin_job(nessie.api_v1)
    gate = threading.Event()

    def gated(argv: list[str]):
        gate.wait(30)
        return inner(argv)

    (tmp_path / "cfgq.orders.yaml").write_text("batch: {max_files: 5}\n")
    stack = make_stack(job=gated, tables_dir=tmp_path)
    stack.drop_file("cfgq/orders/a.parquet", fake_parquet("qa"))
    wait_for_status(stack, "cfgq/orders/a.parquet", "RUNNING")
    for name in ("b", "c"):
        stack.drop_file(f"cfgq/orders/{name}.parquet", fake_parquet(f"q{name}"))
        wait_for_status(stack, f"cfgq/orders/{name}.parquet", "QUEUED")
    _put_config(stack, "cfgq.orders", BROKEN_YAML)
    gate.set()
    a = wait_for_key(stack, "cfgq/orders/a.parquet")
    queued = [wait_for_key(stack, f"cfgq/orders/{name}.parquet", timeout=20) for name in "bc"]
    stack.wait_idle()

    assert a.status == "PUBLISHED"
    assert [(r.status, r.reason_code) for r in queued] == [("REJECTED", "config_error")] * 2
    assert len(stack.emr.started_runs) == 1  # no run for a file its config refuses
    assert len(slack.messages) == 2
    assert stack.ledger().get_lock("cfgq.orders").active is None


def test_a_table_blocked_by_a_nessie_outage_is_alerted_once_and_runs_when_nessie_is_back(
    make_stack, slack, monkeypatch
):
    from ingestion.exceptions import NessieUnavailableError
    from ingestion.nessie import NessieClient

    down = threading.Event()
    down.set()
    original = NessieClient.ensure_branch_from_main

    def outage(self, branch: str) -> str:
        if down.is_set():
            raise NessieUnavailableError("Nessie unreachable (injected outage)")
        return original(self, branch)

    monkeypatch.setattr(NessieClient, "ensure_branch_from_main", outage)
    # The schedule and the bound in seconds, not minutes: the same sweeper, scaled.
    stack = make_stack(blocked_start_seconds=1, sweeper_every_seconds=0.5)
    stack.drop_file("out/orders/a.parquet", fake_parquet("oa"))
    deadline = time.monotonic() + 30
    while not any("out.orders" in json.dumps(m) for m in slack.messages):
        assert time.monotonic() < deadline, ("no alert for the blocked table", stack.describe())
        time.sleep(0.1)
    [alert] = slack.messages
    text = json.dumps(alert)
    assert "Table blocked: out.orders" in text and "Nessie unreachable" in text
    assert stack.ledger().get_lock("out.orders").active is not None  # (still its file's)

    time.sleep(1.5)  # more sweeps while Nessie is down: no second alert
    assert len(slack.messages) == 1
    down.clear()
    assert wait_for_key(stack, "out/orders/a.parquet", timeout=30).status == "PUBLISHED"
    assert len(slack.messages) == 1


def test_the_emr_double_hands_the_job_each_object_under_its_own_name(make_stack, nessie, tmp_path):
    calls: list[dict] = []
    stack = make_stack(job=standin_job(nessie.api_v1, calls))
    key = "gl/orders/export[1] {a,b}*.parquet"
    stack.drop_file(key, fake_parquet("gl"))
    assert wait_for_key(stack, key).status == "PUBLISHED"

    [call] = calls
    [source] = call["sources"]
    # As EMR reads the staged s3:// object: the name as uploaded, in a raw URI.
    assert source.startswith("file://") and source.endswith("/export[1] {a,b}*.parquet")
