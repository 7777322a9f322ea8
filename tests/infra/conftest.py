"""The CDK app, synthesized once per test run in each of its two variants (~15 s each on 2
cores): the default deployment, and one with every setting that changes the template set to
a value other than its default."""

from __future__ import annotations

import pytest

from tests.fixtures.synth import (
    CLI_FALLBACK_REGION,
    LINEAGE_KEY_ARN,
    Synthesized,
    synthesized_once,
)


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Synthesized:
    """The default deployment: Nessie on Fargate, no warm EMR capacity, as `cdk synth` runs it
    without `-c region` (the CLI always exports CDK_DEFAULT_REGION)."""
    return synthesized_once(
        tmp_path_factory,
        "default",
        {"slackChannel": "#wap-alerts"},
        {"CDK_DEFAULT_REGION": CLI_FALLBACK_REGION},
    )


@pytest.fixture(scope="session")
def synthesized_configured(tmp_path_factory) -> Synthesized:
    """Every non-default setting at once: `-c nessieEndpoint=...` (no catalog deployed),
    pre-initialized EMR capacity, a shorter EMR idle stop and the deploy's own EMR prices,
    a daily maintenance run that deletes, a queue alarm after 45 minutes, tables created
    from uploads, and a lineage endpoint with an API key."""
    return synthesized_once(
        tmp_path_factory,
        "configured",
        {
            "nessieEndpoint": "https://nessie.example.internal:19120",
            "emrPreInitializedExecutors": "2",
            "emrIdleStopMinutes": "5",
            "emrPrices": "vcpu=0.06,memory=0.0066,storage=0.00012",
            "gcDelete": "true",
            "stackName": "WapIngestExt",
            "queueAlarmMinutes": "45",
            "createTablesFromUploads": "true",
            "lineageUrl": "https://marquez.example.com:5000/",
            "lineageApiKeySecretArn": LINEAGE_KEY_ARN,
        },
    )
