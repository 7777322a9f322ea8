"""The UI's sign-in, as Nessie's `ui-app` OIDC tenant (Quarkus, `application-type=web-app`)
does it on AWS: a page asked for without a session redirects the browser to the identity
provider's login (local/idp.py `/idp/authorize`), which sends it back to the UI's root with
a code; the code is traded for the person's access token, kept in an HttpOnly session
cookie (Quarkus: `q_session`), and the browser goes on to the page it first asked for
(Quarkus restores the path it kept in its `q_auth` state cookie). The token expires with
the session; the next page then signs in again. Every page is then authorized with the
person's roles as the API calls of Nessie's UI are (routes.py).
"""

from __future__ import annotations

import base64
import binascii
import secrets
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from local.idp import PATH, InvalidGrantError, Principal

from ..authz import Security
from ..exceptions import UnauthorizedError

UI_CLIENT = "ui-app"  # the UI's web client at the identity provider (the tenant's name)
SESSION_COOKIE = "wap_ui_session"  # the signed-in person's access token
LOGIN_COOKIE = "wap_ui_login"  # while signing in: the request's state and the page asked for
LOGIN_SECONDS = 600  # how long a sign-in may take


class SignInError(Exception):
    """The answer of a sign-in that cannot be taken (status and what to tell the person)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class UiSignIn:
    """The UI's side of the authorization code flow, against the server's own IdP."""

    def __init__(self, security: Security) -> None:
        self.security = security
        idp = security.idp
        # The identity provider is bound to the server's URL before the app is built.
        self.redirect_uri = idp.issuer[: -len(PATH)] + "/"
        idp.register_web_client(UI_CLIENT, self.redirect_uri)

    def principal(self, request: Request) -> Principal | None:
        """Who the request's session is, if it has a valid one."""
        token = request.cookies.get(SESSION_COOKIE)
        if not token:
            return None
        try:
            return self.security.authenticate(f"Bearer {token}")
        except UnauthorizedError:
            return None

    def to_login(self, request: Request) -> Response:
        """Send the browser to the login page, keeping where it wanted to go."""
        state = secrets.token_urlsafe(16)
        # The path as sent (a `%2F` in a reference name stays encoded), with its query.
        raw: bytes = request.scope.get("raw_path") or request.url.path.encode()
        path = raw.split(b"?", 1)[0].decode("ascii", "replace")
        wanted = path + (f"?{request.url.query}" if request.url.query else "")
        query = {
            "response_type": "code",
            "client_id": UI_CLIENT,
            "redirect_uri": self.redirect_uri,
            "scope": "openid",
            "state": state,
        }
        response = RedirectResponse(
            f"{self.security.idp.authorization_endpoint}?{urlencode(query)}", status_code=302
        )
        kept = f"{state}.{base64.urlsafe_b64encode(wanted.encode()).decode()}"
        _set_cookie(response, LOGIN_COOKIE, kept, LOGIN_SECONDS)
        return response

    def finish(self, request: Request) -> Response:
        """The login's answer at the redirect URI: trade the code, start the session, go
        back to the page first asked for. SignInError when the answer cannot be taken."""
        state, wanted = _kept(request.cookies.get(LOGIN_COOKIE, ""))
        params = request.query_params
        if not state or not secrets.compare_digest(
            state.encode(), params.get("state", "").encode()
        ):
            raise SignInError(400, "This sign-in was not started here, or took too long: reload.")
        if "error" in params:
            raise SignInError(401, f"Sign-in refused: {params['error']}")
        try:
            token = self.security.idp.redeem(UI_CLIENT, params.get("code", ""), self.redirect_uri)
        except InvalidGrantError as exc:
            raise SignInError(401, f"Sign-in refused: {exc}") from None
        lifetime = int(self.security.idp.verify(token).expires_at - self.security.idp.clock())
        response = RedirectResponse(wanted, status_code=302)
        _set_cookie(response, SESSION_COOKIE, token, max(lifetime, 0))
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response


def _set_cookie(response: Response, name: str, value: str, max_age: int) -> None:
    # Lax: sent on the top-level navigation back from the login page; HttpOnly: no script
    # (there is none) reads the token.
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="lax")


def _kept(cookie: str) -> tuple[str, str]:
    """(state, page asked for) of the login cookie; ("", "/") when it is unusable. Only a
    path on this server is kept: the redirect never leaves it."""
    state, sep, encoded = cookie.partition(".")
    if not sep:
        return "", "/"
    try:
        wanted = base64.urlsafe_b64decode(encoded.encode()).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return "", "/"
    if not wanted.startswith("/") or wanted.startswith("//") or "\\" in wanted:
        wanted = "/"
    return state, wanted
