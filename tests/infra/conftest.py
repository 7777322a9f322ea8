"""Synthesize the CDK app once per session (CDK synth takes ~15 s on 2 cores)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from infra.app import build_app


@dataclass
class Synthesized:
    """One synthesized app: its stack, the template and the cloud assembly directory."""

    stack: cdk.Stack
    template: Template
    outdir: Path

    @property
    def resources(self) -> dict[str, Any]:
        return self.template.to_json()["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return self.template.find_resources(resource_type)


# What the CDK CLI exports when no region is configured anywhere (no profile, no AWS_REGION).
CLI_FALLBACK_REGION = "us-east-1"


def synthesize(outdir: Path, context: dict[str, Any],
               environ: dict[str, str] | None = None) -> Synthesized:
    with mock.patch.dict(os.environ, environ or {}):
        app = build_app(cdk.App(outdir=str(outdir), context=context))
        app.synth()
    (stack,) = [child for child in app.node.children if isinstance(child, cdk.Stack)]
    template = Template.from_json(
        json.loads((outdir / f"{stack.artifact_id}.template.json").read_text()))
    return Synthesized(stack=stack, template=template, outdir=outdir)


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Synthesized:
    """The default deployment: Nessie on Fargate, no warm EMR capacity, as `cdk synth` runs it
    without `-c region` (the CLI always exports CDK_DEFAULT_REGION)."""
    return synthesize(tmp_path_factory.mktemp("cdk-default"), {"slackChannel": "#wap-alerts"},
                      {"CDK_DEFAULT_REGION": CLI_FALLBACK_REGION})


@pytest.fixture(scope="session")
def synthesized_external_nessie(tmp_path_factory) -> Synthesized:
    """`-c nessieEndpoint=...` with pre-initialized EMR capacity."""
    return synthesize(tmp_path_factory.mktemp("cdk-external"), {
        "nessieEndpoint": "https://nessie.example.internal:19120",
        "emrPreInitializedExecutors": "2",
        "stackName": "WapIngestExt",
    })
