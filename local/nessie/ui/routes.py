"""HTTP edge of the catalog UI: parse the path, call `pages`, render with `html`. GET only.

Path segments are split on the raw (still percent-encoded) path, so a reference name
with '/' sent as `%2F` stays one segment, as Nessie's UI encodes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..exceptions import BadRequestError, NessieApiError, NotFoundError
from ..store import NessieStore
from . import html, pages

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

View = Callable[[NessieStore, dict[str, str], list[str], Request], Response]


def _segments(request: Request, prefix: str) -> list[str]:
    raw: bytes = request.scope.get("raw_path") or request.url.path.encode()
    rest = raw.split(b"?", 1)[0][len(prefix) :].decode("utf-8", "strict")
    try:
        return [unquote(s, errors="strict") for s in rest.split("/") if s]
    except UnicodeDecodeError:
        raise BadRequestError("Path is not valid UTF-8") from None


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


def _tree(store: NessieStore, props: dict[str, str], seg: list[str], req: Request) -> Response:
    if not seg:
        return RedirectResponse(html.tree_url(store.default_branch), status_code=302)
    return _html(html.render_tree(pages.tree_page(store, seg[0], seg[1:])))


def _content(store: NessieStore, props: dict[str, str], seg: list[str], req: Request) -> Response:
    if len(seg) < 2:  # Nessie's UI sends a bare `/content/<ref>` back to the listing
        target = html.tree_url(seg[0]) if seg else html.tree_url(store.default_branch)
        return RedirectResponse(target, status_code=302)
    return _html(html.render_content(pages.content_page(store, seg[0], seg[1:], props)))


def _commits(store: NessieStore, props: dict[str, str], seg: list[str], req: Request) -> Response:
    if not seg:
        return RedirectResponse(html.commits_url(store.default_branch), status_code=302)
    if len(seg) == 1:
        page = pages.log_page(store, seg[0], req.query_params.get("page") or None)
        return _html(html.render_log(page))
    if len(seg) == 2:
        return _html(html.render_commit(pages.commit_page(store, seg[0], seg[1])))
    raise NotFoundError("No such page")


def _diff(store: NessieStore, props: dict[str, str], seg: list[str], req: Request) -> Response:
    if len(seg) != 1:
        raise NotFoundError("Use /diff/<reference>[?base=<reference>]")
    base = req.query_params.get("base") or None
    return _html(html.render_diff(pages.diff_page(store, seg[0], props, base_name=base)))


def _endpoint(
    store: NessieStore, props: dict[str, str], prefix: str, view: View
) -> Callable[[Request], Response]:
    # A plain function: Starlette runs it in its thread pool, so reading table files does
    # not hold up the API's requests on the event loop.
    def endpoint(request: Request) -> Response:
        try:
            return view(store, props, _segments(request, prefix), request)
        except NessieApiError as exc:
            return _html(html.render_error(exc.status, exc.message), exc.status)
        except UnicodeDecodeError:
            return _html(html.render_error(400, "Path is not valid UTF-8"), 400)
        except Exception:  # a page, never a traceback
            LOG.exception("catalog UI failed on %s", request.url.path)
            return _html(html.render_error(500, "Internal server error"), 500)

    return endpoint


def ui_routes(
    store: NessieStore, iceberg_properties: dict[str, str] | None = None
) -> list[BaseRoute]:
    """Routes of the read-only UI over `store` (tables read with these pyiceberg properties)."""
    props = dict(iceberg_properties or {})
    views: dict[str, View] = {
        "/tree": _tree,
        "/content": _content,
        "/commits": _commits,
        "/diff": _diff,
    }
    routes: list[BaseRoute] = [
        Route(
            "/",
            lambda request: RedirectResponse(html.tree_url(store.default_branch), 302),
            methods=_METHODS,
        )
    ]
    for prefix, view in views.items():
        endpoint = _endpoint(store, props, prefix, view)
        routes.append(Route(prefix, endpoint, methods=_METHODS))
        routes.append(Route(prefix + "/{rest:path}", endpoint, methods=_METHODS))
    return routes


__all__ = ["SECURITY_HEADERS", "ui_routes"]
