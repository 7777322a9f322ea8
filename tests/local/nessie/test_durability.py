"""Restarts keep everything; concurrent writers never lose an update."""

from __future__ import annotations

import itertools
import random
import threading

import httpx
import pytest

from bench.nessie_requests import (
    iceberg_table,
    merge_body,
    namespace_content,
    put_op,
    reference_body,
)
from local.nessie.runner import start_server
from tests.fixtures.catalog_auth import harness_headers
from tests.fixtures.nessie_api import commit, create_branch, head, unique
from tests.local.nessie.conftest import API_RULES


def everything(client: httpx.Client) -> dict:
    """All refs with their full contents and logs, as clients see them."""
    state = {}
    for ref in client.get("/trees").json()["references"]:
        name = ref["name"]
        entries = client.get(f"/trees/{name}/entries", params={"content": "true"}).json()
        log = client.get(f"/trees/{name}/history", params={"fetch": "ALL"}).json()
        state[name] = (ref, entries["entries"], log["logEntries"])
    return state


def _in_threads(worker, count: int) -> None:
    """`worker(0..count-1)`, each on its own thread, all at once; returns when all ended."""
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_restart_on_the_same_file_keeps_refs_contents_and_history(tmp_path):
    db = str(tmp_path / "nessie.db")
    server = start_server(db, rules=API_RULES)
    try:
        with httpx.Client(base_url=server.api_v2, headers=harness_headers(server)) as api:
            ns = unique("dur")
            commit(api, "main", head(api), put_op([ns], namespace_content([ns])))
            branch = unique("wap")
            create_branch(api, branch)
            commit(api, branch, head(api, branch), put_op([ns, "t"], iceberg_table("s3://t/1")))
            api.post(
                "/trees",
                params={"name": "v1", "type": "TAG"},
                json=reference_body(branch, head(api, branch)),
            ).raise_for_status()
            before = everything(api)
    finally:
        server.stop()

    restarted = start_server(db, rules=API_RULES)
    try:
        with httpx.Client(base_url=restarted.api_v2, headers=harness_headers(restarted)) as api:
            assert everything(api) == before
            assert set(before) == {"main", branch, "v1"}
            # and the repository keeps working from where it was
            resp = commit(
                api, branch, head(api, branch), put_op([ns, "u"], iceberg_table("s3://u/1"))
            )
            assert resp.status_code == 200
            log = api.get(f"/trees/{branch}/history").json()["logEntries"]
            assert log[1]["commitMeta"]["hash"] == before[branch][0]["hash"]
    finally:
        restarted.stop()


@pytest.fixture
def contended_table(api):
    branch = unique("race")
    create_branch(api, branch)
    ns = unique("c")
    resp = commit(
        api,
        branch,
        head(api, branch),
        put_op([ns], namespace_content([ns])),
        put_op([ns, "t"], iceberg_table("s3://t/start")),
    )
    assert resp.status_code == 200
    table_id = resp.json()["addedContents"][1]["contentId"]
    return branch, ns, table_id, resp.json()["targetBranch"]["hash"]


def test_eight_threads_updating_one_table_land_or_get_409_and_nothing_is_lost(
    nessie, contended_table
):
    branch, ns, table_id, start = contended_table
    landed: list[tuple[str, str]] = []
    refused: list[int] = []
    other: list[str] = []
    lock = threading.Lock()

    def writer(worker: int) -> None:
        with httpx.Client(
            base_url=nessie.api_v2, headers=harness_headers(nessie), timeout=60
        ) as client:
            for attempt in range(6):
                expected = head(client, branch)
                location = f"s3://t/w{worker}-{attempt}"
                resp = commit(
                    client, branch, expected, put_op([ns, "t"], iceberg_table(location, table_id))
                )
                with lock:
                    if resp.status_code == 200:
                        landed.append((resp.json()["targetBranch"]["hash"], location))
                    elif resp.status_code == 409:
                        refused.append(resp.status_code)
                    else:
                        other.append(resp.text)

    _in_threads(writer, 8)

    assert other == []
    assert len(landed) + len(refused) == 48
    assert landed, "at least one commit must land"
    with httpx.Client(base_url=nessie.api_v2, headers=harness_headers(nessie)) as client:
        log = client.get(
            f"/trees/{branch}/history", params={"fetch": "ALL", "limit-hash": start}
        ).json()["logEntries"]
        final = client.get(f"/trees/{branch}/contents/{ns}.t").json()["content"]
    new = log[:-1]  # the last entry is `start`
    assert log[-1]["commitMeta"]["hash"] == start
    assert len(new) == len(landed)
    # linear: each commit's only parent is the next older one
    for newer, older in itertools.pairwise(log):
        assert newer["commitMeta"]["parentCommitHashes"] == [older["commitMeta"]["hash"]]
    # every landed commit is in the history with exactly the value it wrote
    by_hash = {
        e["commitMeta"]["hash"]: e["operations"][0]["content"]["metadataLocation"] for e in new
    }
    assert by_hash == dict(landed)
    assert final["metadataLocation"] == new[0]["operations"][0]["content"]["metadataLocation"]


