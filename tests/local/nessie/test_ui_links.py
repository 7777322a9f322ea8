"""The catalog UI over a home with history: the diff shows a branch's own changes, and no
page links anywhere that does not answer.

The home (tests/fixtures/lake_seed.py `seed_history_home`) is what the WAP flow leaves: a published
ingest merged into main and its branch deleted, the failed ingest's open branch, and a
second table published to main after that branch was created.
"""

from __future__ import annotations

import html
import re
from collections import deque
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
import requests

from tests.fixtures.catalog_auth import API_RULES, harness_session, ui_login
from tests.fixtures.lake_seed import BRANCH, MAIN_ROWS, STOCK_TABLE, seed_history_home

MAX_PAGES = 500


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    from local.nessie.runner import start_server

    home = seed_history_home(tmp_path_factory.mktemp("history") / "home")
    running = start_server(str(home.root / "nessie.db"), rules=API_RULES)
    running.browser = ui_login(running.url)  # signed in as the default person
    yield running, home
    running.stop()


@pytest.fixture(scope="module")
def server(seeded):
    return seeded[0]


def get(server, path: str) -> requests.Response:
    return server.browser.get(server.url + path, timeout=30, allow_redirects=False)


def text_of(response: requests.Response) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", response.text))


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "href" and value is not None:
                self.hrefs.append(value)


def hrefs(page: str) -> list[str]:
    parser = _Links()
    parser.feed(page)
    return parser.hrefs


def crawl(server, start: str) -> tuple[dict[str, int], dict[str, str]]:
    """Breadth-first over every internal link: {path: status}, {path: a page linking it}."""
    origin = urlsplit(server.url)
    statuses: dict[str, int] = {}
    linked_from: dict[str, str] = {start: "(start)"}
    queue = deque([start])
    while queue and len(statuses) < MAX_PAGES:
        path = queue.popleft()
        response = get(server, path)
        statuses[path] = response.status_code
        if response.is_redirect:
            targets = [response.headers["location"]]
        elif response.headers.get("content-type", "").startswith("text/html"):
            targets = hrefs(response.text)
        else:
            targets = []
        for href in targets:
            url = urlsplit(urljoin(server.url + path, urldefrag(href).url))
            if (url.scheme, url.netloc) != (origin.scheme, origin.netloc):
                continue
            target = url.path + (f"?{url.query}" if url.query else "")
            if target not in linked_from:
                linked_from[target] = path
                queue.append(target)
    return statuses, linked_from


def test_the_diff_shows_the_branchs_own_changes_not_what_main_gained_since(server):
    response = get(server, f"/diff/{BRANCH}")

    assert response.status_code == 200
    page = text_of(response)
    assert "sales.orders" in page
    assert STOCK_TABLE not in page  # published to main after the branch forked
    assert "removed" not in page
    assert re.search(rf"rows on main\s+{len(MAIN_ROWS)}\b", page)


def test_the_diff_compares_with_the_merge_base_on_main(seeded):
    server, home = seeded
    main = (
        harness_session(server)
        .get(f"{server.api_v2}/trees/main", timeout=10)
        .json()["reference"]["hash"]
    )
    assert main == home.stock_merge
    page = get(server, f"/diff/{BRANCH}").text
    # against main as it was when the branch forked: the published ingest's merge commit
    assert f'href="/commits/main/{home.published_merge}"' in page
    assert home.stock_merge[:12] not in text_of(get(server, f"/diff/{BRANCH}"))


def test_every_internal_link_answers(server):
    statuses, linked_from = crawl(server, "/tree/main")

    assert any(p.startswith(f"/diff/{BRANCH}") for p in statuses)
    assert any(p.startswith("/commits/main/") for p in statuses)
    broken = {p: (s, linked_from[p]) for p, s in statuses.items() if s == 404 or s >= 500}
    assert not broken, f"{len(broken)} of {len(statuses)} pages fail (page: status, linked from)"
    assert all(s in (200, 302) for s in statuses.values()), statuses


def test_merge_commits_link_both_parents(seeded):
    server, home = seeded
    page = get(server, f"/commits/main/{home.published_merge}")
    assert page.status_code == 200
    parents = re.findall(r'href="(/commits/main/[0-9a-f]{64})"', page.text.split("<pre>")[0])
    assert len(parents) >= 2
    for path in parents:
        assert get(server, path).status_code == 200, path


def test_a_table_the_branch_removed_links_to_it_as_the_base_had_it(server):
    api = server.api_v2
    head = harness_session(server).get(f"{api}/trees/main", timeout=10).json()["reference"]
    harness_session(server).post(
        f"{api}/trees", params={"name": "drops_stock", "type": "BRANCH"}, json=head, timeout=10
    ).raise_for_status()
    harness_session(server).post(
        f"{api}/trees/drops_stock@{head['hash']}/history/commit",
        json={
            "commitMeta": {"message": "drop the stock table"},
            "operations": [{"type": "DELETE", "key": {"elements": STOCK_TABLE.split(".")}}],
        },
        timeout=10,
    ).raise_for_status()

    diff = get(server, "/diff/drops_stock")
    assert diff.status_code == 200
    assert re.search(rf"{re.escape(STOCK_TABLE)}\s+removed", text_of(diff))
    links = [h for h in hrefs(diff.text) if h.startswith("/content/")]
    assert links
    for link in links:
        table = get(server, link)
        assert table.status_code == 200, link
        assert "on_hand" in text_of(table)


def test_a_reference_pinned_to_a_commit_outside_its_history_is_not_found(server):
    branch_head = harness_session(server).get(f"{server.api_v2}/trees/{BRANCH}", timeout=10).json()
    pinned = f"main@{branch_head['reference']['hash']}"  # the failed branch was never merged
    assert get(server, f"/content/{pinned}/sales/orders").status_code == 404
    assert get(server, f"/tree/{pinned}").status_code == 404
    assert get(server, "/tree/main@not-a-hash").status_code == 400
    assert get(server, f"/tree/{BRANCH}@{branch_head['reference']['hash'][:12]}").status_code == 200
