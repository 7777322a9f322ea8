"""Run the server in a background thread (tests, local mode) or in the foreground (CLI)."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import uvicorn

from .app import create_app
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

    @property
    def url(self) -> str:
        # A wildcard bind is reached through loopback; IPv6 literals need brackets.
        wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104
        host = wildcard.get(self.host, self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

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


def _config(store: NessieStore, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(store),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
    )


def start_server(db_path: str, host: str = "127.0.0.1", port: int = 0) -> RunningServer:
    """Start a server on `host:port` (0 = a free port) backed by the SQLite file `db_path`.

    Returns once the server accepts connections.
    """
    store = NessieStore(db_path)
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on sockets that say they are
    # TCP, and without it Nagle + delayed ACKs cost ~40 ms per response.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(_config(store, host, bound_port))
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
    return RunningServer(host, bound_port, store, server, thread, sock)


def serve_forever(db_path: str, host: str, port: int) -> None:
    """Serve in the foreground until interrupted."""
    store = NessieStore(db_path)
    try:
        uvicorn.Server(_config(store, host, port)).run()
    finally:
        store.close()
