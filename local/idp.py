"""A local stand-in of the catalog's identity provider: signed JWTs for one client per role.

What Nessie's OIDC setup needs from an IdP, served by the local Nessie server's process
under `/idp` (no process of its own):
- `POST /idp/token`: OAuth2 client credentials (RFC 6749 section 4.4). Client
  authentication by HTTP Basic or by `client_id`/`client_secret` form fields (2.3.1);
  answers `access_token`, `token_type` "Bearer", `expires_in` (5.1) or an RFC 6749 5.2
  error. Iceberg's Java Nessie client (`authentication.type=OAUTH2`, `token-endpoint`) and
  contracts/catalog_tokens.py both use it.
- `GET|POST /idp/authorize`: the authorization code flow (RFC 6749 4.1, PKCE of RFC 7636
  when the client sends a challenge) for people, what Cognito's hosted login page does for
  Nessie's `ui-app` tenant and `wap --aws login`: a login form for a person of the people
  table (`people.yaml` next to the catalog's database: name -> roles; without one, a
  single operator, DEFAULT_PERSON). No password: the server answers this machine only.
  The code is traded at the token endpoint (`grant_type=authorization_code`) by a client
  registered with that redirect URI: a web client (`register_web_client`, with its
  secret) or a public one (`register_public_client`, PKCE required, as a CLI's); either
  gets no client-credentials token. The answer has a refresh token
  (`grant_type=refresh_token`: a new access token, the same refresh token, as Cognito).
  Cognito's paths (`/oauth2/authorize`, `/oauth2/token`) are served under /idp too, so
  wap/ops/login.py signs in here with the login URL `<server>/idp`.
- `GET /idp/jwks`: the signing key set; `GET /idp/.well-known/openid-configuration`.
Tokens are RS256 JWTs (joserfc) with `iss`, `sub` (the client id, or a signed-in
person's name: Nessie's principal name, the `role` of its rules), `client_id`, `roles`
(contracts.catalog_authorization.ROLES_CLAIM), `iat`, `exp`, `jti`. `verify` checks what
Quarkus OIDC checks for a bearer token: signature, issuer and expiry, with the injectable
clock.

Each role of contracts.catalog_authorization has a client whose id is the role's name;
secrets are random per provider (a server process), handed to in-process callers by
`credentials(role)`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlencode

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from contracts.catalog_authorization import OPERATOR, READER, ROLES, ROLES_CLAIM
from contracts.catalog_tokens import CatalogCredentials

PATH = "/idp"
TOKEN_LIFETIME_SECONDS = 3600
ALGORITHM = "RS256"
_MAX_FORM_BYTES = 16 * 1024
CODE_LIFETIME_SECONDS = 60  # an authorization code is traded at once (RFC 6749 4.1.2: max 10 min)
PEOPLE_FILE = "people.yaml"  # next to the catalog's database (the home's .wap/nessie.db)
PEOPLE_ROLES = (OPERATOR, READER)  # the people's roles (Cognito groups on AWS)
DEFAULT_PERSON = "operator"  # who signs in without a people table: an operator
_key_lock = threading.Lock()
_process_key: RSAKey | None = None


def _default_key() -> RSAKey:
    """One signing key per process: generating an RSA key costs ~0.2 s, and every test
    module starts a server."""
    global _process_key
    with _key_lock:
        if _process_key is None:
            _process_key = new_signing_key()
        return _process_key


def new_signing_key() -> RSAKey:
    """A fresh RS256 signing key with its own key id."""
    return RSAKey.generate_key(
        2048, parameters={"kid": uuid.uuid4().hex[:16], "use": "sig", "alg": ALGORITHM}
    )


@dataclass(frozen=True)
class LocalClient:
    """A registered client: its secret and the roles its tokens carry; a web client (with
    `redirect_uris`) signs people in instead and gets no token of its own."""

    client_id: str
    client_secret: str = field(repr=False)
    roles: tuple[str, ...]
    redirect_uris: tuple[str, ...] = ()


@dataclass(frozen=True)
class Person:
    """Someone who may sign in, and the roles their tokens carry (none: every check fails)."""

    name: str
    roles: tuple[str, ...]


@dataclass(frozen=True)
class _Grant:
    """An authorization code's promise: whom it signs in, for which client and redirect."""

    person: str
    client_id: str
    redirect_uri: str
    challenge: str | None
    expires_at: float


