"""`wap --aws doctor`'s catalog role checks, end to end on doubles: the machine roles' tokens
from their secrets (moto Secrets Manager) at the identity provider, checked against the
catalog enforcing the rules (the local Nessie and its identity provider)."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from contracts import catalog_authorization as authz
from local.nessie.runner import start_server
from tests.fixtures.fake_aws import use_fake_credentials
from wap.ops import doctor

MACHINES = (authz.TRIGGER, authz.JOB, authz.PUBLISHER, authz.MAINTENANCE)


@pytest.fixture
def server(tmp_path):
    running = start_server(str(tmp_path / "nessie.db"), secure=True)
    yield running
    running.stop()


def test_each_machine_roles_token_is_checked_against_the_rules(server, monkeypatch, tmp_path):
    use_fake_credentials(monkeypatch, "eu-west-1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # nobody signed in
    with mock_aws():
        secrets = boto3.client("secretsmanager", region_name="eu-west-1")
        arns = {}
        for role in MACHINES:
            client = server.credentials(role)
            value = {
                "client_id": client.client_id,
                "client_secret": client.client_secret,
                "token_endpoint": client.token_endpoint,
                "scope": f"wap/{role}",
            }
            arns[role] = secrets.create_secret(Name=role, SecretString=json.dumps(value))["ARN"]
        outputs = {
            "CatalogCredentialSecrets": json.dumps(arns),
            "NessieApiUrl": server.api_v2,
            "CatalogLoginUrl": "https://x.auth.eu-west-1.amazoncognito.com",
            "CatalogCliClientId": "cli",
        }
        target = doctor.AwsDoctorTarget(
            boto3.Session(region_name="eu-west-1"), "WapIngest", outputs
        )
        checks = doctor._role_checks(target)
    assert [c.name for c in checks] == [f"catalog role {role}" for role in sorted(MACHINES)]
    assert [c for c in checks if not c.ok] == []


def test_a_stack_without_catalog_clients_has_no_role_checks():
    class Plain:
        def outputs(self):
            return {}

    assert doctor._role_checks(Plain()) == []
