"""`wap dashboard` serves the Streamlit app on the port it is given."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from tests.fixtures.paths import REPO
from tests.fixtures.wap_cli import default_sigint


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_dashboard_command_serves_the_app_until_interrupted(tmp_path):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from wap.cli import main; main()",
         "--home", str(tmp_path / "home"), "dashboard", "--port", str(port)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=default_sigint)  # the test's Ctrl-C must reach it (see the helper)
    try:
        assert wait_for(f"http://127.0.0.1:{port}/_stcore/health", timeout=60) == "ok"
        assert "<title>" in wait_for(f"http://127.0.0.1:{port}/", timeout=10)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"http://127.0.0.1:{port}/" in output
