"""Issue 41 on AWS: Nessie authenticates every call (Cognito, OIDC) and authorizes it with the
rules file, each component holds its own role's client credentials in Secrets Manager, and
no secret travels in plain text. Asserted on the session's synthesized template."""

from __future__ import annotations

import json
import re
from typing import Any

from contracts import catalog_authorization as authz
from infra import token_roles
from infra.constants import CATALOG_RESOURCE_SERVER
from tests.infra.test_template import (
    _actions,
    _functions_by_handler,
    _ref_id,
    _referenced_ids,
    _statements_of_role,
)

MACHINE_ROLES = {authz.TRIGGER, authz.JOB, authz.PUBLISHER, authz.MAINTENANCE}


def _nessie_container(synth) -> dict[str, Any]:
    (task,) = synth.of_type("AWS::ECS::TaskDefinition").values()
    (container,) = task["Properties"]["ContainerDefinitions"]
    return container


def _environment(synth) -> dict[str, Any]:
    return {e["Name"]: e["Value"] for e in _nessie_container(synth)["Environment"]}


def _credential_secrets(synth) -> dict[str, str]:
    """Logical id of each role's client credentials secret -> the role (its `scope`)."""
    found = {}
    for logical_id, secret in synth.of_type("AWS::SecretsManager::Secret").items():
        text = json.dumps(secret["Properties"].get("SecretString", ""))
        match = re.search(rf'\\"scope\\":\\"{CATALOG_RESOURCE_SERVER}/([a-z-]+)\\"', text)
        if match:
            found[logical_id] = match.group(1)
    return found


def _secret_reads(synth, role_id: str) -> set[str]:
    """The secrets (logical ids) a role may GetSecretValue."""
    return {
        ref
        for s in _statements_of_role(synth, role_id)
        if "secretsmanager:GetSecretValue" in _actions([s])
        for ref in _referenced_ids(s["Resource"])
    }


def test_nessie_authenticates_and_deploys_every_rule_of_the_rules_file_verbatim(synthesized):
    env = _environment(synthesized)
    assert env["nessie.server.authentication.enabled"] == "true"
    assert env["nessie.server.authorization.enabled"] == "true"
    deployed = {
        name: value
        for name, value in env.items()
        if name.startswith("nessie.server.authorization.rules.")
    }
    assert deployed == authz.nessie_properties(authz.load_rules())
    # Cognito's issuer (discovery at <issuer>/.well-known/openid-configuration).
    issuer = env["quarkus.oidc.auth-server-url"]["Fn::Join"][1]
    assert issuer[0].startswith("https://cognito-idp.")
    assert synthesized.resources[_ref_id(issuer[-1])]["Type"] == "AWS::Cognito::UserPool"
    assert env["quarkus.oidc.roles.role-claim-path"] == authz.ROLES_CLAIM
    assert env["quarkus.oidc.roles.source"] == "accesstoken"
    assert env["quarkus.oidc.token.principal-claim"] == token_roles.PRINCIPAL_CLAIM
    # Cognito's access tokens carry no `aud`: no audience check is configured.
    assert not [name for name in env if "audience" in name]


def test_the_ui_logs_in_through_its_own_web_app_client_whose_secret_is_no_plain_variable(
    synthesized,
):
    env = _environment(synthesized)
    assert env["quarkus.oidc.ui-app.application-type"] == "web-app"
    assert env["quarkus.oidc.ui-app.tenant-paths"] == "/,/tree*,/content*,/notfound*,/commits*"
    assert env["quarkus.oidc.ui-app.roles.role-claim-path"] == authz.ROLES_CLAIM
    assert not [name for name in env if "secret" in name.lower()]
    (secret,) = _nessie_container(synthesized)["Secrets"]
    assert secret["Name"] == "quarkus.oidc.ui-app.credentials.secret"
    assert secret["ValueFrom"]["Fn::Join"][1][-1] == ":client_secret::"
    ui_client_id = _ref_id(env["quarkus.oidc.ui-app.client-id"])
    ui = synthesized.resources[ui_client_id]["Properties"]
    assert ui["GenerateSecret"] is True
    assert ui["AllowedOAuthFlows"] == ["code"]
    # Cognito takes plain http callbacks on localhost only: the SSM port forward's address.
    assert ui["CallbackURLs"] == ["http://localhost:19120/"]


def test_each_machine_role_has_a_client_credentials_client_with_its_one_scope(synthesized):
    clients = synthesized.of_type("AWS::Cognito::UserPoolClient")
    (server,) = synthesized.of_type("AWS::Cognito::UserPoolResourceServer").items()
    assert server[1]["Properties"]["Identifier"] == CATALOG_RESOURCE_SERVER
    machine = {}
    for props in (c["Properties"] for c in clients.values()):
        if props.get("AllowedOAuthFlows") == ["client_credentials"]:
            # `<resource server>/<role>`: {"Fn::Join": ["", [{"Ref": server}, "/<role>"]]}
            ((ref, suffix),) = [scope["Fn::Join"][1] for scope in props["AllowedOAuthScopes"]]
            assert ref == {"Ref": server[0]}
            machine[suffix.lstrip("/")] = props
    assert set(machine) == MACHINE_ROLES
    for props in machine.values():
        assert props["GenerateSecret"] is True and len(props["AllowedOAuthScopes"]) == 1
    assert set(_credential_secrets(synthesized).values()) == MACHINE_ROLES
    groups = {
        g["Properties"]["GroupName"]
        for g in synthesized.of_type("AWS::Cognito::UserPoolGroup").values()
    }
    assert groups == {authz.OPERATOR, authz.READER}
    # The CLI's client is public (PKCE) and comes back to localhost only.
    (cli,) = [
        c["Properties"]
        for c in clients.values()
        if c["Properties"].get("AllowedOAuthFlows") == ["code"]
        and not c["Properties"].get("GenerateSecret")
    ]
    assert all(url.startswith("http://localhost:") for url in cli["CallbackURLs"])


