"""The catalog's access tokens: OAuth2 client credentials (RFC 6749 section 4.4), cached.

Every caller of Nessie presents a bearer token of its role's client: the Lambdas and the
`wap` tools (ingestion/nessie.py) and the Spark job's own calls (spark_jobs/catalog.py;
its Iceberg catalog fetches tokens itself from the same settings). Standard library only:
the job runs it on EMR's Python 3.9.

Settings, from the environment (`CatalogCredentials.from_environment`):
  WAP_NESSIE_TOKEN_ENDPOINT      the identity provider's token endpoint
  WAP_NESSIE_CLIENT_ID           the role's client id
  WAP_NESSIE_CLIENT_SECRET       its secret (local stand-ins set it), or
  WAP_NESSIE_CLIENT_SECRET_ARN   the Secrets Manager secret holding it (AWS; resolved by
                                 the caller's `secret_loader`)
No token endpoint: the catalog is called without a token (a deployment without
authentication).
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ENV_TOKEN_ENDPOINT = "WAP_NESSIE_TOKEN_ENDPOINT"  # noqa: S105 - a variable name
ENV_CLIENT_ID = "WAP_NESSIE_CLIENT_ID"
ENV_CLIENT_SECRET = "WAP_NESSIE_CLIENT_SECRET"  # noqa: S105 - a variable name
ENV_CLIENT_SECRET_ARN = "WAP_NESSIE_CLIENT_SECRET_ARN"  # noqa: S105 - a variable name
# A token is renewed this long before it expires (a call in flight must not outlive it).
REFRESH_MARGIN_SECONDS = 60.0
_TIMEOUT_SECONDS = 10.0


class TokenError(Exception):
    """The token endpoint refused the client (bad id or secret, unknown grant): permanent."""


class TokenEndpointUnavailableError(TokenError):
    """The token endpoint could not be reached or failed (5xx): retry later."""


@dataclass(frozen=True)
class CatalogCredentials:
    """One role's client at the identity provider. `client_secret` is None when it lives in
    Secrets Manager (`client_secret_arn`), read when the first token is fetched."""

    token_endpoint: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    client_secret_arn: str | None = None

    def __post_init__(self) -> None:
        if not self.token_endpoint.startswith(("http://", "https://")):
            raise ValueError(f"{ENV_TOKEN_ENDPOINT} must be an http(s) URL")
        if not self.client_id:
            raise ValueError(f"{ENV_CLIENT_ID} is required with {ENV_TOKEN_ENDPOINT}")
        if not self.client_secret and not self.client_secret_arn:
            raise ValueError(
                f"{ENV_CLIENT_SECRET} or {ENV_CLIENT_SECRET_ARN} is required with "
                f"{ENV_TOKEN_ENDPOINT}"
            )

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> CatalogCredentials | None:
        """The credentials `env` names; None when it names no token endpoint. ValueError
        when the endpoint is set but the client is incomplete."""
        endpoint = (env.get(ENV_TOKEN_ENDPOINT) or "").strip()
        if not endpoint:
            return None
        return cls(
            token_endpoint=endpoint,
            client_id=(env.get(ENV_CLIENT_ID) or "").strip(),
            client_secret=env.get(ENV_CLIENT_SECRET) or None,
            client_secret_arn=env.get(ENV_CLIENT_SECRET_ARN) or None,
        )

    def environment(self) -> dict[str, str]:
        """These credentials as the environment variables `from_environment` reads."""
        env = {ENV_TOKEN_ENDPOINT: self.token_endpoint, ENV_CLIENT_ID: self.client_id}
        if self.client_secret:
            env[ENV_CLIENT_SECRET] = self.client_secret
        if self.client_secret_arn:
            env[ENV_CLIENT_SECRET_ARN] = self.client_secret_arn
        return env


@dataclass(frozen=True)
class AccessToken:
    """A bearer token and when it stops being valid (epoch seconds, by the cache's clock)."""

    value: str = field(repr=False)
    expires_at: float


def request_token(
    credentials: CatalogCredentials,
    secret: str,
    *,
    now: float,
    timeout: float = _TIMEOUT_SECONDS,
) -> AccessToken:
    """One client-credentials grant: POST the form with HTTP Basic client authentication
    (RFC 6749 sections 2.3.1 and 4.4.2); the answer's `access_token` and `expires_in`."""
    basic = base64.b64encode(
        f"{_form_quote(credentials.client_id)}:{_form_quote(secret)}".encode()
    ).decode()
    request = urllib.request.Request(  # noqa: S310 - the scheme is checked by CatalogCredentials
        credentials.token_endpoint,
        method="POST",
        data=urllib.parse.urlencode({"grant_type": "client_credentials"}).encode(),
        headers={
            "Authorization": f"Basic {basic}",
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            body = json.load(response)
    except urllib.error.HTTPError as exc:
        detail = _error_detail(exc)
        if exc.code >= 500:
            raise TokenEndpointUnavailableError(
                f"token endpoint {credentials.token_endpoint} failed (HTTP {exc.code}): {detail}"
            ) from exc
        raise TokenError(
            f"token endpoint {credentials.token_endpoint} refused client "
            f"{credentials.client_id!r} (HTTP {exc.code}): {detail}"
        ) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise TokenEndpointUnavailableError(
            f"token endpoint {credentials.token_endpoint} unreachable: {exc}"
        ) from exc
    token, lifetime = body.get("access_token"), body.get("expires_in")
    if not isinstance(token, str) or not token or str(body.get("token_type")).lower() != "bearer":
        raise TokenError(f"token endpoint {credentials.token_endpoint} sent no bearer token")
    if not isinstance(lifetime, (int, float)) or lifetime <= 0:
        lifetime = 300  # RFC 6749 5.1: expires_in is only RECOMMENDED; assume a short life
    return AccessToken(token, now + float(lifetime))


def _form_quote(text: str) -> str:
    # RFC 6749 2.3.1: client id and secret are form-urlencoded before Basic encoding.
    return urllib.parse.quote_plus(text)


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        return exc.reason if isinstance(exc.reason, str) else "no detail"
    if isinstance(body, dict) and body.get("error"):
        return " ".join(str(body.get(k, "")) for k in ("error", "error_description")).strip()
    return "no detail"


class TokenCache:
    """The current token of one client, fetched on first use and again `margin` seconds
    before it expires, or after `invalidate()` (the catalog answered 401). Thread-safe.

    `secret_loader` resolves `client_secret_arn` (Secrets Manager) when there is no
    `client_secret`; `fetch` and `clock` are injectable for tests."""

    def __init__(
        self,
        credentials: CatalogCredentials,
        *,
        clock: Callable[[], float] = time.time,
        margin: float = REFRESH_MARGIN_SECONDS,
        secret_loader: Callable[[str], str] | None = None,
        fetch: Callable[..., AccessToken] = request_token,
    ) -> None:
        self.credentials = credentials
        self._clock = clock
        self._margin = margin
        self._secret_loader = secret_loader
        self._fetch = fetch
        self._token: AccessToken | None = None
        self._secret: str | None = credentials.client_secret
        self._lock = threading.Lock()
        self.fetched = 0  # how many tokens were requested (tests and measurements)

    def token(self) -> str:
        """A token valid for at least `margin` more seconds."""
        with self._lock:
            now = self._clock()
            current = self._token
            if current is None or now >= current.expires_at - self._margin:
                secret = self._client_secret()
                current = self._token = self._fetch(self.credentials, secret, now=now)
                self.fetched += 1
            return current.value

    def invalidate(self, token: str | None = None) -> None:
        """Forget the token (only if it is still `token`, when given): the next call fetches
        a new one."""
        with self._lock:
            if token is None or (self._token is not None and self._token.value == token):
                self._token = None

    def _client_secret(self) -> str:
        if self._secret:
            return self._secret
        arn = self.credentials.client_secret_arn
        if not arn or self._secret_loader is None:
            raise TokenError(
                f"client {self.credentials.client_id!r}: no secret and no way to read {arn!r}"
            )
        self._secret = self._secret_loader(arn)
        return self._secret


_caches: dict[Any, TokenCache] = {}
_caches_lock = threading.Lock()


def shared_cache(
    credentials: CatalogCredentials, *, secret_loader: Callable[[str], str] | None = None
) -> TokenCache:
    """The process's one cache for `credentials` (a Lambda's warm invocations and a
    command's clients reuse its token instead of fetching one each)."""
    # Per function too: on Lambda each function is a process of its own that reads its
    # role's secret itself (its own grant); the local stack runs them in one process.
    key = (
        os.environ.get("AWS_LAMBDA_FUNCTION_NAME", ""),
        credentials.token_endpoint,
        credentials.client_id,
        credentials.client_secret,
        credentials.client_secret_arn,
    )
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = TokenCache(credentials, secret_loader=secret_loader)
        return cache
