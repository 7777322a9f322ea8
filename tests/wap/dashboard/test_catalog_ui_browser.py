"""A failed ingest's Slack alert, opened in a browser after `wap demo` has exited.

The demo ran with WAP_CATALOG_PORT set (tests/wap/dashboard/conftest.py) and printed the links
of the alert the local Slack stand-in received. Nothing serves that port once the demo is
done; `wap serve` serves it again from the home, behind its login. Expected values come from
the demo's input: the broken batch (40 rows, 3 negative amounts) is what the branch adds to
main.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
import requests

from tests.fixtures.wap_cli import default_sigint
from tests.wap.cli.test_dashboard_command import REPO, wait_for

pytestmark = pytest.mark.slow

LOAD_MS = 30_000
ALERT_LINK = "  link in the alert: "


def alert_links(output: str) -> list[str]:
    return [
        line[len(ALERT_LINK) :].strip()
        for line in output.splitlines()
        if line.startswith(ALERT_LINK)
    ]


@pytest.fixture
def serving(demo_home):
    """`wap serve` over the demo's home, started after the demo exited."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from wap.cli import main; main()",
            "--home",
            str(demo_home.root),
            "serve",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **demo_home.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,  # the test's Ctrl-C must reach it (see the helper)
    )
    try:
        # the identity provider answers anonymously; the API wants a token
        base = f"http://127.0.0.1:{demo_home.catalog_port}"
        wait_for(f"{base}/idp/.well-known/openid-configuration", timeout=60)
        yield
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


def test_the_alerts_link_shows_the_table_its_ingest_and_the_rows_the_branch_adds(
    demo_home, page, tmp_path, request
):
    failed = demo_home.failed_ingest()
    branch = failed["branch"]
    base = f"http://127.0.0.1:{demo_home.catalog_port}"
    links = alert_links(demo_home.output)
    assert f"{base}/tree/{branch}" in links
    # Nothing an AWS console would open: local alerts link to the local catalog UI only.
    assert all(link.startswith(f"{base}/") for link in links), links
    [table_link] = [u for u in links if u.startswith(f"{base}/content/")]
    assert table_link == f"{base}/content/{branch}/sales/orders"
    with pytest.raises(requests.ConnectionError):  # the demo's own server is gone
        requests.get(table_link, timeout=5)

    request.getfixturevalue("serving")
    page.goto(table_link, timeout=LOAD_MS)
    # The catalog wants a login, as Nessie's `ui-app` does: the local identity provider's
    # form (its default person, an operator), then back to the page the link named.
    page.get_by_role("heading", name="Sign in to the local catalog").wait_for(timeout=LOAD_MS)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="sales.orders on").wait_for(timeout=LOAD_MS)
    assert page.url == table_link
    ingest_row = page.locator("tr").filter(has_text="wap.ingest-id").first
    assert ingest_row.inner_text().split() == ["wap.ingest-id", failed["ingest_id"]]

    [broken] = [p for p in (demo_home.root / "samples").glob("*.parquet") if "negative" in p.name]
    batch = pq.read_table(broken)
    negatives = [a for a in batch.column("amount").to_pylist() if a is not None and a < Decimal(0)]
    assert len(negatives) == 3
    heading = page.get_by_role("heading", name=f"Rows {branch} adds ({batch.num_rows};")
    extra = heading.locator("xpath=following-sibling::table[1]")
    text = extra.inner_text()
    for amount in negatives:
        assert str(amount) in text
    assert extra.locator("tr").count() == batch.num_rows + 1  # header + every added row
    page.screenshot(path=tmp_path / "alert-table-link.png", full_page=True)

    page.get_by_role("link", name="diff vs main").click()
    page.get_by_role("heading", name=f"{branch} against main").wait_for(timeout=LOAD_MS)
    assert page.get_by_role("heading", name=f"Rows {branch} adds ({batch.num_rows};").is_visible()
    page.screenshot(path=tmp_path / "diff.png", full_page=True)
