"""The Starlette application: one endpoint per API version over one store, the UI, and the
identity provider's endpoints when the server authenticates (local/idp.py)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Route

from . import routes_v1, routes_v2
from .authz import Security
from .http import make_endpoint
from .store import NessieStore
from .ui import ui_routes

_METHODS = ["GET", "POST", "PUT", "DELETE"]


def create_app(
    store: NessieStore,
    iceberg_properties: dict[str, str] | None = None,
    security: Security | None = None,
) -> Starlette:
    """Serve Nessie API v1 under /api/v1 and v2 under /api/v2 from `store`, and the read-only
    UI on the paths of Nessie's web UI (tables read with `iceberg_properties`). With
    `security`, the APIs take only its IdP's tokens (served under /idp) and authorize
    every operation, and the UI signs people in at that IdP (ui/session.py) and shows what
    their roles may read."""
    v1 = make_endpoint(store, routes_v1.ROUTES, "/api/v1", security)
    v2 = make_endpoint(store, routes_v2.ROUTES, "/api/v2", security)
    idp_routes = security.idp.routes() if security is not None else []
    return Starlette(
        routes=[
            Route("/api/v1", v1, methods=_METHODS),
            Route("/api/v1/{rest:path}", v1, methods=_METHODS),
            Route("/api/v2", v2, methods=_METHODS),
            Route("/api/v2/{rest:path}", v2, methods=_METHODS),
            *idp_routes,
            *ui_routes(store, iceberg_properties, security),
        ]
    )
