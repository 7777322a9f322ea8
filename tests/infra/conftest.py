"""The CDK app, synthesized once per test run in each of its variants (~15 s each on 2
cores): the default deployment, and two that between them set every setting that changes the
template to a value other than its default (an external Nessie excludes some of them)."""

from __future__ import annotations

import pytest

from tests.fixtures.synth import (
    CLI_FALLBACK_REGION,
    NON_DEFAULT_CONTEXT,
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
def synthesized_external_nessie(tmp_path_factory) -> Synthesized:
    """`-c nessieEndpoint=...` (no catalog deployed) with pre-initialized EMR capacity, a
    shorter EMR idle stop and the deploy's own EMR prices, a daily maintenance run that
    deletes, a queue alarm after 45 minutes and tables created from uploads."""
    return synthesized_once(
        tmp_path_factory,
        "external-nessie",
        {
            "nessieEndpoint": "https://nessie.example.internal:19120",
            "emrPreInitializedExecutors": "2",
            "emrIdleStopMinutes": "5",
            "emrPrices": "vcpu=0.06,memory=0.0066,storage=0.00012",
            "gcDelete": "true",
            "stackName": "WapIngestExt",
            "queueAlarmMinutes": "45",
            "createTablesFromUploads": "true",
        },
    )


@pytest.fixture(scope="session")
def synthesized_non_default(tmp_path_factory) -> Synthesized:
    """The stack with its own Nessie and the non-default settings that need it
    (tests.fixtures.synth.NON_DEFAULT_CONTEXT): a lineage receiver whose key is in a secret
    encrypted with a customer-managed key, a maintenance time, Nessie's tables adopted."""
    return synthesized_once(tmp_path_factory, "non-default", dict(NON_DEFAULT_CONTEXT))
