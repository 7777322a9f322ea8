"""Fixtures of the orchestration tests: the local AWS stack, Slack stand-in, Nessie helpers."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pynessie
import pytest

from local.aws.stack import LocalAwsStack, StackSettings
from tests.orchestration.standin_job import standin_job

SLACK_TOKEN = "xoxb-test-token"
SLACK_CHANNEL = "#wap-alerts"
TERMINAL = {"PUBLISHED", "AUDIT_FAILED", "REJECTED", "JOB_FAILED", "PUBLISH_FAILED"}


def fake_parquet(tag: str) -> bytes:
    """Bytes with parquet's magic at both ends (enough for the stand-in job)."""
    return b"PAR1" + tag.encode() * 4 + b"PAR1"


@pytest.fixture
def slack() -> Iterator[Any]:
    from local.slack_standin import SlackStandin

    standin = SlackStandin(SLACK_TOKEN, (SLACK_CHANNEL,)).start()
    yield standin
    standin.stop()


@pytest.fixture
def nessie_client(nessie):
    return pynessie.init(
        config_dict={
            "endpoint": nessie.api_v1,
            "verify": True,
            "auth": {"type": "none", "timeout": 10},
        }
    )


@pytest.fixture
def make_stack(nessie, slack) -> Iterator[Callable[..., LocalAwsStack]]:
    """Start a local stack (stand-in job unless `job=` is given); stopped after the test."""
    started: list[LocalAwsStack] = []

    def make(**overrides: Any) -> LocalAwsStack:
        settings = {
            "nessie_api_v1": nessie.api_v1,
            "job": standin_job(nessie.api_v1),
            "slack_api_url": slack.api_url,
            "slack_token": SLACK_TOKEN,
            "slack_channel": SLACK_CHANNEL,
            "async_retry_delay": 0.2,
            # The definition's Retry sequence without its waits (tests/orchestration check
            # the attempts, not the seconds between them).
            "state_retry_scale": 0,
            **overrides,
        }
        stack = LocalAwsStack(StackSettings(**settings)).start()
        started.append(stack)
        return stack

    yield make
    for stack in started:
        stack.stop()


def record_for_key(stack: LocalAwsStack, key: str) -> dict[str, Any] | None:
    found = [r for r in stack.ledger().list_ingests() if r.get("key") == key]
    assert len(found) <= 1, found
    return found[0] if found else None


def wait_for_key(stack: LocalAwsStack, key: str, timeout: float = 90) -> dict[str, Any]:
    """The ledger record of `key` once it reached a final status."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = record_for_key(stack, key)
        if record and record["status"] in TERMINAL:
            return record
        time.sleep(0.2)
    raise AssertionError(f"{key} did not finish in {timeout} s: {stack.describe()}")


def wait_for_status(stack: LocalAwsStack, key: str, status: str,
                    timeout: float = 30) -> dict[str, Any]:
    """The record of `key` once it has `status` (a step on the way, not a final one)."""
    deadline = time.monotonic() + timeout
    while (record := record_for_key(stack, key) or {}).get("status") != status:
        assert time.monotonic() < deadline, stack.describe()
        time.sleep(0.05)
    return record


def branch_exists(client, name: str) -> bool:
    from pynessie.error import NessieNotFoundException

    try:
        client.get_reference(name)
    except NessieNotFoundException:
        return False
    return True


def table_on(client, ref: str, table: str):
    """The Iceberg content of `table` on `ref`, or None."""
    from pynessie.error import NessieNotFoundException
    from pynessie.model import ContentKey

    try:
        return client.get_content(ref, ContentKey(table.split(".")))
    except NessieNotFoundException:
        return None


def s3_notification(stack, key: str, version_id: str, size: int) -> dict:
    """An S3 notification as S3 sends it (key URL-encoded, `+` for a space)."""
    from urllib.parse import quote_plus

    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": stack.settings.region,
                "eventTime": "2026-11-22T10:00:00.000Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "wap",
                    "bucket": {
                        "name": stack.settings.source_bucket,
                        "arn": f"arn:aws:s3:::{stack.settings.source_bucket}",
                    },
                    "object": {
                        "key": quote_plus(key, safe="/"),
                        "size": size,
                        "eTag": "0" * 32,
                        "versionId": version_id,
                        "sequencer": "0A1B2C3D4E5F678901",
                    },
                },
            }
        ]
    }