class PeopleError(ValueError):
    """A people table that is not `name: role` or `name: [roles]` with people's roles."""


def default_people() -> dict[str, Person]:
    """Without a people table: one operator."""
    return {DEFAULT_PERSON: Person(DEFAULT_PERSON, (OPERATOR,))}


def load_people(path: Path) -> dict[str, Person]:
    """The people table at `path` (YAML: `name: role`, `name: [role, ...]` or `name: []`);
    `default_people()` when there is none. PeopleError names what is wrong."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default_people()
    try:
        table = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PeopleError(f"{path}: not YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(table, dict) or not table:
        raise PeopleError(f"{path}: expected `name: role` lines")
    people: dict[str, Person] = {}
    for name, value in table.items():
        roles = [value] if isinstance(value, str) else value
        if not isinstance(name, str) or not name.strip() or not isinstance(roles, list):
            raise PeopleError(f"{path}: {name!r}: expected `name: role` or `name: [roles]`")
        unknown = [r for r in roles if r not in PEOPLE_ROLES]
        if unknown:
            raise PeopleError(
                f"{path}: {name}: {unknown[0]!r} is not a people's role ({', '.join(PEOPLE_ROLES)})"
            )
        people[name.strip()] = Person(name.strip(), tuple(roles))
    return people


@dataclass(frozen=True)
class Principal:
    """Who a valid token says is calling: Nessie's principal name and roles."""

    name: str
    roles: tuple[str, ...]
    expires_at: float = 0.0  # the token's `exp`


class InvalidTokenError(Exception):
    """A bearer token that is malformed, not ours, or expired."""


def role_clients() -> dict[str, LocalClient]:
    """One client per role of the rules file, named after it, with a random secret."""
    return {role: LocalClient(role, secrets.token_urlsafe(24), (role,)) for role in ROLES}


