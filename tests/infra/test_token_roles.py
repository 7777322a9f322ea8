"""The pre token generation trigger (infra/token_roles.py) on Cognito's documented V3_0 event
shapes: a machine client's scopes and a person's groups both become the `roles` claim."""

from __future__ import annotations

import json

import pytest

from contracts import catalog_authorization as authz
from infra import token_roles


@pytest.fixture(autouse=True)
def _known_roles(monkeypatch):
    monkeypatch.setenv(token_roles.ENV_ROLES, json.dumps(list(authz.ROLES)))


def _client_credentials(*scopes: str) -> dict:
    return {
        "version": "3",
        "triggerSource": "TokenGeneration_ClientCredentials",
        "userName": None,
        "callerContext": {"clientId": "4abc"},
        "request": {"userAttributes": {}, "groupConfiguration": {}, "scopes": list(scopes)},
        "response": {"claimsAndScopeOverrideDetails": None},
    }


def _person(*groups: str) -> dict:
    return {
        "version": "3",
        "triggerSource": "TokenGeneration_HostedAuth",
        "userName": "ada",
        "callerContext": {"clientId": "cli"},
        "request": {
            "userAttributes": {"sub": "1"},
            "groupConfiguration": {"groupsToOverride": list(groups)},
            "scopes": ["openid", "profile"],
        },
        "response": {"claimsAndScopeOverrideDetails": None},
    }


def _access_claims(event: dict) -> dict:
    details = token_roles.handler(event, None)["response"]["claimsAndScopeOverrideDetails"]
    return details["accessTokenGeneration"]["claimsToAddOrOverride"]


def test_a_machine_clients_scope_is_its_role_and_its_name():
    assert _access_claims(_client_credentials("wap/wap-trigger")) == {
        "roles": ["wap-trigger"],
        "principal": "wap-trigger",
    }


def test_a_persons_groups_are_their_roles_in_both_tokens():
    event = token_roles.handler(_person("wap-operator", "admins"), None)
    details = event["response"]["claimsAndScopeOverrideDetails"]
    expected = {"roles": ["wap-operator"], "principal": "ada"}
    assert details["accessTokenGeneration"]["claimsToAddOrOverride"] == expected
    assert details["idTokenGeneration"]["claimsToAddOrOverride"] == expected


def test_names_that_are_no_role_give_no_role():
    assert _access_claims(_client_credentials("other/wap-trigger", "wap/root"))["roles"] == []
    assert _access_claims(_person())["roles"] == []
    # Not a role: the principal says which client it was.
    assert _access_claims(_client_credentials())["principal"] == "client:4abc"
