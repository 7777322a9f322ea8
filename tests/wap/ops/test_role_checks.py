"""`wap doctor`'s role checks (wap/ops/role_checks.py) against the local catalog enforcing the
rules (local/nessie, tokens of its identity provider): every role gets exactly what the
rules file says, the probes change nothing, and a catalog whose rules drifted is caught."""

from __future__ import annotations

import pytest

from contracts import catalog_authorization as authz
from local.nessie.runner import start_server
from wap.ops import role_checks


@pytest.fixture
def server(tmp_path, request):
    rules = getattr(request, "param", None)
    running = start_server(str(tmp_path / "nessie.db"), secure=True, rules=rules)
    yield running
    running.stop()


def _tokens(server) -> dict:
    return {role: (lambda role=role: server.token(role)) for role in authz.ROLES}


def _refs(server) -> list[str]:
    import json
    import urllib.request

    request = urllib.request.Request(
        f"{server.api_v2}/trees", headers={"Authorization": f"Bearer {server.token('wap-reader')}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return [ref["name"] for ref in json.load(response)["references"]]


def test_every_role_gets_exactly_what_the_rules_say_and_nothing_changes(server):
    before = _refs(server)
    verdicts = role_checks.check_roles(server.api_v2, _tokens(server))
    assert [v.role for v in verdicts] == list(authz.ROLES)
    assert [v for v in verdicts if not v.ok] == []
    trigger = {v.role: v.detail for v in verdicts}[authz.TRIGGER]
    assert "read main allowed" in trigger
    assert "create a wap_ branch allowed (by the rules)" in trigger
    assert "commit to main refused (by the rules)" in trigger
    assert "delete main refused (by the rules)" in trigger
    job = {v.role: v.detail for v in verdicts}[authz.JOB]
    assert "create a wap_ branch refused (by the rules)" in job
    assert _refs(server) == before  # no probe left anything behind


@pytest.mark.parametrize(
    "server",
    [{"read": "op == 'VIEW_REFERENCE' && 'wap-reader' in roles"}],
    indirect=True,
)
def test_a_catalog_whose_rules_drifted_from_the_file_is_named_role_by_role(server):
    verdicts = {v.role: v for v in role_checks.check_roles(server.api_v2, _tokens(server))}
    assert [role for role, v in verdicts.items() if v.ok] == [authz.READER]
    assert "read main: should be allowed, got HTTP 403" in verdicts[authz.TRIGGER].detail


def test_a_token_without_its_role_in_the_claim_is_caught(server):
    tokens = {authz.TRIGGER: lambda: server.token(authz.READER)}  # the mapping went wrong
    (verdict,) = role_checks.check_roles(server.api_v2, tokens)
    assert not verdict.ok and "claim is ('wap-reader',)" in verdict.detail


def test_a_role_without_a_token_is_said_so():
    def no_secret() -> str:
        raise RuntimeError("AccessDeniedException reading its secret")

    (verdict,) = role_checks.check_roles("http://127.0.0.1:9/api/v2", {"wap-job": no_secret})
    assert not verdict.ok and "AccessDenied" in verdict.detail