def test_eight_threads_on_distinct_keys_with_one_stale_hash_all_land(nessie, contended_table):
    """Nessie checks per key: a stale expected hash is fine when nobody touched the key."""
    branch, ns, _, start = contended_table
    results: list[int] = []

    def writer(worker: int) -> None:
        with httpx.Client(
            base_url=nessie.api_v2, headers=harness_headers(nessie), timeout=60
        ) as client:
            resp = commit(
                client, branch, start, put_op([ns, f"k{worker}"], iceberg_table(f"s3://k/{worker}"))
            )
            results.append(resp.status_code)

    _in_threads(writer, 8)
    assert results == [200] * 8
    with httpx.Client(base_url=nessie.api_v2, headers=harness_headers(nessie)) as client:
        log = client.get(f"/trees/{branch}/history", params={"limit-hash": start}).json()
        keys = client.get(f"/trees/{branch}/entries", params={"prefix-key": ns}).json()
    assert len(log["logEntries"]) == 9
    assert sorted(tuple(e["name"]["elements"]) for e in keys["entries"]) == sorted(
        [(ns,), (ns, "t")] + [(ns, f"k{i}") for i in range(8)]
    )


def test_long_history_reads_back_identically_after_restart(tmp_path):
    """120 commits on two branches plus merges: every historical state, read cold after a
    restart, equals the state the test itself tracked."""
    rng = random.Random(7)
    db = str(tmp_path / "history.db")
    expected: dict[str, dict[tuple[str, ...], str]] = {}  # commit hash -> key -> location
    side_keys = {("h", f"t{i}") for i in range(6)}  # side writes t0..t5, main t6..t11
    merges = 0
    server = start_server(db, rules=API_RULES)
    try:
        with httpx.Client(base_url=server.api_v2, headers=harness_headers(server)) as api:
            h = commit(api, "main", head(api), put_op(["h"], namespace_content(["h"])))
            expected[h.json()["targetBranch"]["hash"]] = {}
            create_branch(api, "side")
            state: dict[str, dict[tuple[str, ...], str]] = {"main": {}, "side": {}}
            for i in range(120):
                branch = "side" if i % 3 == 0 else "main"
                tree = state[branch]
                key = ("h", f"t{rng.randrange(6) + (0 if branch == 'side' else 6)}")
                if key in tree and rng.random() < 0.2:
                    ops = [{"type": "DELETE", "key": {"elements": list(key)}}]
                    new_tree = {k: v for k, v in tree.items() if k != key}
                else:
                    loc = f"s3://h/{i}"
                    cid = None
                    if key in tree:  # updating: send the id the branch has for this table
                        url = f"/trees/{branch}/contents/h.{key[1]}"
                        cid = api.get(url).json()["content"]["id"]
                    ops = [put_op(list(key), iceberg_table(loc, cid))]
                    new_tree = {**tree, key: loc}
                resp = commit(api, branch, head(api, branch), *ops)
                assert resp.status_code == 200, resp.text
                state[branch] = new_tree
                expected[resp.json()["targetBranch"]["hash"]] = new_tree
                if i % 30 == 29:
                    merged = api.post(
                        f"/trees/main@{head(api)}/history/merge",
                        json=merge_body("side", head(api, "side")),
                    )
                    assert merged.status_code == 200, merged.text
                    main_tree = {k: v for k, v in state["main"].items() if k not in side_keys}
                    state["main"] = {**main_tree, **state["side"]}
                    expected[merged.json()["resultantTargetHash"]] = state["main"]
                    merges += 1
    finally:
        server.stop()
    assert merges == 4

    restarted = start_server(db, rules=API_RULES)
    try:
        with httpx.Client(base_url=restarted.api_v2, headers=harness_headers(restarted)) as api:
            for hash_, tree in expected.items():
                entries = api.get(f"/trees/@{hash_}/entries", params={"content": "true"}).json()
                got = {
                    tuple(e["name"]["elements"]): e["content"]["metadataLocation"]
                    for e in entries["entries"]
                    if e["type"] == "ICEBERG_TABLE"
                }
                assert got == tree, hash_
    finally:
        restarted.stop()
