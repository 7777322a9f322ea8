"""The local Nessie authenticates as Nessie with OIDC does (401) and authorizes with the
service's rules (contracts/catalog_authorization.properties) as Nessie does (403 naming the
operation and the reference). The full matrix: test_authorization_matrix.py."""

from __future__ import annotations

import httpx
import pytest

from contracts.catalog_authorization import JOB, PUBLISHER, READER, TRIGGER
from local.idp import LocalIdentityProvider, new_signing_key
from tests.fixtures.catalog_auth import harness_headers
from tests.fixtures.idp_clock import nessie_on_clock
from tests.fixtures.nessie_api import EMPTY_HASH, unique


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server with the service's rules and an identity provider on a clock the tests move."""
    with nessie_on_clock(tmp_path_factory.mktemp("authz")) as running:
        yield running


def call(server, role: str | None, method: str, path: str, **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server.token(role)}"} if role else {}
    return httpx.request(method, server.api_v2 + path, headers=headers, timeout=30, **kwargs)


def ns_put(name: str) -> dict:
    return {
        "commitMeta": {"message": "a namespace"},
        "operations": [
            {
                "type": "PUT",
                "key": {"elements": [name]},
                "content": {"type": "NAMESPACE", "elements": [name]},
            }
        ],
    }


def branch(server, name: str) -> str:
    """Create `name` from main as the trigger does; its hash."""
    main = call(server, TRIGGER, "GET", "/trees/main").json()["reference"]
    created = call(
        server, TRIGGER, "POST", "/trees", params={"name": name, "type": "BRANCH"}, json=main
    )
    assert created.status_code == 200, created.text
    return created.json()["reference"]["hash"]


# ---- authentication ------------------------------------------------------------------------


def test_a_request_without_a_token_is_refused_with_nessies_error_body(server):
    for path in ("/config", "/trees", "/trees/main", "/no/such/endpoint"):
        resp = httpx.get(server.api_v2 + path, timeout=30)
        assert resp.status_code == 401, path
        assert resp.headers["www-authenticate"] == "Bearer"
        assert resp.json() == {
            "status": 401,
            "reason": "Unauthorized",
            "message": "Missing or unrecognized credentials",
            "errorCode": "UNKNOWN",
            "serverStackTrace": None,
        }
    assert httpx.get(server.api_v1 + "/trees", timeout=30).status_code == 401


