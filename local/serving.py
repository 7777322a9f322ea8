"""What every HTTP stand-in shares: its server on a background thread, started and
stopped the same way (the Slack stand-in, the OpenLineage receiver)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class BackgroundServer:
    """A ThreadingHTTPServer on 127.0.0.1 served by a daemon thread: `start()`, `url`,
    `stop()`."""

    def _serve(self, handler: type[BaseHTTPRequestHandler], port: int, name: str) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        # A short poll interval keeps stop() fast (shutdown waits for one poll).
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name=name, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
