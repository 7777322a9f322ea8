"""Plain functions of the handlers: config, report reading, finishing, rejection reasons."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from contracts.state import ExecutionState
from ingestion import aws
from ingestion.config import load_settings
from ingestion.exceptions import ConfigError
from lambdas.finish.service import final_status, reason_from_error
from lambdas.job_status.service import outcome_from_report
from lambdas.trigger.events import ObjectCreated
from lambdas.trigger.service import rejection_reason
from tests.fixtures.fake_aws import use_fake_credentials

BASE_ENV = {
    "WAP_LEDGER_TABLE": "ledger",
    "WAP_NESSIE_URI": "http://nessie:19120/api/v1/",
    "WAP_EMR_APPLICATION_ID": "app",
    "WAP_EMR_EXECUTION_ROLE_ARN": "arn:aws:iam::1:role/r",
    "WAP_JOB_ENTRYPOINT": "s3://a/wap_job.py",
    "WAP_REPORTS_PREFIX": "s3://a/reports",
    "WAP_LOGS_PREFIX": "s3://a/logs/",
    "WAP_STATE_MACHINE_ARN": "arn:aws:states:x",
    "WAP_ARTIFACTS_BUCKET": "a",
}


def test_settings_defaults_and_derived_uris():
    settings = load_settings(BASE_ENV)
    assert settings.nessie_uri == "http://nessie:19120/api/v1"
    assert (
        settings.max_publish_attempts,
        settings.branch_retention_days,
        settings.job_timeout_minutes,
    ) == (3, 14, 60)
    assert settings.report_uri("s.t", "0" * 16, 2) == (
        "s3://a/reports/s.t/0000000000000000/attempt-2/report.json"
    )
    assert settings.table_config_uri("s.t") is None
    assert settings.create_tables_from_uploads is False
    assert (
        load_settings(
            {**BASE_ENV, "WAP_CREATE_TABLES_FROM_UPLOADS": "true"}
        ).create_tables_from_uploads
        is True
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"WAP_LEDGER_TABLE": ""}, "WAP_LEDGER_TABLE"),
        ({"WAP_MAX_PUBLISH_ATTEMPTS": "three"}, "must be an integer"),
        ({"WAP_BRANCH_RETENTION_DAYS": "0"}, "must be >= 1"),
        ({"WAP_REPORTS_PREFIX": "/tmp/reports"}, "s3:// URI"),
        ({"WAP_CREATE_TABLES_FROM_UPLOADS": "yes please"}, "true or false"),
    ],
)
def test_settings_are_validated(change, message):
    with pytest.raises(ConfigError, match=message):
        load_settings({**BASE_ENV, **change})


@pytest.fixture
def s3(monkeypatch):
    use_fake_credentials(monkeypatch, "us-east-1")
    with mock_aws():
        aws.reset()
        client = boto3.client("s3")
        client.create_bucket(Bucket="reports")
        yield client
    aws.reset()


def _report(**fields) -> dict:
    return {
        "report_version": 1,
        "ingest_id": "0123456789abcdef",
        "table": "s.t",
        "branch": "wap_s_t_20261122T101500_01234567",
        "branch_hash": "abc",
        "snapshot_id": 1234567890123456789,
        "rows_written": 5,
        "checks": [],
        "reason": None,
        "outcome": "passed",
        **fields,
    }


def test_report_outcomes_map_to_statuses(s3):
    cases = {
        "passed": (_report(), "PASSED"),
        "failed": (_report(outcome="failed", reason="check x failed"), "AUDIT_FAILED"),
        "rejected": (_report(outcome="rejected", reason="corrupt", branch_hash=None), "REJECTED"),
        "odd": (_report(outcome="maybe"), "JOB_FAILED"),
        "nohash": (_report(branch_hash=None), "JOB_FAILED"),
        "nosnapshot": (_report(snapshot_id=None), "JOB_FAILED"),
        "error": (_report(outcome="error", reason="job error: Nessie unreachable"), "JOB_ERROR"),
        "otherbranch": (_report(branch="wap_other"), "JOB_FAILED"),
    }
    for name, (report, expected) in cases.items():
        s3.put_object(Bucket="reports", Key=f"{name}.json", Body=json.dumps(report))
        result = outcome_from_report(
            f"s3://reports/{name}.json", "wap_s_t_20261122T101500_01234567"
        )
        assert result.status == expected, (name, result)
    missing = outcome_from_report("s3://reports/none.json", None)
    assert missing.status == "JOB_ERROR" and "wrote no audit report" in missing.reason
    passed = outcome_from_report("s3://reports/passed.json", None)
    assert passed.snapshot_id == "1234567890123456789"  # a string: beyond a double's range
    assert passed.to_dict()["snapshot_id"] == "1234567890123456789"


def test_a_report_that_breaks_the_contract_fails_the_ingest_naming_the_field(s3):
    for name, report in {
        "v2": _report(report_version=2),
        "odd": _report(outcome="maybe"),
        "rows": _report(rows_written="5"),
    }.items():
        s3.put_object(Bucket="reports", Key=f"{name}.json", Body=json.dumps(report))
        result = outcome_from_report(f"s3://reports/{name}.json", None)
        field = {"v2": "'report_version'", "odd": "'outcome'", "rows": "'rows_written'"}[name]
        assert result.status == "JOB_FAILED" and field in result.reason, result


def test_failed_report_without_reason_names_the_failed_checks(s3):
    checks = [
        {"name": "ids_unique", "kind": "unique", "severity": "error", "status": "failed"},
        {"name": "soft", "kind": "range", "severity": "warn", "status": "failed"},
    ]
    s3.put_object(
        Bucket="reports", Key="f.json", Body=json.dumps(_report(outcome="failed", checks=checks))
    )
    assert outcome_from_report("s3://reports/f.json", None).reason == "failed checks: ids_unique"


def test_reason_from_a_lambda_error_is_the_exception_message():
    error = {
        "Error": "NessieUnavailableError",
        "Cause": json.dumps(
            {"errorMessage": "Nessie unreachable", "errorType": "X", "stackTrace": ["..."]}
        ),
    }
    assert reason_from_error(error) == "NessieUnavailableError: Nessie unreachable"
    assert reason_from_error({"Error": "States.Timeout", "Cause": ""}) == "States.Timeout"
    assert reason_from_error(None) is None


def _state(**fields) -> ExecutionState:
    run = {
        "attempt": 1,
        "branch": "wap_b",
        "job_run_id": "j",
        "report_uri": "s3://r/x.json",
        "started_at": "2026-11-22T10:15:00Z",
    }
    return ExecutionState.from_dict({"ingest_id": "i", "table": "s.t", "run": run, **fields})


def test_final_status_of_caught_and_odd_states():
    assert final_status(_state(outcome={"status": "PUBLISHED", "reason": "x"})) == (
        "PUBLISHED",
        None,
    )
    status, reason = final_status(
        _state(outcome={"status": "JOB_FAILED"}, error={"Error": "Boom", "Cause": "bad"})
    )
    assert (status, reason) == ("JOB_FAILED", "Boom: bad")
    status, reason = final_status(_state(outcome={"status": "RUNNING"}))
    assert status == "JOB_FAILED" and "'RUNNING'" in reason


def test_trigger_rejection_reasons_without_reading_the_object():
    def obj(key: str, size: int | None = 10) -> ObjectCreated:
        return ObjectCreated("b", key, "v", "e", size)

    assert rejection_reason(obj("s/t/a.parquet")) is None
    assert "empty file" in rejection_reason(obj("s/t/a.parquet", size=0))
    assert "unsupported file type" in rejection_reason(obj("s/t/a.json"))
    assert "cannot tell which table" in rejection_reason(obj("a.parquet"))
    assert rejection_reason(obj("s/t/a.csv.gz")) is None
    assert "empty file" in rejection_reason(obj("s/t/a.jsonl", size=0))


def test_the_table_config_format_decides_before_the_extension():
    from ingestion.batching import Intake

    def reason(key: str, **intake) -> str | None:
        return rejection_reason(ObjectCreated("b", key, "v", "e", 10), intake=Intake(**intake))

    assert reason("s/t/export.txt", format="csv") is None
    assert "unsupported file type 'export.txt'" in reason("s/t/export.txt")
    # A refused config is the reason the file is refused (reject_for_config), not a
    # format guessed without it.
    assert reason("s/t/export.txt", config_error="s3://a/tables/s.t.yaml: bad") is None


def test_times_in_the_ledger_are_utc_iso_seconds():
    from ingestion.naming import iso, parse_iso

    at = datetime(2026, 11, 22, 10, 15, 0, tzinfo=UTC) + timedelta(microseconds=5)
    assert iso(at) == "2026-11-22T10:15:00Z"
    assert parse_iso("2026-11-22T10:15:00Z") == at.replace(microsecond=0)


def test_the_outcome_of_a_report_carries_its_quarantined_rows(s3):
    for name, report, expected in (
        ("quarantined", _report(quarantined_rows=3), 3),
        ("none", _report(), None),  # none quarantined: the outcome stays as before
    ):
        s3.put_object(Bucket="reports", Key=f"{name}.json", Body=json.dumps(report))
        result = outcome_from_report(f"s3://reports/{name}.json", None)
        assert (result.status, result.quarantined_rows) == ("PASSED", expected)


def test_job_status_reads_what_emr_billed_only_from_a_run_that_ended():
    from lambdas.job_status.service import job_usage

    created = datetime(2026, 11, 27, 10, 0, 5, tzinfo=UTC)
    running = {"state": "RUNNING", "createdAt": created, "startedAt": created}
    assert job_usage(running) is None
    ended = {
        **running,
        "state": "SUCCESS",
        "endedAt": created + timedelta(seconds=50),
        "billedResourceUtilization": {"vCPUHour": 0.4, "memoryGBHour": 1.6, "storageGBHour": 0},
    }
    usage = job_usage(ended)
    assert (usage.vcpu_hours, usage.memory_gb_hours, usage.storage_gb_hours) == (0.4, 1.6, 0.0)
    assert (usage.created_at, usage.ended_at) == ("2026-11-27T10:00:05Z", "2026-11-27T10:00:55Z")
    # Cancelled before it ran: times known, nothing billed.
    assert not job_usage({"state": "CANCELLED", "createdAt": created}).billed


def test_the_emr_prices_setting_is_checked_at_the_edge():
    env = {
        "WAP_LEDGER_TABLE": "l",
        "WAP_NESSIE_URI": "http://n/api/v1",
        "WAP_EMR_APPLICATION_ID": "a",
        "WAP_EMR_EXECUTION_ROLE_ARN": "arn:aws:iam::123456789012:role/j",
        "WAP_JOB_ENTRYPOINT": "s3://b/j.py",
        "WAP_REPORTS_PREFIX": "s3://b/r/",
        "WAP_LOGS_PREFIX": "s3://b/l/",
        "WAP_STATE_MACHINE_ARN": "arn:aws:states:eu-west-1:123456789012:stateMachine:x",
        "WAP_ARTIFACTS_BUCKET": "b",
        "AWS_REGION": "eu-west-1",
    }
    settings = load_settings({**env, "WAP_EMR_PRICES": "vcpu=1,memory=0.1,storage=0"})
    assert settings.emr_prices == "vcpu=1,memory=0.1,storage=0"
    assert settings.region == "eu-west-1"
    with pytest.raises(ConfigError, match="WAP_EMR_PRICES"):
        load_settings({**env, "WAP_EMR_PRICES": "vcpu=1"})