class LocalIdentityProvider:
    """Clients, a signing key and a clock; `bind(base_url)` once the server's address is
    known (the issuer and token endpoint are URLs under it)."""

    def __init__(
        self,
        clients: Mapping[str, LocalClient] | None = None,
        *,
        clock: Callable[[], float] = time.time,
        lifetime_seconds: int = TOKEN_LIFETIME_SECONDS,
        key: RSAKey | None = None,
        people: Mapping[str, Person] | None = None,
    ) -> None:
        self.clients = dict(role_clients() if clients is None else clients)
        self.people = dict(default_people() if people is None else people)
        self._codes: dict[str, _Grant] = {}
        self._refresh: dict[str, tuple[str, str]] = {}  # refresh token -> person, client id
        self._codes_lock = threading.Lock()
        self.clock = clock
        self.lifetime_seconds = lifetime_seconds
        self._key = key or _default_key()
        self.issuer = "http://127.0.0.1" + PATH
        self.issued = 0  # tokens issued (tests and measurements)

    def bind(self, base_url: str) -> None:
        """Serve under `base_url` (the Nessie server's): the issuer is `<base_url>/idp`."""
        self.issuer = base_url.rstrip("/") + PATH

    @property
    def token_endpoint(self) -> str:
        return self.issuer + "/token"

    @property
    def authorization_endpoint(self) -> str:
        return self.issuer + "/authorize"

    def register_web_client(self, client_id: str, redirect_uri: str) -> LocalClient:
        """Add (or replace) a web client that signs people in and is sent back to
        `redirect_uri`; it is the only redirect its codes are issued for."""
        client = LocalClient(client_id, secrets.token_urlsafe(24), (), (redirect_uri,))
        self.clients[client_id] = client
        return client

    def register_public_client(self, client_id: str, redirect_uris: tuple[str, ...]) -> None:
        """Add (or replace) a client without a secret (a CLI: PKCE binds its codes instead)
        that signs people in and is sent back to one of `redirect_uris`."""
        self.clients[client_id] = LocalClient(client_id, "", (), redirect_uris)

    def register(self, client_id: str, roles: tuple[str, ...]) -> CatalogCredentials:
        """Add a client whose tokens carry `roles` (kept if it exists); its credentials."""
        if client_id not in self.clients:
            self.clients[client_id] = LocalClient(client_id, secrets.token_urlsafe(24), roles)
        return self.credentials(client_id)

    def credentials(self, client_id: str) -> CatalogCredentials:
        """What a caller acting as `client_id` (a role's name) needs to get tokens."""
        client = self.clients[client_id]
        return CatalogCredentials(self.token_endpoint, client.client_id, client.client_secret)

    # ---- tokens ----------------------------------------------------------------------------

    def issue(self, client_id: str, *, lifetime_seconds: int | None = None) -> str:
        """A signed token for a registered client (the token endpoint's work, and tests')."""
        client = self.clients[client_id]
        return self._sign(client.client_id, client.client_id, client.roles, lifetime_seconds)

    def issue_person(
        self, name: str, client_id: str, *, lifetime_seconds: int | None = None
    ) -> str:
        """A signed token for a person of the people table, issued to `client_id`."""
        person = self.people[name]
        return self._sign(person.name, client_id, person.roles, lifetime_seconds)

    def _sign(
        self, subject: str, client_id: str, roles: tuple[str, ...], lifetime: int | None
    ) -> str:
        now = int(self.clock())
        claims = {
            "iss": self.issuer,
            "sub": subject,
            "client_id": client_id,
            ROLES_CLAIM: list(roles),
            "iat": now,
            "exp": now + (lifetime or self.lifetime_seconds),
            "jti": uuid.uuid4().hex,
        }
        header = {"alg": ALGORITHM, "kid": self._key.kid, "typ": "JWT"}
        self.issued += 1
        return jwt.encode(header, claims, self._key)

    def verify(self, token: str) -> Principal:
        """The principal of a valid token; InvalidTokenError (why) otherwise."""
        try:
            decoded = jwt.decode(token, KeySet([self._key]), algorithms=[ALGORITHM])
        except (JoseError, ValueError, TypeError) as exc:
            raise InvalidTokenError(f"invalid token: {type(exc).__name__}") from None
        claims = decoded.claims
        registry = jwt.JWTClaimsRegistry(
            now=lambda: int(self.clock()),
            iss={"essential": True, "value": self.issuer},
            exp={"essential": True},
            sub={"essential": True},
        )
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise InvalidTokenError(f"invalid token: {exc.error}") from None
        roles = claims.get(ROLES_CLAIM) or []
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise InvalidTokenError(f"invalid token: '{ROLES_CLAIM}' is not a list of names")
        return Principal(str(claims["sub"]), tuple(roles), float(claims["exp"]))

    # ---- the token endpoint ----------------------------------------------------------------

    def token_response(self, form: Mapping[str, str], authorization: str | None) -> Response:
        """RFC 6749 4.4: the answer to a token request's form and Authorization header."""
        basic = _basic_credentials(authorization)
        if basic is _MALFORMED:
            return _oauth_error(401, "invalid_client", "malformed Basic credentials", basic=True)
        if basic is not None and ("client_secret" in form or "client_id" in form):
            # 2.3: a client MUST NOT use more than one authentication method per request.
            return _oauth_error(400, "invalid_request", "more than one client authentication")
        client_id, secret = (
            basic
            if basic is not None
            else (
                form.get("client_id"),
                form.get("client_secret"),
            )
        )
        grant = form.get("grant_type")
        if not grant:
            return _oauth_error(400, "invalid_request", "grant_type is required")
        client = self.clients.get(client_id or "")
        public = client is not None and not client.client_secret  # 3.2.1: identified by id
        if client is None or (
            not public
            and (
                secret is None
                or not secrets.compare_digest(client.client_secret.encode(), secret.encode())
            )
        ):
            return _oauth_error(401, "invalid_client", "client authentication failed", basic)
        body: dict[str, Any] = {}
        people_grants = ("authorization_code", "refresh_token")
        try:
            if grant == "authorization_code" and client.redirect_uris:
                taken = self._take_code(
                    client.client_id,
                    form.get("code", ""),
                    form.get("redirect_uri", ""),
                    form.get("code_verifier"),
                )
                token = self.issue_person(taken.person, client.client_id)
                body["refresh_token"] = self._new_refresh(taken.person, client.client_id)
            elif grant == "refresh_token" and client.redirect_uris:
                token = self._refreshed(client.client_id, form.get("refresh_token", ""))
            elif grant == "client_credentials" and not client.redirect_uris:
                token = self.issue(client.client_id)
            elif grant in ("client_credentials", *people_grants):
                return _oauth_error(400, "unauthorized_client", f"grant_type {grant!r}")
            else:
                return _oauth_error(400, "unsupported_grant_type", f"grant_type {grant!r}")
        except InvalidGrantError as exc:
            return _oauth_error(400, "invalid_grant", str(exc))
        body.update(
            {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime_seconds}
        )
        # 5.1: token answers are not cached.
        return JSONResponse(body, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    # ---- the authorization code flow (people) ------------------------------------------------

    def web_client(self, client_id: str, redirect_uri: str) -> LocalClient | None:
        """The web client `client_id` when `redirect_uri` is exactly one of its own."""
        client = self.clients.get(client_id)
        if client is None or redirect_uri not in client.redirect_uris:
            return None
        return client

    def grant_code(
        self, person: str, client_id: str, redirect_uri: str, challenge: str | None
    ) -> str:
        """A one-time code signing `person` in to the web client (4.1.2)."""
        code = secrets.token_urlsafe(24)
        grant = _Grant(
            person, client_id, redirect_uri, challenge, self.clock() + CODE_LIFETIME_SECONDS
        )
        with self._codes_lock:
            now = self.clock()
            self._codes = {c: g for c, g in self._codes.items() if g.expires_at > now}
            self._codes[code] = grant
        return code

    def redeem(
        self, client_id: str, code: str, redirect_uri: str, verifier: str | None = None
    ) -> str:
        """The person's access token for a code (4.1.3: once, by the client it was issued
        to, with the same redirect URI, and the PKCE verifier when it had a challenge);
        InvalidGrantError otherwise."""
        return self.issue_person(
            self._take_code(client_id, code, redirect_uri, verifier).person, client_id
        )

    def _new_refresh(self, person: str, client_id: str) -> str:
        token = secrets.token_urlsafe(32)
        with self._codes_lock:
            self._refresh[token] = (person, client_id)
        return token

    def _refreshed(self, client_id: str, refresh_token: str) -> str:
        """6: a new access token for a refresh token of this client."""
        with self._codes_lock:
            person, owner = self._refresh.get(refresh_token, ("", ""))
        if owner != client_id or person not in self.people:
            raise InvalidGrantError("the refresh token is unknown or not this client's")
        return self.issue_person(person, client_id)

    def _take_code(
        self, client_id: str, code: str, redirect_uri: str, verifier: str | None
    ) -> _Grant:
        with self._codes_lock:
            grant = self._codes.pop(code, None)
        if grant is None or grant.expires_at <= self.clock():
            raise InvalidGrantError("the code is unknown, used or expired")
        if grant.client_id != client_id or grant.redirect_uri != redirect_uri:
            raise InvalidGrantError("the code was issued to another client or redirect")
        if grant.challenge is not None and (
            verifier is None
            or not secrets.compare_digest(_s256(verifier).encode(), grant.challenge.encode())
        ):
            raise InvalidGrantError("the PKCE verifier does not match the challenge")
        if grant.person not in self.people:
            raise InvalidGrantError("the person is no longer in the people table")
        return grant

    def authorize_response(self, params: Mapping[str, str], submitted: bool) -> Response:
        """4.1.1: the login form for an authorization request; once a person's name is
        submitted, the redirect back with a code (4.1.2) or the form again."""
        client_id, redirect_uri = params.get("client_id", ""), params.get("redirect_uri", "")
        client = self.web_client(client_id, redirect_uri)
        if client is None:
            # 4.1.2.1: never redirect to an unverified URI; tell the person instead.
            return _login_page(400, "Unknown client or redirect URI.", {}, "")
        if params.get("response_type") != "code":
            return _redirect_error(redirect_uri, "unsupported_response_type", params)
        method = params.get(
            "code_challenge_method", "plain" if params.get("code_challenge") else ""
        )
        if method not in ("", "S256") or (not client.client_secret and not method):
            # Only S256; a public client's code is bound to it by PKCE or by nothing.
            return _redirect_error(redirect_uri, "invalid_request", params)
        carried = {
            k: params[k]
            for k in ("response_type", "client_id", "redirect_uri", "state", "code_challenge")
            if params.get(k)
        }
        if method:
            carried["code_challenge_method"] = method
        name = (params.get("person") or "").strip()
        if not submitted:
            default = DEFAULT_PERSON if DEFAULT_PERSON in self.people else ""
            return _login_page(200, "", carried, default)
        if name not in self.people:
            return _login_page(
                401, f"{name or 'Nobody'} is not in the people table.", carried, name
            )
        code = self.grant_code(name, client_id, redirect_uri, params.get("code_challenge"))
        answer = {"code": code, **({"state": params["state"]} if params.get("state") else {})}
        return RedirectResponse(_with_query(redirect_uri, answer), status_code=302)

    def discovery(self) -> dict[str, Any]:
        """The OpenID provider metadata a client may discover the endpoint from."""
        return {
            "issuer": self.issuer,
            "token_endpoint": self.token_endpoint,
            "authorization_endpoint": self.authorization_endpoint,
            "jwks_uri": self.issuer + "/jwks",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "grant_types_supported": ["client_credentials", "authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "id_token_signing_alg_values_supported": [ALGORITHM],
        }

    def routes(self) -> list[Route]:
        """The provider's HTTP routes, under PATH."""

        async def token(request: Request) -> Response:
            content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if content_type != "application/x-www-form-urlencoded":
                return _oauth_error(400, "invalid_request", "expected a form-encoded body")
            raw = await request.body()
            if len(raw) > _MAX_FORM_BYTES:
                return _oauth_error(400, "invalid_request", "request too large")
            pairs = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
            names = [name for name, _ in pairs]
            if len(names) != len(set(names)):  # 3.2: parameters MUST NOT be repeated
                return _oauth_error(400, "invalid_request", "a parameter is repeated")
            return self.token_response(dict(pairs), request.headers.get("authorization"))

        async def authorize(request: Request) -> Response:
            if request.method == "GET":
                return self.authorize_response(dict(request.query_params), submitted=False)
            raw = await request.body()
            if len(raw) > _MAX_FORM_BYTES:
                return _login_page(400, "Request too large.", {}, "")
            form = dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
            return self.authorize_response(form, submitted=True)

        async def jwks(_: Request) -> Response:
            return JSONResponse({"keys": [self._key.as_dict(private=False)]})

        async def discovery(_: Request) -> Response:
            return JSONResponse(self.discovery())

        return [
            Route(PATH + "/token", token, methods=["POST"]),
            Route(PATH + "/authorize", authorize, methods=["GET", "POST"]),
            # Cognito's paths, where wap/ops/login.py looks for them under the login URL.
            Route(PATH + "/oauth2/token", token, methods=["POST"]),
            Route(PATH + "/oauth2/authorize", authorize, methods=["GET", "POST"]),
            Route(PATH + "/jwks", jwks, methods=["GET"]),
            Route(PATH + "/.well-known/openid-configuration", discovery, methods=["GET"]),
        ]


class InvalidGrantError(Exception):
    """An authorization code that may not be traded (RFC 6749 5.2 `invalid_grant`)."""


_MALFORMED: Any = object()
_LOGIN_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _with_query(uri: str, params: Mapping[str, str]) -> str:
    return uri + ("&" if "?" in uri else "?") + urlencode(params)


def _redirect_error(redirect_uri: str, error: str, params: Mapping[str, str]) -> Response:
    answer = {"error": error, **({"state": params["state"]} if params.get("state") else {})}
    return RedirectResponse(_with_query(redirect_uri, answer), status_code=302)


def _login_page(status: int, message: str, carried: Mapping[str, str], name: str) -> Response:
    """The login form: the person's name, the authorization request carried along."""
    hidden = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in carried.items()
    )
    form = (
        f'<form method="post" action="{PATH}/authorize">{hidden}'
        f'<label>Name <input name="person" value="{html.escape(name)}" autofocus></label> '
        '<button type="submit">Sign in</button></form>'
        if carried
        else ""
    )
    note = f'<p class="error">{html.escape(message)}</p>' if message else ""
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Sign in: local catalog</title></head><body>"
        f"<h1>Sign in to the local catalog</h1>{note}{form}</body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=_LOGIN_HEADERS)


def _basic_credentials(authorization: str | None) -> Any:
    """(client_id, secret) from `Authorization: Basic`, None without one, _MALFORMED."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return _MALFORMED
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        return _MALFORMED
    return unquote_plus(client_id), unquote_plus(secret)


def _oauth_error(status: int, error: str, description: str, basic: Any = None) -> Response:
    headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}
    if status == 401 and basic is not None:
        headers["WWW-Authenticate"] = 'Basic realm="wap-local-idp"'
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers=headers
    )
