"""Issue 42's hardening of the synthesized stack, each checked against AWS's documented
behaviour: the maintenance run's async retries and schedule, the lineage key's ARN and KMS
key, Nessie's retained tables after `cdk destroy`."""

from __future__ import annotations

import json

import pytest

from infra.settings import DeploySettings, SettingsError
from tests.fixtures.synth import LINEAGE_KEY_ARN, LINEAGE_KMS_KEY_ARN
from tests.infra.test_template import (
    _actions,
    _functions_by_handler,
    _ref_id,
    _statements_of_role,
)

SENDERS = {"trigger", "finish", "sweeper", "maintenance"}  # Capability.LINEAGE_KEY_READ


def _invoke_configs(synth) -> dict[str, dict]:
    """EventInvokeConfig properties by the logical id of the function they configure."""
    return {
        props["Properties"]["FunctionName"]["Ref"]: props["Properties"]
        for props in synth.of_type("AWS::Lambda::EventInvokeConfig").values()
    }


def test_the_maintenance_run_is_not_retried_by_lambda(synthesized):
    # Lambda retries an async invocation twice by default; the schedule's
    # MaximumRetryAttempts covers EventBridge's delivery only.
    maintenance_id, _ = _functions_by_handler(synthesized)["maintenance"]
    config = _invoke_configs(synthesized)[maintenance_id]
    assert config["MaximumRetryAttempts"] == 0
    assert config["MaximumEventAgeInSeconds"] == 3600  # a throttled run waits an hour at most
    trigger_id, _ = _functions_by_handler(synthesized)["trigger"]
    assert _invoke_configs(synthesized)[trigger_id]["MaximumRetryAttempts"] == 2


def _maintenance_schedule(synth) -> str:
    maintenance_id, _ = _functions_by_handler(synth)["maintenance"]
    [rule] = [
        r["Properties"]
        for r in synth.of_type("AWS::Events::Rule").values()
        if any(
            t["Arn"] == {"Fn::GetAtt": [maintenance_id, "Arn"]}
            for t in r["Properties"].get("Targets", [])
        )
    ]
    return rule["ScheduleExpression"]


def test_the_maintenance_run_starts_at_a_time_of_day_in_utc(synthesized, synthesized_non_default):
    # `rate(1 day)` starts at whatever hour the stack was deployed.
    assert _maintenance_schedule(synthesized) == "cron(0 3 * * ? *)"
    assert _maintenance_schedule(synthesized_non_default) == "cron(30 1 * * ? *)"


@pytest.mark.parametrize("value", ["3", "24:00", "03:60", "3pm", "03:5"])
def test_a_maintenance_time_that_is_not_hh_mm_is_refused(value):
    with pytest.raises(SettingsError, match="maintenanceTimeUtc"):
        DeploySettings.from_context({"maintenanceTimeUtc": value}.get)


def test_a_secret_arn_without_its_random_suffix_is_refused_with_how_to_find_it():
    # IAM matches a secret's complete ARN; Secrets Manager adds "-" and 6 characters.
    context = {
        "lineageUrl": "https://marquez.example.com",
        "lineageApiKeySecretArn": LINEAGE_KEY_ARN.removesuffix("-AbCdEf"),
    }
    with pytest.raises(SettingsError, match=r"6 characters.*describe-secret"):
        DeploySettings.from_context(context.get)
    context["lineageApiKeySecretArn"] = LINEAGE_KEY_ARN
    assert DeploySettings.from_context(context.get).lineage_api_key_secret_arn == LINEAGE_KEY_ARN


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"lineageApiKeyKmsKeyArn": LINEAGE_KMS_KEY_ARN}, "needs lineageApiKeySecretArn"),
        (
            {
                "lineageUrl": "https://m",
                "lineageApiKeySecretArn": LINEAGE_KEY_ARN,
                "lineageApiKeyKmsKeyArn": "arn:aws:kms:eu-west-1:123456789012:alias/lineage",
            },
            "not an alias",
        ),
    ],
)
def test_bad_lineage_kms_keys_are_refused(context, message):
    with pytest.raises(SettingsError, match=message):
        DeploySettings.from_context(context.get)


def test_a_customer_managed_key_lets_only_the_senders_decrypt_and_only_through_secrets_manager(
    synthesized, synthesized_non_default
):
    def decrypts(synth) -> dict[str, list[dict]]:
        found = {}
        for name, (_, props) in _functions_by_handler(synth).items():
            statements = _statements_of_role(synth, _ref_id(props["Role"]))
            found[name] = [s for s in statements if "kms:Decrypt" in _actions([s])]
        return found

    assert not any(decrypts(synthesized).values())  # the AWS-managed key needs no grant
    for name, statements in decrypts(synthesized_non_default).items():
        if name not in SENDERS:
            assert statements == [], name
            continue
        [statement] = statements
        assert statement["Resource"] == LINEAGE_KMS_KEY_ARN
        assert _actions([statement]) == {"kms:Decrypt"}
        via = json.dumps(statement["Condition"]["StringEquals"]["kms:ViaService"])
        assert "secretsmanager." in via, name


def _nessie_table_names(synth) -> set[str]:
    return {
        t["Properties"].get("TableName")
        for t in synth.of_type("AWS::DynamoDB::Table").values()
        if "nessie" in str(t["Properties"].get("TableName"))
    }


def test_retained_nessie_tables_can_be_adopted_by_a_new_stack_of_the_same_name(
    synthesized, synthesized_non_default
):
    # After `cdk destroy` the retained tables keep their fixed names; creating them again
    # fails ("already exists"). Adopted, they are referenced, not created, and Nessie's
    # task role reaches exactly them.
    assert _nessie_table_names(synthesized) == {"WapIngest-nessie_refs", "WapIngest-nessie_objs"}
    synth = synthesized_non_default
    assert _nessie_table_names(synth) == set()
    (task,) = synth.of_type("AWS::ECS::TaskDefinition").values()
    granted = json.dumps(
        [
            s["Resource"]
            for s in _statements_of_role(synth, _ref_id(task["Properties"]["TaskRoleArn"]))
            if any(a.startswith("dynamodb:") for a in _actions([s]))
        ]
    )
    for suffix in ("refs", "objs"):
        assert f":table/WapIngest-nessie_{suffix}" in granted
    assert "WapIngest-nessie" in json.dumps(task["Properties"]["ContainerDefinitions"])


def test_adopting_nessie_tables_needs_the_stacks_own_nessie():
    with pytest.raises(SettingsError, match="adoptNessieTables"):
        DeploySettings.from_context(
            {"adoptNessieTables": "true", "nessieEndpoint": "https://nessie.corp:19120"}.get
        )
