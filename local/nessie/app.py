"""The Starlette application: one endpoint per API version over one store."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Route

from . import routes_v1, routes_v2
from .http import make_endpoint
from .store import NessieStore

_METHODS = ["GET", "POST", "PUT", "DELETE"]


def create_app(store: NessieStore) -> Starlette:
    """Serve Nessie API v1 under /api/v1 and v2 under /api/v2 from `store`."""
    v1 = make_endpoint(store, routes_v1.ROUTES, "/api/v1")
    v2 = make_endpoint(store, routes_v2.ROUTES, "/api/v2")
    return Starlette(
        routes=[
            Route("/api/v1", v1, methods=_METHODS),
            Route("/api/v1/{rest:path}", v1, methods=_METHODS),
            Route("/api/v2", v2, methods=_METHODS),
            Route("/api/v2/{rest:path}", v2, methods=_METHODS),
        ]
    )