def test_every_role_the_token_trigger_knows_is_a_role_of_the_rules(synthesized):
    (pool,) = synthesized.of_type("AWS::Cognito::UserPool").values()
    assert pool["Properties"]["UserPoolTier"] == "ESSENTIALS"  # V3_0 needs Essentials or Plus
    config = pool["Properties"]["LambdaConfig"]["PreTokenGenerationConfig"]
    assert config["LambdaVersion"] == "V3_0"
    function = synthesized.resources[_ref_id(config["LambdaArn"])]["Properties"]
    # The deployed code is the tested module.
    assert function["Code"]["ZipFile"] == token_roles.__loader__.get_data(
        token_roles.__file__
    ).decode("utf-8")
    known = json.loads(function["Environment"]["Variables"][token_roles.ENV_ROLES])
    assert sorted(known) == sorted(authz.ROLES)
    assert token_roles.RESOURCE_SERVER == CATALOG_RESOURCE_SERVER
    assert token_roles.ROLES_CLAIM == authz.ROLES_CLAIM


def test_each_function_reads_its_own_roles_credentials_only(synthesized):
    secrets = _credential_secrets(synthesized)
    functions = _functions_by_handler(synthesized)
    readers = 0
    for name, (_, props) in functions.items():
        variables = props["Environment"]["Variables"]
        readable = _secret_reads(synthesized, _ref_id(props["Role"])) & set(secrets)
        own = variables.get("WAP_NESSIE_CLIENT_SECRET_ARN")
        if name in authz.COMPONENT_ROLES and "VpcConfig" in props:  # it calls Nessie
            assert own is not None, name
            assert readable == {_ref_id(own)}, name
            assert secrets[_ref_id(own)] == authz.COMPONENT_ROLES[name], name
            # Its client id is that role's client; the token endpoint is the pool's domain.
            client = synthesized.resources[_ref_id(variables["WAP_NESSIE_CLIENT_ID"])]
            scope = client["Properties"]["AllowedOAuthScopes"][0]["Fn::Join"][1][1]
            assert scope == f"/{authz.COMPONENT_ROLES[name]}", name
            assert json.dumps(variables["WAP_NESSIE_TOKEN_ENDPOINT"]).endswith('/oauth2/token"]]}')
            readers += 1
        else:
            assert readable == set(), name
            assert not {v for v in variables if v.startswith("WAP_NESSIE_CLIENT")}, name
        # A function that starts job runs names the job's secret, and cannot read it.
        job_secret = variables.get("WAP_JOB_NESSIE_CREDENTIALS_SECRET_ARN")
        if job_secret is not None:
            assert secrets[_ref_id(job_secret)] == authz.JOB
    assert readers == 5  # trigger, finish, publish, sweeper, maintenance


def test_the_job_role_reads_the_jobs_credentials_only(synthesized):
    (role_id,) = [i for i in synthesized.of_type("AWS::IAM::Role") if "JobRole" in i]
    secrets = _credential_secrets(synthesized)
    readable = _secret_reads(synthesized, role_id)
    assert readable and {secrets.get(r) for r in readable} == {authz.JOB}


def test_no_client_secret_travels_in_plain_text(synthesized):
    """Cognito's client secrets appear only as the secrets' values: no Lambda environment,
    no container variable, no job parameter, no output carries one."""
    template = synthesized.template.to_json()
    holders = {
        logical_id
        for logical_id, resource in template["Resources"].items()
        if '"ClientSecret"' in json.dumps(resource)
    }
    assert holders == set(_credential_secrets(synthesized)) | {
        i for i in synthesized.of_type("AWS::SecretsManager::Secret") if "UiClientSecret" in i
    }
    assert '"ClientSecret"' not in json.dumps(template.get("Outputs", {}))


def test_people_sign_in_with_what_the_outputs_name(synthesized):
    outputs = synthesized.template.to_json()["Outputs"]
    assert {"CatalogIssuerUrl", "CatalogLoginUrl", "CatalogCliClientId", "UserPoolId"} <= set(
        outputs
    )
    # `wap doctor` finds each machine role's secret: role -> ARN, a JSON object.
    rendered = json.dumps(outputs["CatalogCredentialSecrets"]["Value"])
    secrets = _credential_secrets(synthesized)
    for role in MACHINE_ROLES:
        assert f'\\"{role}\\":\\"' in rendered, role
    assert _referenced_ids(outputs["CatalogCredentialSecrets"]["Value"]) == set(secrets)
