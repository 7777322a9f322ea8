"""The behaviour suite of the one Nessie client (`ingestion.nessie.NessieClient`), run
against our Nessie server, the way pyiceberg runs one suite against every Catalog.

Every promise the Lambdas and `wap` rely on is here: lookups answer None for what does not
exist, names are refused before a request, a merge takes exactly the audited hash and
records who and why, conflicts and outages are told apart."""

from __future__ import annotations

import socket

import httpx
import pytest

from bench.nessie_requests import iceberg_table, namespace_content, put_op
from ingestion.exceptions import (
    AuditedCommitMismatchError,
    InvalidNessieNameError,
    MergeConflictError,
    NessieUnavailableError,
)
from ingestion.nessie import MergeMeta, NessieClient, api_base
from ingestion.published import merge_audited_commit
from tests.fixtures.catalog_auth import harness_client, harness_headers
from tests.fixtures.nessie_api import commit, head, unique

META = MergeMeta(message="publish for the test", author="tester", properties={"wap.k": "v"})


@pytest.fixture
def client(nessie) -> NessieClient:
    return harness_client(nessie, nessie.api_v1)


@pytest.fixture
def api(nessie):
    with httpx.Client(base_url=nessie.api_v2, timeout=30, headers=harness_headers(nessie)) as http:
        yield http


def _write_table(api: httpx.Client, branch: str, table: str, snapshot: int) -> str:
    """Commit `table` (`ns.name`) at `snapshot` on `branch`; the new head."""
    ns, name = table.split(".")
    existing = api.get(f"/trees/{branch}/contents/{table}")
    content_id = existing.json()["content"]["id"] if existing.status_code == 200 else None
    ops = [
        put_op(
            [ns, name],
            iceberg_table(f"file:///wh/{name}/{snapshot}.json", content_id, snapshot_id=snapshot),
        )
    ]
    if api.get(f"/trees/{branch}/contents/{ns}").status_code == 404:
        ops.insert(0, put_op([ns], namespace_content([ns])))
    resp = commit(api, branch, head(api, branch), *ops)
    assert resp.status_code == 200, resp.text
    return resp.json()["targetBranch"]["hash"]


def _content_id(api: httpx.Client, ref: str, table: str) -> str:
    return api.get(f"/trees/{ref}/contents/{table}").json()["content"]["id"]


def test_api_base_accepts_either_api_url_or_the_base():
    for uri in ("http://h:1/api/v1", "http://h:1/api/v2/", "http://h:1/api", "http://h:1"):
        assert api_base(uri) == "http://h:1"


def test_lookups_answer_none_for_what_does_not_exist(client):
    assert client.reference("main") is not None
    assert client.branch_hash(unique("missing")) is None
    assert client.table_snapshot("nons.none", "main") is None
    assert client.metadata_location("main", "nons.none") is None
    assert client.delete_branch(unique("missing")) is False


@pytest.mark.parametrize("bad", ["../main", "a b", "", "main?x=1", "-main"])
def test_bad_names_are_refused_before_any_request(client, bad):
    with pytest.raises(InvalidNessieNameError):
        client.reference(bad)
    with pytest.raises(InvalidNessieNameError):
        client.merge_into_main(bad, "a" * 16, META)


def test_a_hash_must_look_like_one(client):
    branch = unique("wap_hash")
    client.ensure_branch_from_main(branch)
    with pytest.raises(InvalidNessieNameError):
        client.merge_into_main(branch, "main", META)
    with pytest.raises(InvalidNessieNameError):
        client.table_snapshot("a.b", branch, "not-a-hash/../x")


def test_branches_are_created_from_main_once(client):
    branch = unique("wap_create")
    created = client.ensure_branch_from_main(branch)
    assert created == client.main_hash()
    assert client.ensure_branch_from_main(branch) == created  # a retried invocation
    names = {r.name for r in client.references()}
    assert {"main", branch} <= names


def test_contents_are_read_at_a_ref_and_at_a_hash(client, api):
    branch, table = unique("wap_read"), f"{unique('ns')}.orders"
    client.ensure_branch_from_main(branch)
    first = _write_table(api, branch, table, 11)
    _write_table(api, branch, table, 12)
    assert client.table_snapshot(table, branch) == 12
    assert client.table_snapshot(table, branch, first) == 11
    assert client.metadata_location(branch, table).endswith("/12.json")
    assert client.iceberg_tables(branch)[table].endswith("/12.json")
    assert table not in client.iceberg_tables("main")
    listed = {r.name: r for r in client.references()}
    assert listed[branch].hash == client.branch_hash(branch) and listed[branch].head_commit_time


