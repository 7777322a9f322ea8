"""Run the server in a background thread (tests, local mode) or in the foreground (CLI)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from contracts.catalog_authorization import load_rules
from contracts.catalog_tokens import CatalogCredentials
from local.idp import PEOPLE_FILE, LocalIdentityProvider, Person, load_people

from .app import create_app
from .authz import Security
from .store import NessieStore


@dataclass
class RunningServer:
    """A started server: its URLs and a way to stop it."""

    host: str
    port: int
    store: NessieStore
    _server: uvicorn.Server
    _thread: threading.Thread
    _socket: socket.socket
    security: Security | None = None

    @property
    def idp(self) -> LocalIdentityProvider:
        """The identity provider whose tokens this server takes (served under /idp)."""
        if self.security is None:
            raise RuntimeError("this server does not authenticate")
        return self.security.idp

    def credentials(self, role: str) -> CatalogCredentials:
        """Client credentials of `role` (a name of contracts.catalog_authorization.ROLES)."""
        return self.idp.credentials(role)

    def token(self, role: str) -> str:
        """A bearer token of `role`, signed by this server's identity provider."""
        return self.idp.issue(role)

    @property
    def url(self) -> str:
        return base_url(self.host, self.port)

    @property
    def api_v1(self) -> str:
        return self.url + "/api/v1"

    @property
    def api_v2(self) -> str:
        return self.url + "/api/v2"

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stopped (or `timeout` passed); True once it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop serving, wait for the thread, close the database."""
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._socket.close()
        self.store.close()


def make_security(
    *,
    secure: bool = True,
    rules: Mapping[str, str] | None = None,
    idp: LocalIdentityProvider | None = None,
    people: Mapping[str, Person] | None = None,
) -> Security | None:
    """What a server enforces: nothing (`secure=False`), or tokens of `idp` (a new one by
    default, signing in `people`) and `rules` (the service's rules file by default)."""
    if not secure:
        return None
    provider = idp or LocalIdentityProvider(people=people)
    return Security(provider, load_rules() if rules is None else rules)


def people_of(db_path: str) -> dict[str, Person]:
    """The people who may sign in to the catalog UI: the table next to the database (the
    home's `people.yaml`), else one operator (local/idp.py)."""
    return load_people(Path(db_path).with_name(PEOPLE_FILE))


def _config(store: NessieStore, host: str, port: int, security: Security | None) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(store, security=security),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
    )


def start_server(
    db_path: str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    secure: bool = True,
    rules: Mapping[str, str] | None = None,
    idp: LocalIdentityProvider | None = None,
) -> RunningServer:
    """Start a server on `host:port` (0 = a free port) backed by the SQLite file `db_path`,
    authenticating and authorizing as `make_security` says (the service's rules, a new
    identity provider signing in the people of `people_of(db_path)`, by default).

    Returns once the server accepts connections.
    """
    people = people_of(db_path) if secure and idp is None else None
    security = make_security(secure=secure, rules=rules, idp=idp, people=people)
    store = NessieStore(db_path)
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on sockets that say they are
    # TCP, and without it Nagle + delayed ACKs cost ~40 ms per response.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    if security is not None:
        security.idp.bind(base_url(host, bound_port))
    server = uvicorn.Server(_config(store, host, bound_port, security))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"nessie-{bound_port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            store.close()
            raise RuntimeError(f"Nessie server on {host}:{bound_port} did not start")
        time.sleep(0.01)
    return RunningServer(host, bound_port, store, server, thread, sock, security)


def base_url(host: str, port: int) -> str:
    """The URL a server bound to `host:port` is reached at."""
    # A wildcard bind is reached through loopback; IPv6 literals need brackets.
    wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104
    host = wildcard.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve_forever(db_path: str, host: str, port: int, security: Security | None = None) -> None:
    """Serve in the foreground until interrupted."""
    store = NessieStore(db_path)
    if security is not None:
        security.idp.bind(base_url(host, port))
    try:
        uvicorn.Server(_config(store, host, port, security)).run()
    finally:
        store.close()
