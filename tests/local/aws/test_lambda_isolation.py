"""Each function runs with its own environment, /tmp and credentials, as on Lambda."""

from __future__ import annotations

import os
import shutil
import threading
import zoneinfo
from datetime import datetime
from pathlib import Path

import boto3
import pytest

from local.aws.lambda_sandbox import Sandbox
from tests.fixtures.local_stack import fake_parquet, wait_for_key


def test_the_environment_is_the_functions_own_and_nothing_else(monkeypatch):
    monkeypatch.setenv("WAP_ONLY_IN_THE_HARNESS", "x")
    one, two = Sandbox("one", {"WAP_X": "1"}), Sandbox("two", {"WAP_X": "2"})
    seen: dict[str, object] = {}

    def run(box: Sandbox) -> None:
        with box.running():
            os.environ["WAP_SET_BY_HANDLER"] = box.function_name
            seen[box.function_name] = (
                os.environ.get("WAP_X"),
                os.getenv("WAP_ONLY_IN_THE_HARNESS"),
                os.environ["WAP_SET_BY_HANDLER"],
            )

    threads = [threading.Thread(target=run, args=(box,)) for box in (one, two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"one": ("1", None, "one"), "two": ("2", None, "two")}
    assert "WAP_SET_BY_HANDLER" not in os.environ  # the process is untouched
    assert os.environ["WAP_ONLY_IN_THE_HARNESS"] == "x"
    one.remove(), two.remove()


def test_boto3_default_sessions_are_per_function():
    keys = {"one": "AKIAONE", "two": "AKIATWO"}
    boxes = [
        Sandbox(
            name,
            {
                "AWS_ACCESS_KEY_ID": key,
                "AWS_SECRET_ACCESS_KEY": "s",
                "AWS_DEFAULT_REGION": "eu-west-1",
            },
        )
        for name, key in keys.items()
    ]
    for box in boxes:
        with box.running():
            client = boto3.client("s3")
            assert client._request_signer._credentials.access_key == keys[box.function_name]
            assert client.meta.region_name == "eu-west-1"
        box.remove()


def test_each_handler_signs_with_its_own_role(make_stack):
    stack = make_stack()
    stack.drop_file("iso/orders/x.parquet", fake_parquet("iso"))
    assert wait_for_key(stack, "iso/orders/x.parquet").status == "PUBLISHED"
    stack.wait_idle()
    callers = {record.principal for record in stack.iam.records}
    # trigger, job status checks, publish, finish, the job, and Step Functions invoking them
    assert {"trigger", "job_status", "publish", "finish", "job", "state-machine"} <= callers
    roles = {p.name: p.role_arn for p in stack.iam.principals()}
    assert len({roles[name] for name in stack.functions}) == len(stack.functions)
    env = {name: box.environment for name, box in stack.dispatcher.sandboxes.items()}
    assert env["trigger"]["AWS_LAMBDA_FUNCTION_NAME"] == "trigger"
    assert env["trigger"]["AWS_ACCESS_KEY_ID"] != env["publish"]["AWS_ACCESS_KEY_ID"]
    assert "POWERTOOLS_SERVICE_NAME" in env["trigger"]
    assert env["trigger"]["POWERTOOLS_SERVICE_NAME"] != env["publish"]["POWERTOOLS_SERVICE_NAME"]


def _zone_layer(root: Path, *keys: str) -> Path:
    """A layer's `python/` directory whose `tzdata` package holds `keys` (copied from the
    host's zone database)."""
    python = root / "python"
    for key in keys:
        target = python / "tzdata" / "zoneinfo" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path("/usr/share/zoneinfo") / key, target)
    return python


@pytest.mark.skipif(
    not Path("/usr/share/zoneinfo/America/Argentina/Ushuaia").is_file(),
    reason="needs the host's zone database to prove the sandbox does not read it",
)
def test_zone_data_comes_only_from_the_functions_layers(tmp_path):
    """The host's /usr/share/zoneinfo is invisible inside a sandbox (the Lambda runtime's
    image need not have one); the `tzdata` package of the function's layers is found."""
    key = "America/Argentina/Ushuaia"  # one the harness never loads (zoneinfo caches zones)
    zoneinfo.ZoneInfo.clear_cache(only_keys=[key])
    bare = Sandbox("bare", {})
    layered = Sandbox("layered", {}, layer_paths=(str(_zone_layer(tmp_path, key)),))
    with bare.running(), pytest.raises(zoneinfo.ZoneInfoNotFoundError):
        zoneinfo.ZoneInfo(key)
    zoneinfo.ZoneInfo.clear_cache(only_keys=[key])
    with layered.running():
        zone = zoneinfo.ZoneInfo(key)
        with pytest.raises(zoneinfo.ZoneInfoNotFoundError):
            zoneinfo.ZoneInfo("Europe/Lisbon")  # not in that layer
    assert zone.utcoffset(datetime(2026, 7, 1)).total_seconds() == -3 * 3600
    assert zoneinfo.ZoneInfo("Europe/Lisbon")  # the harness keeps its own zone database
    bare.remove(), layered.remove()


def test_the_sweeper_resolves_expected_arrival_zones_in_its_sandbox(make_stack):
    """The sweeper's expected-arrival deadlines in `Europe/Berlin` use that zone (from the
    `tzdata` package its layer carries), not UTC."""
    from contracts.arrivals import load_zone

    stack = make_stack()
    zoneinfo.ZoneInfo.clear_cache(only_keys=["Europe/Berlin"])  # as a new process has it
    with stack.dispatcher.sandboxes["sweeper"].running():
        offset = load_zone("Europe/Berlin").utcoffset(datetime(2026, 7, 1))
    assert offset.total_seconds() == 2 * 3600
