"""A local stand-in of the catalog's identity provider: signed JWTs for one client per role.

What Nessie's OIDC setup needs from an IdP, served by the local Nessie server's process
under `/idp` (no process of its own):
- `POST /idp/token`: OAuth2 client credentials (RFC 6749 section 4.4). Client
  authentication by HTTP Basic or by `client_id`/`client_secret` form fields (2.3.1);
  answers `access_token`, `token_type` "Bearer", `expires_in` (5.1) or an RFC 6749 5.2
  error. Iceberg's Java Nessie client (`authentication.type=OAUTH2`, `token-endpoint`) and
  contracts/catalog_tokens.py both use it.
- `GET /idp/jwks`: the signing key set; `GET /idp/.well-known/openid-configuration`.
Tokens are RS256 JWTs (joserfc) with `iss`, `sub` (the client id: Nessie's principal
name, the `role` of its rules), `roles` (contracts.catalog_authorization.ROLES_CLAIM),
`iat`, `exp`, `jti`. `verify` checks what Quarkus OIDC checks for a bearer token:
signature, issuer and expiry, with the injectable clock.

Each role of contracts.catalog_authorization has a client whose id is the role's name;
secrets are random per provider (a server process), handed to in-process callers by
`credentials(role)`.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from contracts.catalog_authorization import ROLES, ROLES_CLAIM
from contracts.catalog_tokens import CatalogCredentials

PATH = "/idp"
TOKEN_LIFETIME_SECONDS = 3600
ALGORITHM = "RS256"
_MAX_FORM_BYTES = 16 * 1024
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
    """A registered client: its secret and the roles its tokens carry."""

    client_id: str
    client_secret: str = field(repr=False)
    roles: tuple[str, ...]


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
    ) -> None:
        self.clients = dict(role_clients() if clients is None else clients)
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
        now = int(self.clock())
        claims = {
            "iss": self.issuer,
            "sub": client.client_id,
            "client_id": client.client_id,
            ROLES_CLAIM: list(client.roles),
            "iat": now,
            "exp": now + (lifetime_seconds or self.lifetime_seconds),
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
        if (
            client is None
            or secret is None
            or not secrets.compare_digest(client.client_secret.encode(), secret.encode())
        ):
            return _oauth_error(401, "invalid_client", "client authentication failed", basic)
        if grant != "client_credentials":
            return _oauth_error(400, "unsupported_grant_type", f"grant_type {grant!r}")
        body = {
            "access_token": self.issue(client.client_id),
            "token_type": "Bearer",
            "expires_in": self.lifetime_seconds,
        }
        # 5.1: token answers are not cached.
        return JSONResponse(body, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    def discovery(self) -> dict[str, Any]:
        """The OpenID provider metadata a client may discover the endpoint from."""
        return {
            "issuer": self.issuer,
            "token_endpoint": self.token_endpoint,
            "jwks_uri": self.issuer + "/jwks",
            "grant_types_supported": ["client_credentials"],
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

        async def jwks(_: Request) -> Response:
            return JSONResponse({"keys": [self._key.as_dict(private=False)]})

        async def discovery(_: Request) -> Response:
            return JSONResponse(self.discovery())

        return [
            Route(PATH + "/token", token, methods=["POST"]),
            Route(PATH + "/jwks", jwks, methods=["GET"]),
            Route(PATH + "/.well-known/openid-configuration", discovery, methods=["GET"]),
        ]


_MALFORMED: Any = object()


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
