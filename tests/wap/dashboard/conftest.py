"""Fixtures of the dashboard tests: a home seeded by `wap demo`, the app served from it."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.wap_cli import run_wap
from wap.dashboard import build_command
from wap.runtime.home import WapHome
from wap.runtime.state_store import read_ledger_items

STARTUP_SECONDS = 90
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class DemoHome:
    """A home after one `wap demo`: one PUBLISHED and one AUDIT_FAILED ingest of sales.orders."""

    root: Path
    batch_rows: int = 40  # wap.runtime.sample_data.BATCH_ROWS: both demo files
    catalog_port: int = 19120  # WAP_CATALOG_PORT the demo ran with: its links name it
    output: str = ""  # what `wap demo` printed

    @property
    def env(self) -> dict[str, str]:
        """The environment `wap` commands on this home run with (links match the demo's)."""
        return {"WAP_CATALOG_PORT": str(self.catalog_port)}

    def failed_ingest(self) -> dict:
        items = read_ledger_items(WapHome(self.root))
        [failed] = [i for i in items if i.get("status") == "AUDIT_FAILED"]
        return failed

    def rows_on_failed_branch(self) -> int:
        """The demo queues its two files; the failed one's branch forks from main when its
        job starts, so it holds the clean batch too only if that was published first."""
        items = read_ledger_items(WapHome(self.root))
        ingests = {i["status"]: i for i in items if i.get("kind") == "ingest"}
        failed, published = ingests["AUDIT_FAILED"], ingests["PUBLISHED"]
        after = failed["job_started_at"] >= published["finished_at"]
        return 2 * self.batch_rows if after else self.batch_rows


@pytest.fixture(scope="session")
def demo_home(spark, tmp_path_factory) -> DemoHome:
    """The CLI's own demo, run once with the session's SparkSession (no second JVM)."""
    root = tmp_path_factory.mktemp("dashboard") / "wap-home"
    # A free port, not 19120: what the demo's links name must be ours to serve in the tests.
    port = _free_port()
    result = run_wap("--home", str(root), "demo", spark=spark, env={"WAP_CATALOG_PORT": str(port)})
    assert result.exit_code == 0, result.output
    return DemoHome(root, catalog_port=port, output=result.stdout)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def served(demo_home, tmp_path_factory) -> Iterator[str]:
    """`streamlit run` as `wap dashboard` starts it, on a free loopback port; its base URL."""
    port = _free_port()
    log = tmp_path_factory.mktemp("streamlit") / "streamlit.log"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **demo_home.env}
    with log.open("wb") as out:
        process = subprocess.Popen(
            build_command(str(demo_home.root), port=port),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not come up:\n{log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    from tests.fixtures.browser import NoBrowser, browser_path

    try:
        executable = browser_path()
    except NoBrowser as exc:
        pytest.skip(str(exc))
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 2200})
    yield context.new_page()
    context.close()
