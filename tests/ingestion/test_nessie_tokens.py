"""The Nessie client presents its role's token: fetched by client credentials, cached,
renewed before it expires, fetched again once when Nessie answers 401; 403 names what
was refused (contracts/catalog_tokens.py, ingestion/nessie.py)."""

from __future__ import annotations

import pytest

from contracts.catalog_authorization import READER, TRIGGER
from contracts.catalog_tokens import AccessToken, CatalogCredentials, TokenCache
from ingestion.exceptions import (
    NessieAuthenticationError,
    NessieForbiddenError,
    NessieUnavailableError,
)
from ingestion.nessie import NessieClient
from tests.fixtures.idp_clock import ManualClock, nessie_on_clock


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with nessie_on_clock(tmp_path_factory.mktemp("tokens")) as running:
        yield running


def client_of(
    server, role: str, clock: ManualClock, api: str = "v2"
) -> tuple[NessieClient, TokenCache]:
    tokens = TokenCache(server.credentials(role), clock=clock)
    uri = server.api_v2 if api == "v2" else server.api_v1
    return NessieClient(uri, tokens=tokens), tokens


@pytest.mark.parametrize("call", ["references", "reference"])  # API v2 (requests), v1 (pynessie)
def test_an_expired_token_is_fetched_again_once_and_the_call_retried(server, call):
    client, tokens = client_of(server, READER, ManualClock(server.idp.clock.now))

    def read():
        return client.reference("main") if call == "reference" else client.references()

    assert read()
    assert tokens.fetched == 1
    # The server's clock passes the token's expiry; the client's cache still trusts it.
    server.idp.clock.now += 3600 + 1
    assert read()  # refused once (401), then answered with a new token
    assert tokens.fetched == 2


def test_a_token_is_renewed_before_it_expires(server):
    clock = ManualClock(server.idp.clock.now)
    client, tokens = client_of(server, READER, clock)
    client.references()
    clock.now += 3600 - 59  # within the refresh margin (60 s) of its expiry
    client.references()
    assert tokens.fetched == 2
    clock.now += 1
    client.references()
    assert tokens.fetched == 2  # cached, not fetched per call


def test_a_401_after_a_fresh_token_is_an_authentication_error_after_one_retry(server):
    fetched = []

    def fetch(credentials, secret, *, now):  # a token the server does not take
        fetched.append(now)
        return AccessToken("not-a-token", now + 3600)

    tokens = TokenCache(server.credentials(READER), fetch=fetch)
    client = NessieClient(server.api_v2, tokens=tokens)
    with pytest.raises(NessieAuthenticationError, match="HTTP 401"):
        client.references()
    assert len(fetched) == 2  # the first token, and one more after the 401
    v1 = NessieClient(server.api_v1, tokens=tokens)
    with pytest.raises(NessieAuthenticationError, match="401"):
        v1.reference("main")
    assert len(fetched) == 3  # the cached token, then one more after its 401


def test_a_refusal_names_the_operation_and_the_reference(server):
    client, _ = client_of(server, TRIGGER, ManualClock(server.idp.clock.now), api="v1")
    client.ensure_branch_from_main("wap_sales_orders_20261127T110000_abcdef12")
    with pytest.raises(NessieForbiddenError) as refused:
        client.delete_branch("wap_sales_orders_20261127T110000_abcdef12")
    assert "'DELETE_REFERENCE' is not allowed for role 'wap-trigger' on reference " in str(
        refused.value
    )
    assert client.branch_hash("wap_sales_orders_20261127T110000_abcdef12") is not None


def test_credentials_the_token_endpoint_refuses_are_an_authentication_error(server):
    wrong = CatalogCredentials(server.credentials(READER).token_endpoint, READER, "wrong")
    with pytest.raises(NessieAuthenticationError, match="invalid_client"):
        NessieClient(server.api_v2, credentials=wrong).references()
    with pytest.raises(NessieAuthenticationError, match="invalid_client"):
        NessieClient(server.api_v1, credentials=wrong).reference("main")


def test_an_unreachable_token_endpoint_is_an_outage(server):
    gone = CatalogCredentials("http://127.0.0.1:9/idp/token", READER, "secret")
    with pytest.raises(NessieUnavailableError, match="unreachable"):
        NessieClient(server.api_v2, credentials=gone).references()


def test_credentials_come_from_the_environment_and_say_what_is_missing():
    env = {
        "WAP_NESSIE_TOKEN_ENDPOINT": "http://127.0.0.1:1/idp/token",
        "WAP_NESSIE_CLIENT_ID": "wap-trigger",
        "WAP_NESSIE_CLIENT_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:x",
    }
    creds = CatalogCredentials.from_environment(env)
    assert creds is not None and creds.client_secret is None
    assert creds.environment() == env
    assert CatalogCredentials.from_environment({}) is None
    with pytest.raises(ValueError, match="WAP_NESSIE_CLIENT_SECRET"):
        CatalogCredentials.from_environment({**env, "WAP_NESSIE_CLIENT_SECRET_ARN": ""})
    assert "secret=" not in repr(CatalogCredentials("http://x/t", "id", "s3cr3t"))
