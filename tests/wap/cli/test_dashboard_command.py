"""`wap dashboard` serves the Streamlit app on the port it is given."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fixtures.paths import REPO
from tests.fixtures.wap_cli import default_sigint
from wap.runtime.home import WapHome


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
        [
            sys.executable,
            "-c",
            "from wap.cli import main; main()",
            "--home",
            str(tmp_path / "home"),
            "dashboard",
            "--port",
            str(port),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,
    )  # the test's Ctrl-C must reach it (see the helper)
    try:
        assert wait_for(f"http://127.0.0.1:{port}/_stcore/health", timeout=60) == "ok"
        assert "<title>" in wait_for(f"http://127.0.0.1:{port}/", timeout=10)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"http://127.0.0.1:{port}/" in output


def ignore_sigint() -> None:
    """`preexec_fn` of a command started in the background (`cmd &`): SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def children(pid: int) -> set[int]:
    """Every descendant of `pid` (Linux /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += list(kids - found)
            found |= kids
    return found


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT", "SIGTERM with SIGINT ignored"])
def test_a_signal_stops_the_dashboard_and_every_process_it_started(tmp_path, stop):
    home = tmp_path / "home"
    WapHome(home).create()  # a home with state: the dashboard serves its catalog UI too
    port, catalog = free_port(), free_port()
    sent = signal.SIGINT if stop == "SIGINT" else signal.SIGTERM
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from wap.cli import main; main()",
            "--home",
            str(home),
            "dashboard",
            "--port",
            str(port),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "WAP_CATALOG_PORT": str(catalog)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=ignore_sigint if "ignored" in stop else default_sigint,
    )
    started: set[int] = set()
    try:
        assert wait_for(f"http://127.0.0.1:{port}/_stcore/health", timeout=60) == "ok"
        assert listening(catalog)
        started = children(process.pid)
        assert started  # Streamlit
        process.send_signal(sent)
        output, _ = process.communicate(timeout=30)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in started if alive(pid)], output
        assert not listening(port) and not listening(catalog), output
    finally:
        for pid in {process.pid} | started:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=10)
