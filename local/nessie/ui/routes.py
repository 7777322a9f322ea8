"""HTTP edge of the catalog UI: parse the path, call `pages`, render with `html`. GET only.

Path segments are split on the raw (still percent-encoded) path, so a reference name
with '/' sent as `%2F` stays one segment, as Nessie's UI encodes it.

When the server authenticates, every page needs a signed-in session (session.py; without
one the browser is sent to the login and back) and asks for the access checks the API
calls of Nessie's UI for that page ask for (authz.py), so a refused page is Nessie's 403.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from contracts.catalog_authorization import VIEW_REFERENCE

from ..authz import Checks, Security
from ..exceptions import BadRequestError, NessieApiError, NotFoundError
from ..store import NessieStore
from . import html, pages
from .session import SignInError, UiSignIn

LOG = logging.getLogger(__name__)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_METHODS = ["GET", "HEAD"]


@dataclass(frozen=True)
class PageCall:
    """One page request as a view sees it: the path's segments after the view's prefix, the
    request (its query), the signed-in person's access checks, and the pyiceberg properties
    tables are read with."""

    segments: list[str]
    request: Request
    access: Checks
    props: dict[str, str]


View = Callable[[NessieStore, PageCall], Response]


def _segments(request: Request, prefix: str) -> list[str]:
    raw: bytes = request.scope.get("raw_path") or request.url.path.encode()
    rest = raw.split(b"?", 1)[0][len(prefix) :].decode("utf-8", "strict")
    try:
        return [unquote(s, errors="strict") for s in rest.split("/") if s]
    except UnicodeDecodeError:
        raise BadRequestError("Path is not valid UTF-8") from None


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


def _ref(spec: str) -> str:
    """The reference name of a page's `<ref>` (`name` or `name@hash`): what is checked."""
    return spec.partition("@")[0]


def _tree(store: NessieStore, call: PageCall) -> Response:
    seg, access = call.segments, call.access
    if not seg:
        return RedirectResponse(html.tree_url(store.default_branch), status_code=302)
    access.read_entries(_ref(seg[0])).check_and_throw()  # Nessie's UI: getEntries
    page = pages.tree_page(store, seg[0], seg[1:])
    # The reference picker lists what the person may view (getAllReferences filters so).
    refs = [r for r in page.refs if access.allowed(VIEW_REFERENCE, r.name)]
    return _html(html.render_tree(replace(page, refs=refs)))


def _content(store: NessieStore, call: PageCall) -> Response:
    seg, access = call.segments, call.access
    if len(seg) < 2:  # Nessie's UI sends a bare `/content/<ref>` back to the listing
        target = html.tree_url(seg[0]) if seg else html.tree_url(store.default_branch)
        return RedirectResponse(target, status_code=302)
    # Nessie's UI: getContent (the page also compares with the default branch's table).
    key = tuple(seg[1:])
    access.read_entity(_ref(seg[0]), key, None).read_entity(store.default_branch, key, None)
    access.check_and_throw()
    return _html(html.render_content(pages.content_page(store, seg[0], seg[1:], call.props)))


def _commits(store: NessieStore, call: PageCall) -> Response:
    seg, access = call.segments, call.access
    if not seg:
        return RedirectResponse(html.commits_url(store.default_branch), status_code=302)
    access.list_commit_log(_ref(seg[0])).check_and_throw()  # Nessie's UI: getCommitLog
    if len(seg) == 1:
        page = pages.log_page(store, seg[0], call.request.query_params.get("page") or None)
        return _html(html.render_log(page))
    if len(seg) == 2:
        return _html(html.render_commit(pages.commit_page(store, seg[0], seg[1])))
    raise NotFoundError("No such page")


def _diff(store: NessieStore, call: PageCall) -> Response:
    seg, access = call.segments, call.access
    if len(seg) != 1:
        raise NotFoundError("Use /diff/<reference>[?base=<reference>]")
    base = call.request.query_params.get("base") or None
    # Ours: both references' entries and tables, and their logs (for the merge base).
    for name in (_ref(seg[0]), _ref(base or store.default_branch)):
        access.read_entries(name).list_commit_log(name)
    access.check_and_throw()
    return _html(html.render_diff(pages.diff_page(store, seg[0], call.props, base_name=base)))


def _endpoint(
    store: NessieStore, props: dict[str, str], prefix: str, view: View, sign_in: UiSignIn | None
) -> Callable[[Request], Response]:
    # A plain function: Starlette runs it in its thread pool, so reading table files does
    # not hold up the API's requests on the event loop.
    def endpoint(request: Request) -> Response:
        try:
            access = Checks(None, None)  # a server that does not authenticate: all pass
            if sign_in is not None:
                principal = sign_in.principal(request)
                if principal is None:
                    return sign_in.to_login(request)
                access = sign_in.security.checks(principal)
            return view(store, PageCall(_segments(request, prefix), request, access, props))
        except NessieApiError as exc:
            return _html(html.render_error(exc.status, exc.message), exc.status)
        except UnicodeDecodeError:
            return _html(html.render_error(400, "Path is not valid UTF-8"), 400)
        except Exception:  # a page, never a traceback
            LOG.exception("catalog UI failed on %s", request.url.path)
            return _html(html.render_error(500, "Internal server error"), 500)

    return endpoint


def _root(store: NessieStore, sign_in: UiSignIn | None) -> Callable[[Request], Response]:
    """`/`: the default branch's listing, and the redirect URI the login answers at."""

    def root(request: Request) -> Response:
        answer = "code" in request.query_params or "error" in request.query_params
        if sign_in is None or not answer:
            return RedirectResponse(html.tree_url(store.default_branch), 302)
        try:
            return sign_in.finish(request)
        except SignInError as exc:
            return _html(html.render_error(exc.status, str(exc)), exc.status)

    return root


def ui_routes(
    store: NessieStore,
    iceberg_properties: dict[str, str] | None = None,
    security: Security | None = None,
) -> list[BaseRoute]:
    """Routes of the read-only UI over `store` (tables read with these pyiceberg properties);
    with `security`, for signed-in people only, each page authorized with their roles."""
    props = dict(iceberg_properties or {})
    sign_in = UiSignIn(security) if security is not None else None
    views: dict[str, View] = {
        "/tree": _tree,
        "/content": _content,
        "/commits": _commits,
        "/diff": _diff,
    }
    routes: list[BaseRoute] = [Route("/", _root(store, sign_in), methods=_METHODS)]
    for prefix, view in views.items():
        endpoint = _endpoint(store, props, prefix, view, sign_in)
        routes.append(Route(prefix, endpoint, methods=_METHODS))
        routes.append(Route(prefix + "/{rest:path}", endpoint, methods=_METHODS))
    return routes


__all__ = ["SECURITY_HEADERS", "ui_routes"]
