"""Synthesize the CDK app once per session (CDK synth takes ~15 s on 2 cores)."""

from __future__ import annotations

import pytest

from tests.fixtures.synth import CLI_FALLBACK_REGION, Synthesized, synthesize


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Synthesized:
    """The default deployment: Nessie on Fargate, no warm EMR capacity, as `cdk synth` runs it
    without `-c region` (the CLI always exports CDK_DEFAULT_REGION)."""
    return synthesize(
        tmp_path_factory.mktemp("cdk-default"),
        {"slackChannel": "#wap-alerts"},
        {"CDK_DEFAULT_REGION": CLI_FALLBACK_REGION},
    )


@pytest.fixture(scope="session")
def synthesized_external_nessie(tmp_path_factory) -> Synthesized:
    """`-c nessieEndpoint=...` with pre-initialized EMR capacity, a shorter idle stop and
    the deploy's own EMR prices, and a daily maintenance run that deletes
    (`-c gcDelete=true`)."""
    return synthesize(
        tmp_path_factory.mktemp("cdk-external"),
        {
            "nessieEndpoint": "https://nessie.example.internal:19120",
            "emrPreInitializedExecutors": "2",
            "emrIdleStopMinutes": "5",
            "emrPrices": "vcpu=0.06,memory=0.0066,storage=0.00012",
            "gcDelete": "true",
            "stackName": "WapIngestExt",
        },
    )
