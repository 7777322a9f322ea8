"""`wap serve`: the home's catalog (API + UI) on a fixed port after the commands have exited,
and `wap dashboard` serving it alongside the app."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from ingestion.alerting.links import nessie_table_url
from tests.fixtures.catalog_auth import ui_login
from tests.fixtures.lake_seed import BRANCH, FAILED_ID, seed_home
from tests.fixtures.wap_cli import assert_one_line_error, default_sigint, run_wap
from tests.wap.cli.test_dashboard_command import REPO, free_port, wait_for
from wap.dashboard import serve_catalog


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return seed_home(tmp_path_factory.mktemp("serve") / "home").root


def start_serve(home, port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", "from wap.cli import main; main()", "--home", str(home), "serve"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "WAP_CATALOG_PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,  # the test's Ctrl-C must reach it (see the helper)
    )


def test_serve_answers_the_links_of_alerts_until_interrupted(home):
    port = free_port()
    # What `wap show` prints (and the alert links to) with this port configured.
    shown = run_wap("--home", str(home), "show", FAILED_ID, env={"WAP_CATALOG_PORT": str(port)})
    url = nessie_table_url(f"http://127.0.0.1:{port}", BRANCH, "sales.orders")
    assert url in shown.stdout

    process = start_serve(home, port)
    try:
        # the identity provider answers anonymously; the API wants a token
        wait_for(f"http://127.0.0.1:{port}/idp/.well-known/openid-configuration", timeout=60)
        # The alert's link: the login, then the page itself.
        base = f"http://127.0.0.1:{port}"
        browser = ui_login(base, wanted=url[len(base) :])
        page = browser.get(url, timeout=30)
        assert page.status_code == 200 and FAILED_ID in page.text
        second = run_wap("--home", str(home), "serve", "--port", str(port))
        assert_one_line_error(second, f"port {port}", "in use")
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert f"http://127.0.0.1:{port}/tree/{BRANCH}" in output


def test_serve_needs_local_state_and_local_mode(tmp_path):
    assert_one_line_error(run_wap("--home", str(tmp_path / "none"), "serve"), "no local state")
    assert not (tmp_path / "none").exists()
    assert_one_line_error(run_wap("--aws", "serve"), "local mode", "NessieUiUrl")


def test_the_dashboard_serves_the_catalog_unless_the_port_is_taken(home, monkeypatch, capsys):
    port = free_port()
    monkeypatch.setenv("WAP_CATALOG_PORT", str(port))
    server = serve_catalog(str(home))
    try:
        base = f"http://127.0.0.1:{port}"
        assert ui_login(base).get(f"{base}/tree/{BRANCH}", timeout=30).ok
        assert serve_catalog(str(home)) is None  # taken: the dashboard still starts
        assert "in use" in capsys.readouterr().err
    finally:
        server.stop()


def test_a_people_table_that_is_not_one_is_a_one_line_error(tmp_path):
    from wap.runtime.home import WapHome

    home = WapHome(tmp_path / "home").create()
    (home.root / "people.yaml").write_text("eve: wap-publisher\n")  # a machine's role
    result = run_wap("--home", str(home.root), "serve", "--port", str(free_port()))
    assert_one_line_error(result, "people.yaml", "'wap-publisher' is not a people's role")
    # Every command serves the UI while it runs.
    result = run_wap("--home", str(home.root), "branches")
    assert_one_line_error(result, "people.yaml", "'wap-publisher' is not a people's role")
