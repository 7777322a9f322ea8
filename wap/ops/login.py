"""`wap --aws login`: a person signs in to the deployed stack's identity provider (Cognito).

How: OAuth 2.0 authorization code with PKCE (RFC 7636) and a loopback redirect
(RFC 8252, "OAuth 2.0 for Native Apps"), what `aws sso login`, `gcloud auth login` and
`az login` do: the browser opens the user pool's login page (MFA included), Cognito sends
the code back to `http://localhost:<port>/callback`, and the CLI trades it, with the PKCE
verifier, for tokens. The CLI's app client is public (a CLI cannot keep a secret; PKCE
binds the code to this process instead). Cognito has no device authorization grant, so
there is no code-on-another-device variant.

The tokens are kept per stack under the user's config directory
(`$XDG_CONFIG_HOME/wap/tokens/<stack>-<region>.json`, else `~/.config/...`), readable by
the user only (0600, the folder 0700), and renewed with the refresh token when the access
token is about to expire (`PersonTokens`, what the CLI's Nessie client asks for a token).
The browser (`opener`), the token endpoint (`post`) and the clock are injectable: the
tests sign in without a browser.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.constants import CLI_LOGIN_PATH, CLI_LOGIN_PORTS
from wap.exceptions import OpsError

SCOPES = "openid profile"
REFRESH_MARGIN_SECONDS = 60  # renew this long before the access token expires
LOGIN_TIMEOUT_SECONDS = 300

Post = Callable[[str, Mapping[str, str]], dict[str, Any]]


class LoginError(OpsError):
    """Signing in failed, or there is no sign-in to use (the message says what to run)."""


@dataclass(frozen=True)
class LoginConfig:
    """Where a person signs in: the user pool's domain and the CLI's app client."""

    login_url: str  # the stack's CatalogLoginUrl: https://<domain>.auth.<region>.amazoncognito.com
    client_id: str  # CatalogCliClientId
    cache_key: str  # <stack>-<region>: one sign-in per deployed stack

    @property
    def authorize_endpoint(self) -> str:
        return f"{self.login_url.rstrip('/')}/oauth2/authorize"

    @property
    def token_endpoint(self) -> str:
        return f"{self.login_url.rstrip('/')}/oauth2/token"

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, str], stack: str, region: str) -> LoginConfig:
        """From the stack's outputs; LoginError when the stack has no sign-in (deployed
        before issue 41)."""
        try:
            login_url, client_id = outputs["CatalogLoginUrl"], outputs["CatalogCliClientId"]
        except KeyError as exc:
            raise LoginError(
                f"stack {stack} has no output {exc.args[0]}: deploy it again to sign in"
            ) from None
        return cls(login_url, client_id, f"{stack}-{region}")


@dataclass(frozen=True)
class StoredTokens:
    """A sign-in: the access token, when it expires (epoch seconds), the refresh token."""

    access_token: str
    expires_at: float
    refresh_token: str | None = None

    @classmethod
    def from_response(
        cls, body: Mapping[str, Any], now: float, refresh_token: str | None = None
    ) -> StoredTokens:
        try:
            return cls(
                access_token=str(body["access_token"]),
                expires_at=now + float(body.get("expires_in", 3600)),
                # A refresh grant's answer has no new refresh token: keep the one we had.
                refresh_token=body.get("refresh_token") or refresh_token,
            )
        except (KeyError, TypeError, ValueError):
            raise LoginError("the token endpoint answered without an access token") from None


def token_file(cache_key: str, environ: Mapping[str, str] | None = None) -> Path:
    """Where the sign-in of `cache_key` is kept."""
    env = os.environ if environ is None else environ
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "wap" / "tokens" / f"{cache_key}.json"


def save_tokens(path: Path, tokens: StoredTokens) -> None:
    """Write `tokens` readable by the user only (the file 0600, its folder 0700)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(tokens.__dict__, handle)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def load_tokens(path: Path) -> StoredTokens | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return StoredTokens(**data)
    except (OSError, ValueError, TypeError):
        return None


