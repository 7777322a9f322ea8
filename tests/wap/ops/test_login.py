"""`wap --aws login` (wap/ops/login.py) without a browser: the injected opener plays Cognito's
login page (it checks the PKCE challenge and sends the code to the loopback redirect), the
injected token endpoint checks the verifier; tokens are kept 0600 and renewed."""

from __future__ import annotations

import base64
import hashlib
import socket
import stat
import urllib.parse
import urllib.request

import pytest

from wap.ops import login as signin

CONFIG = signin.LoginConfig(
    login_url="https://wapingest-123.auth.eu-west-1.amazoncognito.com",
    client_id="cli-client",
    cache_key="WapIngest-eu-west-1",
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class FakeCognito:
    """The login page (`open`) and the token endpoint (`post`) of a user pool."""

    def __init__(self, *, state_override: str | None = None) -> None:
        self.challenge: str | None = None
        self.redirect_uri: str | None = None
        self.posts: list[dict[str, str]] = []
        self.state_override = state_override
        self.issued = 0

    def open(self, url: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        assert f"{parsed.scheme}://{parsed.netloc}{parsed.path}" == CONFIG.authorize_endpoint
        query = dict(urllib.parse.parse_qsl(parsed.query))
        assert query["response_type"] == "code" and query["client_id"] == "cli-client"
        assert query["code_challenge_method"] == "S256"
        self.challenge, self.redirect_uri = query["code_challenge"], query["redirect_uri"]
        state = self.state_override or query["state"]
        back = f"{self.redirect_uri}?code=the-code&state={urllib.parse.quote(state)}"
        urllib.request.urlopen(back.replace("localhost", "127.0.0.1"), timeout=5).read()

    def post(self, url: str, form: dict[str, str]) -> dict:
        assert url == CONFIG.token_endpoint
        self.posts.append(dict(form))
        if form["grant_type"] == "authorization_code":
            digest = hashlib.sha256(form["code_verifier"].encode()).digest()
            assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == self.challenge
            assert form["code"] == "the-code" and form["redirect_uri"] == self.redirect_uri
            return {"access_token": "access-1", "refresh_token": "refresh-1", "expires_in": 3600}
        assert form == {
            "grant_type": "refresh_token",
            "client_id": "cli-client",
            "refresh_token": "refresh-1",
        }
        self.issued += 1
        return {"access_token": f"access-{self.issued + 1}", "expires_in": 3600}


@pytest.fixture
def environ(tmp_path):
    return {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_a_person_signs_in_with_pkce_and_the_tokens_are_theirs_alone(environ):
    cognito = FakeCognito()
    port = _free_port()
    path = signin.login(
        CONFIG,
        opener=cognito.open,
        post=cognito.post,
        clock=lambda: 1000.0,
        ports=[port],
        environ=environ,
    )
    assert cognito.redirect_uri == f"http://localhost:{port}/callback"
    assert path == signin.token_file(CONFIG.cache_key, environ)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert signin.load_tokens(path) == signin.StoredTokens("access-1", 4600.0, "refresh-1")


def test_an_answer_with_another_state_is_refused(environ):
    cognito = FakeCognito(state_override="forged")
    with pytest.raises(signin.LoginError, match="state"):
        signin.login(
            CONFIG, opener=cognito.open, post=cognito.post, ports=[_free_port()], environ=environ
        )
    assert cognito.posts == []  # the code is never traded
    assert not signin.token_file(CONFIG.cache_key, environ).exists()


def test_the_access_token_is_renewed_before_it_expires_and_after_a_refusal(environ):
    cognito = FakeCognito()
    now = [1000.0]
    signin.login(
        CONFIG,
        opener=cognito.open,
        post=cognito.post,
        clock=lambda: now[0],
        ports=[_free_port()],
        environ=environ,
    )
    tokens = signin.PersonTokens(CONFIG, post=cognito.post, clock=lambda: now[0], environ=environ)
    assert tokens.token() == "access-1"
    now[0] = 1000.0 + 3600 - 30  # inside the renewal margin
    assert tokens.token() == "access-2"
    assert tokens.token() == "access-2"  # kept until it is due again
    tokens.invalidate("access-2")  # Nessie answered 401
    assert tokens.token() == "access-3"
    path = signin.token_file(CONFIG.cache_key, environ)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_without_a_sign_in_the_cli_says_what_to_run(environ):
    tokens = signin.PersonTokens(CONFIG, environ=environ)
    with pytest.raises(signin.LoginError, match="wap --aws login"):
        tokens.token()


def test_a_stack_without_sign_in_outputs_is_named():
    with pytest.raises(signin.LoginError, match="CatalogLoginUrl"):
        signin.LoginConfig.from_outputs({}, "WapIngest", "eu-west-1")


def test_the_cli_calls_the_catalog_as_the_signed_in_person(environ, tmp_path):
    from ingestion.nessie import NessieClient
    from local.nessie.runner import start_server
    from wap.ops.aws_backend import _person_tokens

    server = start_server(str(tmp_path / "nessie.db"), secure=True)
    try:
        outputs = {"CatalogLoginUrl": CONFIG.login_url, "CatalogCliClientId": "cli-client"}
        tokens = _person_tokens(outputs, "WapIngest", "eu-west-1")
        assert tokens.config == CONFIG
        tokens = signin.PersonTokens(CONFIG, environ=environ)
        client = NessieClient(server.api_v1, tokens=tokens)
        with pytest.raises(signin.LoginError, match="wap --aws login"):
            client.reference("main")
        person = signin.StoredTokens(server.token("wap-operator"), 1e12, "refresh-1")
        signin.save_tokens(signin.token_file(CONFIG.cache_key, environ), person)
        assert client.reference("main").name == "main"
    finally:
        server.stop()


def test_wap_login_at_the_local_identity_provider_and_a_renewal_there(tmp_path):
    """The whole sign-in against a real server: the local IdP's login form, its PKCE check
    of the public CLI client, a refresh at its token endpoint (Cognito's paths)."""
    from ingestion.nessie import NessieClient
    from local.nessie.runner import start_server
    from tests.fixtures.catalog_auth import sign_in, sign_in_outputs

    server = start_server(str(tmp_path / "nessie.db"))
    try:
        path = sign_in(server, "WapIngest", "eu-west-1", "ada", "wap-operator", tmp_path / "cfg")
        first = signin.load_tokens(path)
        assert first is not None and first.refresh_token
        assert server.idp.verify(first.access_token).roles == ("wap-operator",)
        config = signin.LoginConfig.from_outputs(sign_in_outputs(server), "WapIngest", "eu-west-1")
        due = first.expires_at  # inside the renewal margin
        environ = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
        tokens = signin.PersonTokens(config, clock=lambda: due, environ=environ)
        renewed = tokens.token()
        assert renewed != first.access_token and server.idp.verify(renewed).name == "ada"
        assert NessieClient(server.api_v2, tokens=tokens).reference("main").name == "main"
    finally:
        server.stop()
