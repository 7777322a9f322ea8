"""The read-only catalog UI on Nessie's UI paths, served with the API over a seeded home.

The home (tests/fixtures/lake_seed.py) has main with 2 orders, and a failed ingest's branch adding
3 orders (one with a name that is HTML, one with a quote). Links are built the way the
alert builds them (ingestion/alerting/links.py), so what Slack links to is what is tested.
"""

from __future__ import annotations

import html
import re

import pytest
import requests

from ingestion.alerting.links import nessie_branch_url, nessie_table_url
from tests.fixtures.catalog_auth import API_RULES, harness_session, ui_login
from tests.fixtures.lake_seed import (
    BRANCH,
    BRANCH_ROWS,
    FAILED_ID,
    MAIN_ROWS,
    NAME_COLUMN,
    SOURCE,
    seed_home,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from local.nessie.runner import start_server

    home = seed_home(tmp_path_factory.mktemp("ui") / "home").root
    running = start_server(str(home / "nessie.db"), rules=API_RULES)
    running.browser = ui_login(running.url)  # signed in as the default person
    yield running
    running.stop()


def get(server, path: str, **kwargs) -> requests.Response:
    return server.browser.get(server.url + path, timeout=30, allow_redirects=False, **kwargs)


def text_of(response: requests.Response) -> str:
    """The page's text, tags dropped and entities decoded (what a reader sees)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", response.text))


def test_the_alerts_table_link_shows_schema_snapshot_and_the_rows_the_branch_adds(server):
    response = server.browser.get(nessie_table_url(server.url, BRANCH, "sales.orders"), timeout=30)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = text_of(response)
    assert re.search(rf"wap\.ingest-id\s+{FAILED_ID}", page)
    assert re.search(rf"wap\.source\s+{re.escape(SOURCE)}", page)
    assert re.search(rf"{len(MAIN_ROWS) + len(BRANCH_ROWS)}\s+rows", page)
    for column in ("order_id", "amount", NAME_COLUMN):
        assert column in page
    assert re.search(rf"rows on main\s+{len(MAIN_ROWS)}\b", page)
    assert f"Rows {BRANCH} adds ({len(BRANCH_ROWS)};" in page
    for row in BRANCH_ROWS:
        assert str(row["amount"]) in page and row[NAME_COLUMN] in page


def test_the_alerts_branch_link_lists_the_namespace_and_its_tables(server):
    page = text_of(server.browser.get(nessie_branch_url(server.url, BRANCH), timeout=30))
    assert "sales" in page
    listing = text_of(get(server, f"/tree/{BRANCH}/sales"))
    assert "orders" in listing and "customers" in listing


def test_the_diff_against_main_names_the_changed_table_and_its_extra_rows(server):
    response = get(server, f"/diff/{BRANCH}")
    assert response.status_code == 200
    page = text_of(response)
    assert "sales.orders" in page and "sales.customers" not in page
    assert re.search(rf"rows on main\s+{len(MAIN_ROWS)}\b", page)
    assert re.search(rf"rows on {BRANCH}\s+{len(MAIN_ROWS) + len(BRANCH_ROWS)}\b", page)
    extra = page.split(f"Rows {BRANCH} adds", 1)[1]
    for row in BRANCH_ROWS:
        assert str(row["order_id"]) in extra and str(row["amount"]) in extra
    for row in MAIN_ROWS:
        assert row[NAME_COLUMN] not in extra


def test_commits_log_and_one_commit(server):
    log = get(server, f"/commits/{BRANCH}")
    assert log.status_code == 200
    assert f"Iceberg append against sales.orders (ingest {FAILED_ID})" in text_of(log)
    [first] = re.findall(rf'href="/commits/{BRANCH}/([0-9a-f]{{64}})"', log.text)[:1]
    commit = text_of(get(server, f"/commits/{BRANCH}/{first[:12]}"))
    assert first in commit and "sales.orders" in commit and "seed" in commit


def test_every_value_is_escaped(server):
    page = get(server, f"/content/{BRANCH}/sales/orders").text
    assert "<b>Barbara</b>" not in page
    assert "&lt;b&gt;Barbara&lt;/b&gt;" in page
    assert "O&#x27;Neil" in page
    head = (
        harness_session(server)
        .get(f"{server.api_v2}/trees/main", timeout=10)
        .json()["reference"]["hash"]
    )
    nasty = '<img src=x onerror="alert(1)">'
    harness_session(server).post(
        f"{server.api_v2}/trees/main@{head}/history/commit",
        json={
            "commitMeta": {"message": "<script>alert(2)</script>"},
            "operations": [
                {
                    "type": "PUT",
                    "key": {"elements": [nasty]},
                    "content": {"type": "NAMESPACE", "elements": [nasty]},
                }
            ],
        },
        timeout=10,
    ).raise_for_status()
    for path in ("/tree/main", "/commits/main"):
        body = get(server, path).text
        assert "<img" not in body and "<script>" not in body
    assert html.escape(nasty, quote=True) in get(server, "/tree/main").text


def test_pages_are_read_only_and_locked_down(server):
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = requests.request(method, f"{server.url}/tree/main", timeout=10)
        assert response.status_code == 405, method
    headers = get(server, "/tree/main").headers
    assert "default-src 'none'" in headers["content-security-policy"]
    assert "script-src" not in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/tree/no_such_branch", 404),
        ("/tree/bad..name", 400),
        ("/tree/main/no_such_namespace", 404),
        ("/content/main/sales/no_such_table", 404),
        ("/commits/main/not-a-hash", 400),
        ("/commits/main/0123456789abcdef", 404),
        ("/diff/main?base=..", 400),
        ("/tree/main/%ff", 400),
    ],
)
def test_unknown_or_malformed_paths_are_error_pages(server, path, status):
    response = get(server, path)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text


def test_root_and_bare_paths_lead_to_the_default_branch(server):
    for path in ("/", "/tree", "/commits"):
        response = get(server, path)
        assert response.status_code == 302
        assert response.headers["location"] in ("/tree/main", "/commits/main")
    assert get(server, "/content/main").headers["location"] == "/tree/main"


def test_a_reference_name_with_a_slash_is_one_encoded_segment(server):
    head = (
        harness_session(server)
        .get(f"{server.api_v2}/trees/main", timeout=10)
        .json()["reference"]["hash"]
    )
    harness_session(server).post(
        f"{server.api_v2}/trees",
        params={"name": "feature/x", "type": "BRANCH"},
        json={"type": "BRANCH", "name": "main", "hash": head},
        timeout=10,
    ).raise_for_status()
    response = get(server, "/tree/feature%2Fx/sales")
    assert response.status_code == 200
    assert 'href="/content/feature%2Fx/sales/orders"' in response.text


def test_the_api_is_still_served_beside_the_ui(server):
    assert (
        harness_session(server).get(f"{server.api_v2}/config", timeout=10).json()["defaultBranch"]
        == "main"
    )


def test_hostile_names_and_commit_metadata_are_escaped_on_every_page(server):
    """Key, commit message, author and property values are shown, never run as markup."""
    from urllib.parse import quote

    api = server.api_v2
    script = "<script>alert(1)</script>"
    head = harness_session(server).get(f"{api}/trees/main", timeout=10).json()["reference"]
    harness_session(server).post(
        f"{api}/trees",
        params={"name": "hostile", "type": "BRANCH"},
        json=head,
        timeout=10,
    ).raise_for_status()
    resp = harness_session(server).post(
        f"{api}/trees/hostile@{head['hash']}/history/commit",
        json={
            "commitMeta": {
                "message": f"{script} \"quoted\" 'single'",
                "authors": [f"{script}@example.com"],
                "allProperties": {"wap.source": [script]},
            },
            "operations": [
                {
                    "type": "PUT",
                    "key": {"elements": [script]},
                    "content": {"type": "NAMESPACE", "elements": [script]},
                }
            ],
        },
        timeout=10,
    )
    resp.raise_for_status()
    hash_ = resp.json()["targetBranch"]["hash"]
    escaped = html.escape(script, quote=True)
    for path in (
        "/tree/hostile",
        "/commits/hostile",
        f"/commits/hostile/{hash_}",
        f"/content/hostile/{quote(script, safe='')}",
        "/diff/hostile",
    ):
        response = get(server, path)
        assert response.status_code == 200, path
        assert "<script" not in response.text, path
        assert escaped in response.text, path
    commit = get(server, f"/commits/hostile/{hash_}").text
    assert "&quot;quoted&quot; &#x27;single&#x27;" in commit
    # an operation links the content as that commit put it
    assert f'href="/content/hostile@{hash_}/{quote(script, safe="")}"' in commit
