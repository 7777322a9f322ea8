"""`npx --no-install cdk synth` from the repo root, offline: no credentials, no Docker."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.fixtures.paths import REPO
from tests.fixtures.processes import run_process


@pytest.mark.slow
def test_cdk_cli_synth_offline(tmp_path):
    if shutil.which("npx") is None or not (REPO / "node_modules" / "aws-cdk").is_dir():
        pytest.fail("the pinned CDK CLI is missing: run `make setup` (npm ci)")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "CDK_DEFAULT_"))
    }
    # No credentials and no instance metadata: synthesis must not need an AWS account.
    env |= {
        "AWS_EC2_METADATA_DISABLED": "true",
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    }
    result = run_process(
        ["npx", "--no-install", "cdk", "synth", "--no-notices", "--quiet", "-o", str(tmp_path)],
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    template = json.loads((tmp_path / "WapIngest.template.json").read_text())
    types = {r["Type"] for r in template["Resources"].values()}
    assert {
        "AWS::StepFunctions::StateMachine",
        "AWS::EMRServerless::Application",
        "AWS::ECS::Service",
    } <= types
    # The CLI exports CDK_DEFAULT_REGION (us-east-1 when nothing is configured); without
    # -c region the stack still targets the README's default.
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["artifacts"]["WapIngest"]["environment"].endswith("/eu-west-1")
