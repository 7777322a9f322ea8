"""Local mode's catalog links: `wap show` links the catalog UI that `wap serve` runs on
WAP_CATALOG_PORT. (`wap query` and `wap show` themselves are tested for both backends in
tests/wap/ops/test_backend_behaviour.py.)"""

from __future__ import annotations

import pytest

from tests.fixtures.lake_seed import BRANCH, seed_home
from tests.fixtures.wap_cli import assert_one_line_error, run_wap


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return seed_home(tmp_path_factory.mktemp("query") / "home").root


def test_the_links_follow_the_configured_port(home):
    result = run_wap("--home", str(home), "show", BRANCH, env={"WAP_CATALOG_PORT": "19555"})
    assert f"http://127.0.0.1:19555/tree/{BRANCH}" in result.stdout
    assert_one_line_error(
        run_wap("--home", str(home), "show", BRANCH, env={"WAP_CATALOG_PORT": "http"}),
        "WAP_CATALOG_PORT",
    )