def test_merge_takes_exactly_the_audited_hash_and_records_who_and_why(client, api):
    branch, table = unique("wap_merge"), f"{unique('ns')}.orders"
    client.ensure_branch_from_main(branch)
    audited = _write_table(api, branch, table, 21)
    _write_table(api, branch, table, 22)  # written after the audit: must not reach main
    main_hash = client.merge_into_main(branch, audited, META)
    assert client.main_hash() == main_hash
    assert client.table_snapshot(table, "main") == 21
    assert client.main_holds(table, 21) and not client.main_holds(table, 22)
    log = api.get("/trees/main/history", params={"max-records": 1}).json()["logEntries"]
    meta = log[0]["commitMeta"]
    assert meta["message"] == META.message
    assert meta["authors"] == ["tester"]
    assert meta["allProperties"]["wap.k"] == ["v"]


def test_a_merge_that_conflicts_on_main_is_a_conflict(client, api):
    table = f"{unique('ns')}.orders"
    first, second = unique("wap_a"), unique("wap_b")
    client.ensure_branch_from_main(first)
    client.merge_into_main(first, _write_table(api, first, table, 31), META)
    client.ensure_branch_from_main(second)
    # Both sides change the table after `second` forked: main moves on, then `second` merges.
    ns, name = table.split(".")
    content_id = _content_id(api, "main", table)
    resp = commit(
        api,
        "main",
        head(api, "main"),
        put_op([ns, name], iceberg_table("file:///wh/main.json", content_id, snapshot_id=32)),
    )
    assert resp.status_code == 200, resp.text
    resp = commit(
        api,
        second,
        head(api, second),
        put_op([ns, name], iceberg_table("file:///wh/b.json", content_id, snapshot_id=33)),
    )
    assert resp.status_code == 200, resp.text
    with pytest.raises(MergeConflictError):
        client.merge_into_main(second, head(api, second), META)
    assert client.table_snapshot(table, "main") == 32


def test_publish_refuses_a_commit_that_is_not_the_audited_snapshot(client, api):
    branch, table = unique("wap_mismatch"), f"{unique('ns')}.orders"
    client.ensure_branch_from_main(branch)
    audited = _write_table(api, branch, table, 41)
    before = client.main_hash()
    with pytest.raises(AuditedCommitMismatchError):
        merge_audited_commit(
            client, table=table, branch=branch, audited_hash=audited, snapshot_id=40, meta=META
        )
    assert client.main_hash() == before
    assert (
        merge_audited_commit(
            client, table=table, branch=branch, audited_hash=audited, snapshot_id=41, meta=META
        )
        == client.main_hash()
    )


def test_delete_only_at_the_expected_head(client, api):
    branch, table = unique("wap_delete"), f"{unique('ns')}.orders"
    start = client.ensure_branch_from_main(branch)
    _write_table(api, branch, table, 51)
    with pytest.raises(MergeConflictError):
        client.delete_branch(branch, start)  # it moved since
    assert client.branch_hash(branch) is not None
    assert client.delete_branch(branch) is True
    assert client.delete_branch(branch) is False


def test_an_unreachable_server_is_unavailable_not_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    client = NessieClient(f"http://127.0.0.1:{port}/api/v1", timeout=2)
    with pytest.raises(NessieUnavailableError):
        client.reference("main")
    with pytest.raises(NessieUnavailableError):
        client.iceberg_tables("main")


def test_a_reply_that_is_not_nessies_is_an_outage_not_a_crash():
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class LoadBalancerPage(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<html>502 Bad Gateway</html>" if "/api/v1/" in self.path else b"<html/>"
            self.send_response(502 if "/api/v1/" in self.path else 200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), LoadBalancerPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = NessieClient(f"http://127.0.0.1:{server.server_port}/api/v2", timeout=5)
        with pytest.raises(NessieUnavailableError):
            client.references()  # v2: HTTP 200 with an HTML page
        with pytest.raises(NessieUnavailableError):
            client.iceberg_tables("main")
        with pytest.raises(NessieUnavailableError):
            client.reference("main")  # v1 through pynessie: a 502 page
    finally:
        server.shutdown()