def pkce_pair() -> tuple[str, str]:
    """(verifier, S256 challenge) of RFC 7636."""
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(48)).rstrip(b"=").decode()
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def post_form(url: str, form: Mapping[str, str]) -> dict[str, Any]:
    """POST a form to a token endpoint; its JSON answer, LoginError on a refusal."""
    request = urllib.request.Request(  # noqa: S310 - an https URL from the stack's outputs
        url,
        data=urllib.parse.urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return json.load(response)
    except urllib.error.HTTPError as exc:
        detail = exc.read(500).decode("utf-8", "replace")
        raise LoginError(f"the token endpoint refused ({exc.code}): {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise LoginError(f"cannot reach the token endpoint {url}: {exc}") from None


class _Callback(http.server.BaseHTTPRequestHandler):
    """The loopback redirect: takes one `/callback?code=...&state=...`."""

    result: dict[str, str]
    done: threading.Event

    def do_GET(self) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        if parsed.path != CLI_LOGIN_PATH:
            self.send_error(404)
            return
        self.result.update({k: v[0] for k, v in urllib.parse.parse_qs(parsed.query).items()})
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"Signed in to wap. You can close this tab.\n")
        self.done.set()

    def log_message(self, format: str, *args: Any) -> None:
        return


def _listen(ports: Sequence[int]) -> tuple[http.server.HTTPServer, int]:
    for port in ports:
        try:
            return http.server.HTTPServer(("127.0.0.1", port), _Callback), port
        except OSError:
            continue
    raise LoginError(
        f"none of the ports {', '.join(map(str, ports))} is free for the sign-in's redirect"
    )


def login(
    config: LoginConfig,
    *,
    opener: Callable[[str], Any] | None = None,
    post: Post = post_form,
    clock: Callable[[], float] = time.time,
    ports: Sequence[int] = CLI_LOGIN_PORTS,
    timeout: float = LOGIN_TIMEOUT_SECONDS,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Sign in through the browser (`opener`, default the system's) and keep the tokens;
    returns the file they are kept in."""
    if opener is None:
        import webbrowser

        opener = webbrowser.open
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(24)
    server, port = _listen(ports)
    result: dict[str, str] = {}
    done = threading.Event()
    handler = type("Callback", (_Callback,), {"result": result, "done": done})
    server.RequestHandlerClass = handler
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    redirect_uri = f"http://localhost:{port}{CLI_LOGIN_PATH}"
    try:
        opener(
            config.authorize_endpoint
            + "?"
            + urllib.parse.urlencode(
                {
                    "response_type": "code",
                    "client_id": config.client_id,
                    "redirect_uri": redirect_uri,
                    "scope": SCOPES,
                    "state": state,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                }
            )
        )
        if not done.wait(timeout):
            raise LoginError(f"no sign-in came back within {int(timeout)} s")
    finally:
        server.shutdown()
        server.server_close()
    if result.get("state") != state:
        raise LoginError("the sign-in's answer did not carry this request's state: refused")
    if "code" not in result:
        raise LoginError(
            f"sign-in refused: {result.get('error_description') or result.get('error')}"
        )
    body = post(
        config.token_endpoint,
        {
            "grant_type": "authorization_code",
            "client_id": config.client_id,
            "code": result["code"],
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
    )
    path = token_file(config.cache_key, environ)
    save_tokens(path, StoredTokens.from_response(body, clock()))
    return path


class PersonTokens:
    """The signed-in person's access token for the CLI's Nessie client, renewed with the
    refresh token shortly before it expires (or after a 401: `invalidate`)."""

    def __init__(
        self,
        config: LoginConfig,
        *,
        post: Post = post_form,
        clock: Callable[[], float] = time.time,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self._post = post
        self._clock = clock
        self._path = token_file(config.cache_key, environ)
        self._lock = threading.Lock()

    def token(self) -> str:
        with self._lock:
            stored = load_tokens(self._path)
            if stored is None:
                raise LoginError(f"not signed in to {self.config.cache_key}: run `wap --aws login`")
            if stored.expires_at - REFRESH_MARGIN_SECONDS > self._clock():
                return stored.access_token
            return self._refresh(stored).access_token

    def invalidate(self, token: str | None = None) -> None:
        """Forget the access token (Nessie refused it): the next `token()` renews it."""
        with self._lock:
            stored = load_tokens(self._path)
            if stored is not None and token in (None, stored.access_token):
                save_tokens(
                    self._path, StoredTokens(stored.access_token, 0.0, stored.refresh_token)
                )

    def _refresh(self, stored: StoredTokens) -> StoredTokens:
        if not stored.refresh_token:
            raise LoginError(
                f"the sign-in to {self.config.cache_key} expired: run `wap --aws login`"
            )
        try:
            body = self._post(
                self.config.token_endpoint,
                {
                    "grant_type": "refresh_token",
                    "client_id": self.config.client_id,
                    "refresh_token": stored.refresh_token,
                },
            )
        except LoginError as exc:
            raise LoginError(f"{exc}; run `wap --aws login`") from None
        renewed = StoredTokens.from_response(body, self._clock(), stored.refresh_token)
        save_tokens(self._path, renewed)
        return renewed