def test_a_token_not_signed_by_the_identity_provider_is_refused(server):
    forged = LocalIdentityProvider(key=new_signing_key())
    forged.bind(server.url)  # same issuer, same client names: only the key differs
    for token in (forged.issue(PUBLISHER), "not.a.jwt", server.token(READER) + "x"):
        resp = httpx.get(
            server.api_v2 + "/trees", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert resp.status_code == 401
        assert resp.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    basic = httpx.get(server.api_v2 + "/trees", auth=("wap-reader", "x"), timeout=30)
    assert basic.status_code == 401


def test_an_expired_token_is_refused(server):
    token = server.idp.issue(READER, lifetime_seconds=60)
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(server.api_v2 + "/trees", headers=headers, timeout=30).status_code == 200
    server.idp.clock.now += 61
    assert httpx.get(server.api_v2 + "/trees", headers=headers, timeout=30).status_code == 401
    assert call(server, READER, "GET", "/trees").status_code == 200  # a fresh one is taken


def test_the_token_endpoint_speaks_client_credentials(server):
    creds = server.credentials(JOB)
    endpoint = creds.token_endpoint
    assert endpoint == server.url + "/idp/token"
    form = {"grant_type": "client_credentials"}
    basic = httpx.post(endpoint, data=form, auth=(creds.client_id, creds.client_secret))
    assert basic.status_code == 200 and basic.headers["cache-control"] == "no-store"
    body = basic.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
    assert server.idp.verify(body["access_token"]).roles == (JOB,)
    posted = httpx.post(
        endpoint,
        data={**form, "client_id": creds.client_id, "client_secret": creds.client_secret},
    )
    assert posted.status_code == 200
    wrong = httpx.post(endpoint, data=form, auth=(creds.client_id, "wrong"))
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert wrong.headers["www-authenticate"].startswith("Basic")
    grant = httpx.post(
        endpoint,
        data={"grant_type": "password"},
        auth=(creds.client_id, creds.client_secret),
    )
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
    both = httpx.post(
        endpoint,
        data={**form, "client_secret": creds.client_secret},
        auth=(creds.client_id, creds.client_secret),
    )
    assert both.status_code == 400 and both.json()["error"] == "invalid_request"
    assert httpx.get(server.url + "/idp/jwks").json()["keys"][0]["kty"] == "RSA"


# ---- authorization -------------------------------------------------------------------------


def test_the_job_cannot_commit_to_main(server):
    main = call(server, JOB, "GET", "/trees/main").json()["reference"]["hash"]
    resp = call(server, JOB, "POST", f"/trees/main@{main}/history/commit", json=ns_put("ns"))
    assert resp.status_code == 403
    assert resp.json()["errorCode"] == "FORBIDDEN"
    assert resp.json()["message"] == (
        "'COMMIT_CHANGE_AGAINST_REFERENCE' is not allowed for role 'wap-job' on reference "
        "'main', 'CREATE_ENTITY' is not allowed for role 'wap-job' on content 'ns'"
    )
    assert call(server, JOB, "GET", "/trees/main").json()["reference"]["hash"] == main
    # ... but commits to its ingest's branch
    name = unique("wap_sales_orders")
    head = branch(server, name)
    landed = call(server, JOB, "POST", f"/trees/{name}@{head}/history/commit", json=ns_put("ns"))
    assert landed.status_code == 200, landed.text


def test_the_trigger_cannot_delete_main_or_another_ingests_branch(server):
    main = call(server, TRIGGER, "GET", "/trees/main").json()["reference"]["hash"]
    # Nessie refuses to delete the default branch before any rule is asked.
    resp = call(server, TRIGGER, "DELETE", f"/trees/main@{main}")
    assert resp.status_code == 400
    assert resp.json()["message"] == "Default branch 'main' cannot be deleted."
    other = unique("wap_sales_orders")
    head = branch(server, other)
    resp = call(server, TRIGGER, "DELETE", f"/trees/{other}@{head}")
    assert resp.status_code == 403
    assert resp.json()["message"] == (
        f"'DELETE_REFERENCE' is not allowed for role 'wap-trigger' on reference '{other}'"
    )
    assert call(server, READER, "GET", f"/trees/{other}").status_code == 200  # still there
    # the publisher deletes it (after a publish, a rebase, a retention's end)
    assert call(server, PUBLISHER, "DELETE", f"/trees/{other}@{head}").status_code == 200


def test_nothing_moves_main_by_assignment(server):
    name = unique("wap_sales_orders")
    head = branch(server, name)
    main = call(server, READER, "GET", "/trees/main").json()["reference"]
    for role in (TRIGGER, JOB, PUBLISHER, READER):
        resp = call(
            server,
            role,
            "PUT",
            f"/trees/main@{main['hash']}",
            json={"type": "BRANCH", "name": name, "hash": head},
        )
        assert resp.status_code == 403, role
        assert (
            f"'ASSIGN_REFERENCE_TO_HASH' is not allowed for role '{role}' on reference 'main'"
            in resp.json()["message"]
        )


def test_api_v1_refuses_as_api_v2_does(server):
    name = unique("wap_sales_orders")
    head = branch(server, name)
    headers = {"Authorization": f"Bearer {server.token(TRIGGER)}"}
    resp = httpx.delete(
        f"{server.api_v1}/trees/branch/{name}",
        params={"expectedHash": head},
        headers=headers,
        timeout=30,
    )
    assert resp.status_code == 403
    assert "'DELETE_REFERENCE' is not allowed for role 'wap-trigger'" in resp.json()["message"]


def test_the_harness_gets_every_role_and_nothing_more(server):
    """A principal may hold several roles; the rules still decide (no assignment)."""
    headers = harness_headers(server)
    resp = httpx.put(
        f"{server.api_v2}/trees/main@{EMPTY_HASH}",
        json={"type": "BRANCH", "name": "main", "hash": EMPTY_HASH},
        headers=headers,
        timeout=30,
    )
    assert resp.status_code == 403
