"""The lineage API key's grants, used: the stack that sets `lineageApiKeySecretArn` and
`lineageApiKeyKmsKeyArn` (tests.fixtures.synth.NON_DEFAULT_CONTEXT) runs locally, and each
function that sends OpenLineage events reads the key, under its customer managed KMS key,
as its own role. Its template is judged by the suite's least-privilege check too
(tests/local/aws/least_privilege.py): an unused grant in it fails the suite.
"""

from __future__ import annotations

from datetime import UTC, datetime

from infra.constants import FUNCTIONS, Capability
from local.aws.iam import SESSION_USAGE
from local.lineage_receiver import LineageReceiver
from tests.fixtures.local_stack import make_stack, nessie_client, slack  # noqa: F401
from tests.fixtures.synth import LINEAGE_KEY_ARN, LINEAGE_KMS_KEY_ARN, NON_DEFAULT_CONTEXT

API_KEY = "lineage-key-under-a-customer-managed-key"
SENDERS = sorted(
    spec.name for spec in FUNCTIONS if Capability.LINEAGE_KEY_READ in spec.capabilities
)


def _create_the_operators_secret(stack) -> None:
    """The existing secret the deploy names (its ARN, 6-character suffix included),
    encrypted with the customer managed key, as the operator created it on AWS."""
    name, suffix = LINEAGE_KEY_ARN.split(":secret:", 1)[1].rsplit("-", 1)
    created = stack.client("secretsmanager").create_secret(
        Name=name,
        SecretString=API_KEY,
        KmsKeyId=LINEAGE_KMS_KEY_ARN,
        Tags=[{"Key": "_custom_id_", "Value": suffix}],  # moto: this exact ARN
    )
    assert created["ARN"] == LINEAGE_KEY_ARN


def _event(function: str):
    from ingestion.lineage.events import LineageInput, start_event

    return start_event(
        namespace="WapIngest",
        ingest_id=f"{abs(hash(function)):016x}"[:16],
        table="sales.orders",
        inputs=[LineageInput("s3://src/sales/orders/a.parquet?versionId=v1")],
        branch="wap_sales_orders_x",
        attempt=1,
        at=datetime.now(UTC),
    )


def test_each_sender_reads_the_lineage_key_through_the_customer_managed_key(
    make_stack,  # noqa: F811
    synthesized_non_default,
):
    from ingestion.config import load_settings
    from ingestion.lineage import transport
    from ingestion.lineage.transport import emit_quietly

    transport._api_key.cache_clear()  # each function reads it once per process
    template = synthesized_non_default.local_template("non-default", NON_DEFAULT_CONTEXT)
    SESSION_USAGE.add_variant("non-default", template.body)
    receiver = LineageReceiver(api_key=API_KEY).start()
    try:
        stack = make_stack(template=template, lineage_url=receiver.url)
        _create_the_operators_secret(stack)
        for name in SENDERS:
            with stack.dispatcher.sandboxes[name].running():
                settings = load_settings()
                assert settings.lineage_api_key_secret_arn == LINEAGE_KEY_ARN, name
                assert emit_quietly(settings, [_event(name)]) == 1, name
        assert len(receiver.events) == len(SENDERS)  # each with the key (else a 401)
    finally:
        receiver.stop()
    decrypted = {r.principal for r in stack.iam.records if r.action == "kms:Decrypt"}
    assert decrypted == set(SENDERS)
    assert stack.iam.denied == []
    # ... which the suite's least-privilege check counts as each sender's grant used.
    used = {key for grant in stack.iam.used_grants() for key in stack.iam.grant_keys[grant]}
    assert {policy for policy, _, action, _, _ in used if action == "kms:Decrypt"} == {
        f"Pipeline/{_construct(name)}/ServiceRole/DefaultPolicy" for name in SENDERS
    }


def test_without_kms_decrypt_the_key_cannot_be_read(make_stack, synthesized_non_default):  # noqa: F811
    """The local stand-in is as strict as AWS: reading a secret under a customer managed
    key needs `kms:Decrypt` on that key, not only `secretsmanager:GetSecretValue`."""
    from ingestion.config import load_settings
    from ingestion.lineage import transport
    from ingestion.lineage.transport import emit_quietly

    transport._api_key.cache_clear()  # each function reads it once per process
    template = synthesized_non_default.local_template("non-default", NON_DEFAULT_CONTEXT)
    receiver = LineageReceiver(api_key=API_KEY).start()
    try:
        stack = make_stack(template=template, lineage_url=receiver.url)
        _create_the_operators_secret(stack)
        assert stack.iam.revoke_action("sweeper", "kms:Decrypt")
        with stack.dispatcher.sandboxes["sweeper"].running():
            assert emit_quietly(load_settings(), [_event("sweeper")]) == 0
    finally:
        receiver.stop()
    assert [r.action for r in stack.iam.denied] == ["kms:Decrypt"]


def test_the_least_privilege_check_judges_the_variants_grants(synthesized_non_default):
    """A grant only the variant has (the key's) and no call used fails the check; used in
    either variant, a grant counts as used in both."""
    from local.aws.stack import StackSettings
    from local.aws.template import stack_template
    from tests.local.aws.least_privilege import unused_grants

    variant = synthesized_non_default.local_template("non-default", NON_DEFAULT_CONTEXT)
    default = stack_template(
        StackSettings(nessie_api_v1="http://unused/api/v1", job=None).deploy_context()
    )
    used = {key for keys in default.grants().values() for key in keys}

    unused = unused_grants(used, {"non-default": variant.body})

    assert unused and all(line.startswith("non-default: ") for line in unused), unused
    for name in SENDERS:
        assert any(f"/{_construct(name)}/" in line and "kms:Decrypt" in line for line in unused)
    assert not [line for line in unused if "secretsmanager" not in line and "kms" not in line]
    used |= {key for keys in variant.grants().values() for key in keys}
    assert unused_grants(used, {"non-default": variant.body}) == []


def _construct(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))
