"""The home's catalog (Nessie API + UI) on a fixed address, so links outlive the command.

Commands run their own catalog server on a free port while they work; links that
people keep (Slack alerts, `wap show`, the dashboard) name this fixed address
instead, `http://127.0.0.1:<WAP_CATALOG_PORT or 19120>`, which `wap serve` (or
`wap dashboard`) serves from the same SQLite file at any later time.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from wap.runtime.home import HomeError, WapHome

if TYPE_CHECKING:
    from local.nessie.runner import RunningServer

ENV_CATALOG_PORT = "WAP_CATALOG_PORT"
DEFAULT_CATALOG_PORT = 19120
CATALOG_HOST = "127.0.0.1"  # no authentication in front of it: this machine only


def catalog_port(env: Mapping[str, str] | None = None) -> int:
    """The configured port (`$WAP_CATALOG_PORT`, default 19120); HomeError when invalid."""
    raw = (os.environ if env is None else env).get(ENV_CATALOG_PORT, "").strip()
    if not raw:
        return DEFAULT_CATALOG_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise HomeError(f"{ENV_CATALOG_PORT} must be a port number 1-65535, got {raw!r}")
    return int(raw)


def catalog_url(port: int | None = None) -> str:
    """Base URL of the home's catalog UI and API at the fixed address."""
    return f"http://{CATALOG_HOST}:{port or catalog_port()}"


def start_catalog(home: WapHome, port: int, host: str = CATALOG_HOST) -> RunningServer:
    """Serve the home's catalog in a background thread (stop it with `.stop()`);
    HomeError when the home has no state or the port is taken."""
    from local.idp import PeopleError
    from local.nessie.runner import start_server

    if not home.exists():
        raise HomeError(
            f"no local state in {home.root} yet: run `wap demo` or `wap ingest` first "
            "(or pass --home)"
        )
    try:
        return start_server(str(home.nessie_db), host=host, port=port)
    except PeopleError as exc:  # who may sign in to the UI: the home's people.yaml
        raise HomeError(str(exc)) from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise HomeError(
                f"port {port} on {host} is in use (another `wap serve`, `wap dashboard` or "
                f"`make nessie`?): stop it or choose another with --port / {ENV_CATALOG_PORT}"
            ) from None
        raise HomeError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
