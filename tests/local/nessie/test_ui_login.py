"""The catalog UI behind a login, as Nessie's behind its `ui-app` OIDC tenant: without a
session the browser goes to the identity provider's login (local/idp.py), comes back with
a code, gets a session, and lands on the page it asked for (the link of an alert); pages
are then read with the person's roles (people.yaml next to the database)."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from local.idp import (
    DEFAULT_PERSON,
    InvalidGrantError,
    LocalIdentityProvider,
    PeopleError,
    Person,
    load_people,
)
from local.nessie.ui.session import LOGIN_COOKIE, SESSION_COOKIE, UI_CLIENT, _kept
from tests.fixtures.catalog_auth import ui_login

PEOPLE = "ada: wap-operator\nrae: [wap-reader]\nsam: []\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from local.nessie.runner import start_server

    folder = tmp_path_factory.mktemp("ui-login")
    (folder / "people.yaml").write_text(PEOPLE)
    running = start_server(str(folder / "nessie.db"))  # the service's rules
    yield running
    running.stop()


def get(url: str, session: requests.Session | None = None) -> requests.Response:
    return (session or requests).get(url, timeout=30, allow_redirects=False)


def test_a_page_without_a_session_redirects_to_the_login_of_the_identity_provider(server):
    response = get(f"{server.url}/tree/main")

    assert response.status_code == 302
    target = urlsplit(response.headers["location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{server.url}/idp/authorize"
    query = {k: v[0] for k, v in parse_qs(target.query).items()}
    assert query["client_id"] == UI_CLIENT and query["response_type"] == "code"
    assert query["redirect_uri"] == f"{server.url}/"
    assert query["state"] in response.cookies[LOGIN_COOKIE]
    assert SESSION_COOKIE not in response.cookies
    login = get(response.headers["location"])
    assert login.status_code == 200 and '<form method="post"' in login.text


def test_an_alerts_link_lands_on_its_page_after_the_login(server):
    wanted = "/commits/main?page="  # any page of the UI, query string included
    browser = ui_login(server.url, "rae", wanted=wanted)  # asserts the redirect back

    page = get(server.url + wanted, browser)
    assert page.status_code == 200 and "main" in page.text
    assert get(f"{server.url}/tree/main", browser).status_code == 200


def test_a_reference_name_with_an_encoded_slash_survives_the_login(server):
    browser = ui_login(server.url, "ada", wanted="/tree/feature%2Fx")
    assert get(f"{server.url}/tree/feature%2Fx", browser).status_code == 404  # no such branch


def test_a_person_without_a_role_gets_nessies_403(server):
    browser = ui_login(server.url, "sam")

    page = get(f"{server.url}/tree/main", browser)
    assert page.status_code == 403
    message = "'READ_ENTRIES' is not allowed for role 'sam' on reference 'main'"
    assert message in html.unescape(page.text)
    assert get(f"{server.url}/commits/main", browser).status_code == 403


def test_someone_not_in_the_people_table_gets_no_code(server):
    asked = get(f"{server.url}/tree/main")
    query = {k: v[0] for k, v in parse_qs(urlsplit(asked.headers["location"]).query).items()}
    answer = requests.post(
        f"{server.url}/idp/authorize",
        data={**query, "person": "mallory"},
        timeout=30,
        allow_redirects=False,
    )
    assert answer.status_code == 401 and "mallory is not in the people table" in answer.text


def test_an_answer_the_browser_did_not_ask_for_starts_no_session(server):
    forged = get(f"{server.url}/?code=abc&state=xyz")
    assert forged.status_code == 400 and SESSION_COOKIE not in forged.cookies
    asked = requests.Session()
    get(f"{server.url}/tree/main", asked)  # the login cookie, with its own state
    wrong = get(f"{server.url}/?code=abc&state=xyz", asked)
    assert wrong.status_code == 400 and SESSION_COOKIE not in wrong.cookies


def test_an_expired_session_signs_in_again(tmp_path):
    from local.nessie.runner import start_server

    now = [1_000_000.0]
    idp = LocalIdentityProvider(clock=lambda: now[0])
    running = start_server(str(tmp_path / "nessie.db"), idp=idp)
    try:
        browser = ui_login(running.url)
        assert get(f"{running.url}/tree/main", browser).status_code == 200
        now[0] += idp.lifetime_seconds + 1
        assert get(f"{running.url}/tree/main", browser).status_code == 302
    finally:
        running.stop()


# ---- the identity provider's side, without a server ------------------------------------------


def _provider() -> LocalIdentityProvider:
    idp = LocalIdentityProvider(people={"ada": Person("ada", ("wap-operator",))})
    idp.register_web_client("app", "http://127.0.0.1:1/")
    return idp


def test_a_code_is_traded_once_by_its_client_for_its_redirect_with_its_verifier():
    idp = _provider()
    verifier = "v" * 50
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    challenge_text = challenge.rstrip(b"=").decode()
    code = idp.grant_code("ada", "app", "http://127.0.0.1:1/", challenge_text)
    with pytest.raises(InvalidGrantError, match="PKCE"):
        idp.redeem("app", code, "http://127.0.0.1:1/", "w" * 50)
    code = idp.grant_code("ada", "app", "http://127.0.0.1:1/", challenge_text)
    principal = idp.verify(idp.redeem("app", code, "http://127.0.0.1:1/", verifier))
    assert (principal.name, principal.roles) == ("ada", ("wap-operator",))
    with pytest.raises(InvalidGrantError, match="used"):
        idp.redeem("app", code, "http://127.0.0.1:1/", verifier)
    other = idp.grant_code("ada", "app", "http://127.0.0.1:1/", None)
    with pytest.raises(InvalidGrantError, match="another client or redirect"):
        idp.redeem("app", other, "http://127.0.0.1:2/")


def test_the_token_endpoint_trades_a_code_and_refuses_a_web_client_its_own_token():
    idp = _provider()
    client = idp.clients["app"]
    code = idp.grant_code("ada", "app", "http://127.0.0.1:1/", None)
    form = {"client_id": "app", "client_secret": client.client_secret}
    trade = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": "http://127.0.0.1:1/",
    }
    traded = idp.token_response({**form, **trade}, None)
    assert traded.status_code == 200
    refused = idp.token_response({**form, "grant_type": "client_credentials"}, None)
    assert refused.status_code == 400 and b"unauthorized_client" in refused.body


def test_an_unregistered_redirect_is_never_followed():
    response = _provider().authorize_response(
        {"response_type": "code", "client_id": "app", "redirect_uri": "http://evil.example/"},
        submitted=True,
    )
    assert response.status_code == 400 and "location" not in response.headers


def test_the_page_kept_for_after_the_login_is_a_path_on_this_server():
    def kept(path: str) -> str:
        return _kept("s." + base64.urlsafe_b64encode(path.encode()).decode())[1]

    assert kept("/tree/main?x=1") == "/tree/main?x=1"
    assert kept("//evil.example/x") == "/" and kept("https://evil.example") == "/"
    assert kept("/\\evil.example") == "/"
    assert _kept("garbage") == ("", "/")


def test_the_people_table(tmp_path):
    assert load_people(tmp_path / "none.yaml") == {
        DEFAULT_PERSON: Person(DEFAULT_PERSON, ("wap-operator",))
    }
    table = tmp_path / "people.yaml"
    table.write_text(PEOPLE)
    assert load_people(table)["rae"] == Person("rae", ("wap-reader",))
    assert load_people(table)["sam"] == Person("sam", ())
    table.write_text("eve: wap-publisher\n")  # a machine's role, not a person's
    with pytest.raises(PeopleError, match="not a people's role"):
        load_people(table)
    table.write_text("- ada\n")
    with pytest.raises(PeopleError, match="name: role"):
        load_people(table)


def test_a_state_or_challenge_that_is_not_ascii_is_refused_not_a_crash(server):
    asked = requests.Session()
    get(f"{server.url}/tree/main", asked)
    answer = get(f"{server.url}/?code=abc&state=%C3%A9", asked)
    assert answer.status_code == 400
    idp = _provider()
    code = idp.grant_code("ada", "app", "http://127.0.0.1:1/", "é")
    with pytest.raises(InvalidGrantError, match="PKCE"):
        idp.redeem("app", code, "http://127.0.0.1:1/", "v" * 50)


def test_a_public_client_needs_pkce_and_its_refresh_token_is_its_own():
    idp = _provider()
    idp.register_public_client("cli", ("http://localhost:1/callback",))
    request = {"response_type": "code", "client_id": "cli", "state": "s", "person": "ada"}
    request["redirect_uri"] = "http://localhost:1/callback"
    refused = idp.authorize_response(request, submitted=True)
    assert "error=invalid_request" in refused.headers["location"]  # no code without PKCE
    verifier = "v" * 50
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    request.update(code_challenge=challenge.rstrip(b"=").decode(), code_challenge_method="S256")
    answer = urlsplit(idp.authorize_response(request, submitted=True).headers["location"])
    code = parse_qs(answer.query)["code"][0]
    trade = {"grant_type": "authorization_code", "client_id": "cli", "code": code}
    trade.update(redirect_uri="http://localhost:1/callback", code_verifier=verifier)
    traded = json.loads(idp.token_response(trade, None).body)
    assert idp.verify(traded["access_token"]).name == "ada"
    renew = {"grant_type": "refresh_token", "refresh_token": traded["refresh_token"]}
    renewed = json.loads(idp.token_response({**renew, "client_id": "cli"}, None).body)
    assert idp.verify(renewed["access_token"]).name == "ada"
    app = idp.clients["app"]
    stolen = idp.token_response(
        {**renew, "client_id": "app", "client_secret": app.client_secret}, None
    )
    assert stolen.status_code == 400 and b"invalid_grant" in stolen.body
