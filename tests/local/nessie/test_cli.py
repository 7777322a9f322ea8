"""`python -m local.nessie serve` starts a server that persists to the given file."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_command(tmp_path):
    port = free_port()
    db = tmp_path / "sub" / "nessie.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "local.nessie", "serve", "--port", str(port), "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                config = httpx.get(f"http://127.0.0.1:{port}/api/v2/config", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read().decode()
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        # The API takes only tokens of the server's identity provider, whose clients the
        # command wrote beside the database (for this user only).
        assert config.status_code == 401
        clients_file = db.with_name("nessie.db.clients.json")
        assert clients_file.stat().st_mode & 0o777 == 0o600
        clients = json.loads(clients_file.read_text())
        reader = clients["clients"]["wap-reader"]
        token = httpx.post(
            clients["token_endpoint"],
            data={"grant_type": "client_credentials"},
            auth=("wap-reader", reader["client_secret"]),
        ).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        config = httpx.get(f"http://127.0.0.1:{port}/api/v2/config", headers=headers)
        assert config.json()["defaultBranch"] == "main"
        tree = httpx.get(f"http://127.0.0.1:{port}/api/v1/trees/tree", headers=headers)
        assert tree.json()["name"] == "main"
        assert db.is_file()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_rejects_bad_arguments():
    result = subprocess.run(
        [sys.executable, "-m", "local.nessie", "serve", "--port", "70000", "--db", "x.db"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "--port must be between 0 and 65535" in result.stderr


def test_start_server_contract(tmp_path):
    """What other parts code against: URLs, a bound port, stop() frees it."""
    from local.nessie.runner import start_server

    server = start_server(str(tmp_path / "n.db"))
    try:
        assert server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.api_v1 == server.url + "/api/v1"
        assert server.api_v2 == server.url + "/api/v2"
        headers = {"Authorization": f"Bearer {server.token('wap-reader')}"}
        assert httpx.get(server.api_v1 + "/trees/tree", headers=headers).json()["type"] == "BRANCH"
    finally:
        server.stop()
    with socket.socket() as s:
        s.bind(("127.0.0.1", server.port))  # released after stop()
