"""The local EMR Serverless answers GetJobRun as the service does about what a run used:
the billed resources and the end time only once the run has ended, and then what the
local run really used (its CPU and memory)."""

from __future__ import annotations

import threading
import time

import boto3
import pytest
from moto import mock_aws

from contracts.job_args import SmokeArgs
from local.aws.emr_serverless import LocalEmrServerless
from tests.fixtures.fake_aws import use_fake_credentials

ENDED_ONLY = (
    "endedAt",
    "billedResourceUtilization",
    "totalResourceUtilization",
    "totalExecutionDurationSeconds",
)


@pytest.fixture
def emr(monkeypatch):
    use_fake_credentials(monkeypatch, "us-east-1")
    with mock_aws():
        yield boto3.client("emr-serverless")


def test_a_run_reports_what_it_used_only_once_it_has_ended(emr, tmp_path):
    release = threading.Event()

    def job(argv):
        deadline = time.thread_time() + 0.3  # burn CPU on the run's own thread
        while time.thread_time() < deadline:
            pass
        release.wait(10)

    local = LocalEmrServerless(job)
    local.install()
    try:
        app = emr.create_application(name="a", releaseLabel="emr-7.12.0", type="SPARK")
        run = emr.start_job_run(
            applicationId=app["applicationId"],
            clientToken="t",
            executionRoleArn="arn:aws:iam::123456789012:role/job",
            jobDriver={
                "sparkSubmit": {
                    "entryPoint": "s3://b/job.py",
                    # A run the double stages nothing for (a local report URI).
                    "entryPointArguments": SmokeArgs(
                        branch="b", report_uri=(tmp_path / "report.json").as_uri()
                    ).to_args(),
                }
            },
        )

        def get():
            return emr.get_job_run(applicationId=app["applicationId"], jobRunId=run["jobRunId"])[
                "jobRun"
            ]

        submitted = get()
        assert not set(ENDED_ONLY) & set(submitted), submitted
        # Submitted now (moto's createdAt is midnight).
        assert abs(time.time() - submitted["createdAt"].timestamp()) < 30
        while get()["state"] != "RUNNING":
            time.sleep(0.01)
        running = get()
        assert not set(ENDED_ONLY) & set(running), running
        release.set()
        while get()["state"] not in ("SUCCESS", "FAILED"):
            time.sleep(0.01)
        ended = get()
        assert ended["state"] == "SUCCESS", ended["stateDetails"]
    finally:
        release.set()
        local.uninstall()

    assert set(ENDED_ONLY) <= set(ended)
    assert ended["createdAt"] <= ended["startedAt"] <= ended["endedAt"]
    billed = ended["billedResourceUtilization"]
    assert billed["vCPUHour"] * 3600 >= 0.25  # the CPU the job burned, at least
    assert billed["memoryGBHour"] > 0
    assert billed["storageGBHour"] == 0
