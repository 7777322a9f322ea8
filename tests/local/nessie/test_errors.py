"""Bad input gets Nessie's error body with the right code and message, and changes nothing."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from bench.nessie_requests import iceberg_table, namespace_content, put_op, reference_body
from tests.fixtures.catalog_auth import harness_headers
from tests.fixtures.nessie_api import commit, create_branch, head, unique

REF_RULE = (
    "Reference name must start with a letter, followed by letters, digits, one of the "
    "./_- characters, not end with a slash or dot, not contain '..'"
)


def put_body(elements: object, content: dict) -> dict:
    """A commit body with message 'm' and one PUT of `content` at the raw key `elements`."""
    return {
        "commitMeta": {"message": "m"},
        "operations": [{"type": "PUT", "key": {"elements": elements}, "content": content}],
    }


@pytest.fixture
def unchanged(api):
    """Snapshot every reference before the test; assert they are identical afterwards."""

    def snapshot():
        return sorted(
            (r["name"], r["type"], r["hash"]) for r in api.get("/trees").json()["references"]
        )

    before = snapshot()
    yield
    assert snapshot() == before


@pytest.fixture
def branch(api) -> str:
    name = unique("neg")
    create_branch(api, name)
    ns = unique("ns")
    resp = commit(api, name, head(api, name), put_op([ns], namespace_content([ns])))
    assert resp.status_code == 200
    return name


def assert_error(
    resp: httpx.Response,
    status: int,
    code: str,
    message: str | None = None,
    prefix: str | None = None,
) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["status"] == status
    assert body["errorCode"] == code
    assert body["reason"]
    if message is not None:
        assert body["message"] == message
    if prefix is not None:
        assert body["message"].startswith(prefix), body["message"]
    return body


@pytest.mark.parametrize("name", ["1abc", "a..b", "ends/", "-x", "has space", "@"])
def test_invalid_reference_names_are_rejected(api, branch, unchanged, name):
    resp = api.post(
        "/trees", params={"name": name, "type": "BRANCH"}, json=reference_body("main", head(api))
    )
    assert_error(resp, 400, "BAD_REQUEST", f"{REF_RULE} - but was: {name}")


def test_unknown_reference_and_unknown_commit(api, branch, unchanged):
    assert_error(
        api.get("/trees/no_such_branch"),
        404,
        "REFERENCE_NOT_FOUND",
        "Named reference 'no_such_branch' not found",
    )
    assert_error(
        api.get("/trees/@deadbeefdeadbeef/entries"),
        404,
        "REFERENCE_NOT_FOUND",
        "Commit 'deadbeefdeadbeef' not found",
    )
    not_on_main = head(api, branch)
    assert_error(
        api.get(f"/trees/main@{not_on_main}/entries"),
        404,
        "REFERENCE_NOT_FOUND",
        f"Could not find commit '{not_on_main}' in reference 'main'.",
    )
    assert_error(
        commit(api, "no_such_branch", head(api), put_op(["x"], namespace_content(["x"]))),
        404,
        "REFERENCE_NOT_FOUND",
        "Named reference 'no_such_branch' not found",
    )


def test_stale_expected_hash_on_assign_and_delete(api, branch, unchanged):
    current = head(api, branch)
    stale = head(api)
    body = assert_error(
        api.delete(f"/trees/{branch}@{stale}"),
        409,
        "REFERENCE_CONFLICT",
        f"Named-reference '{branch}' is not at expected hash '{stale}', but at '{current}'.",
    )
    assert body["errorDetails"]["conflicts"][0]["conflictType"] == "UNEXPECTED_HASH"
    assert_error(
        api.put(f"/trees/{branch}@{stale}", json=reference_body("main", stale)),
        409,
        "REFERENCE_CONFLICT",
        prefix=f"Named-reference '{branch}' is not at",
    )
    assert_error(
        api.delete(f"/trees/main@{head(api)}"),
        400,
        "BAD_REQUEST",
        "Default branch 'main' cannot be deleted.",
    )
    assert_error(
        api.post(
            "/trees",
            params={"name": branch, "type": "BRANCH"},
            json=reference_body("main", head(api)),
        ),
        409,
        "REFERENCE_ALREADY_EXISTS",
        f"Named reference '{branch}' already exists.",
    )
    assert_error(
        api.delete(f"/trees/{branch}@{current}", params={"type": "TAG"}),
        400,
        "BAD_REQUEST",
        prefix="Expected reference type TAG does not match",
    )


def test_malformed_bodies(api, branch, unchanged):
    url = f"/trees/{branch}@{head(api, branch)}/history/commit"
    assert_error(
        api.post(url, content=b"{not json", headers={"Content-Type": "application/json"}),
        400,
        "BAD_REQUEST",
        prefix="Malformed JSON request body",
    )
    assert_error(api.post(url, json=[1, 2]), 400, "BAD_REQUEST", "Operations must be a JSON object")
    assert_error(
        api.post(url, json=put_body(["a"], {"type": "NOPE"})),
        400,
        "BAD_REQUEST",
        "Unknown content type 'NOPE'",
    )
    assert_error(
        api.post(url, json=put_body([], {"type": "NAMESPACE"})),
        400,
        "BAD_REQUEST",
        "Content key must have at least one element",
    )
    assert_error(
        api.post(url, json={"commitMeta": {"message": "m", "committer": "me"}, "operations": []}),
        400,
        "BAD_REQUEST",
        "Cannot set the committer on the client side. It is set by the server.",
    )
    assert_error(
        api.post(url, json=put_body(["t"], {"type": "ICEBERG_TABLE", "metadataLocation": " "})),
        400,
        "BAD_REQUEST",
        "Iceberg content requires a non-blank 'metadataLocation'",
    )
    assert_error(
        api.post(
            f"/trees/{branch}@{head(api, branch)}/history/merge", json={"fromHash": "abcdabcd"}
        ),
        400,
        "BAD_REQUEST",
        "fromRefName must be set",
    )


def test_gzip_bodies_bad_and_oversized(api, branch, unchanged):
    url = f"/trees/{branch}@{head(api, branch)}/history/commit"
    gz = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    assert_error(
        api.post(url, content=b"\x1f\x8bnot really gzip", headers=gz),
        400,
        "BAD_REQUEST",
        prefix="Invalid gzip request body",
    )
    truncated = gzip.compress(json.dumps({"operations": []}).encode())[:-6]
    assert_error(
        api.post(url, content=truncated, headers=gz),
        400,
        "BAD_REQUEST",
        "Truncated gzip request body",
    )
    bomb = gzip.compress(b" " * (17 * 1024 * 1024))  # ~17 KiB that inflates past 16 MiB
    assert_error(
        api.post(url, content=bomb, headers=gz),
        413,
        "BAD_REQUEST",
        "Decompressed request body exceeds 16777216 bytes",
    )
    assert_error(
        api.post(
            url, content=b" " * (16 * 1024 * 1024 + 1), headers={"Content-Type": "application/json"}
        ),
        413,
        "BAD_REQUEST",
        "Request body exceeds 16777216 bytes",
    )


def test_gzip_request_bodies_are_accepted(api, branch):
    """The Java client gzips every body unless told not to."""
    before = head(api, branch)
    ns = unique("gz")
    body = {"commitMeta": {"message": "gz"}, "operations": [put_op([ns], namespace_content([ns]))]}
    resp = api.post(
        f"/trees/{branch}@{before}/history/commit",
        content=gzip.compress(json.dumps(body).encode()),
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert resp.status_code == 200, resp.text
    assert api.get(f"/trees/{branch}/contents/{ns}").json()["content"]["elements"] == [ns]


def test_bad_parameters_filters_and_routes(api, branch, unchanged):
    entries = f"/trees/{branch}/entries"
    invalid_filter = {"prefix": "Invalid filter expression"}
    for path, params, expected in [
        (
            entries,
            {"max-records": "many"},
            {"message": "Query parameter 'max-records' must be an integer"},
        ),
        (entries, {"filter": "entry.contentType =="}, invalid_filter),
        (entries, {"filter": "__import__('os').system('true')"}, invalid_filter),
        (
            entries,
            {"filter": "entry.secret == 1"},
            {"message": "Unknown filter attribute 'secret'"},
        ),
        (
            f"/trees/{branch}",
            {"fetch": "EVERYTHING"},
            {"message": "Invalid fetch option 'EVERYTHING'"},
        ),
    ]:
        assert_error(api.get(path, params=params), 400, "BAD_REQUEST", **expected)
    assert_error(api.get("/trees/a..b"), 400, "BAD_REQUEST", f"{REF_RULE} - but was: a..b")
    assert api.get("/no/such/endpoint").status_code == 404
    assert api.patch("/trees/main").status_code == 405


def test_error_details_only_for_clients_speaking_spec_2(nessie, branch):
    url = f"{nessie.api_v2}/trees/no_such/history/commit"
    plain = httpx.post(
        url, json={"commitMeta": {}, "operations": []}, headers=harness_headers(nessie)
    )
    assert plain.status_code == 404 and "errorDetails" not in plain.json()
    ns = unique("d")
    with httpx.Client(base_url=nessie.api_v2, headers=harness_headers(nessie)) as client:
        h = head(client, branch)
        resp = commit(client, branch, h, put_op([ns, "t"], iceberg_table("s3://t")))
    assert resp.status_code == 409 and "errorDetails" not in resp.json()
    assert resp.json()["message"] == f"Namespace '{ns}' must exist."


def _garbage_requests(branch: str, hash_: str) -> list[tuple[str, str, dict]]:
    commit_url = f"/trees/{branch}@{hash_}/history/commit"
    meta = {"message": "m"}
    table = {"type": "ICEBERG_TABLE", "metadataLocation": "s3://x"}
    return [
        ("POST", commit_url, {"json": {"commitMeta": meta, "operations": "nope"}}),
        ("POST", commit_url, {"json": {"commitMeta": meta, "operations": [1]}}),
        ("POST", commit_url, {"json": put_body("ab", table)}),
        ("POST", commit_url, {"json": put_body(["a\u0001"], table)}),
        ("POST", commit_url, {"json": put_body(["a"], {"type": "NAMESPACE", "elements": 5})}),
        ("POST", commit_url, {"json": put_body(["t"], {**table, "snapshotId": "1"})}),
        ("POST", commit_url, {"json": {"commitMeta": {"message": 5}, "operations": []}}),
        ("POST", commit_url, {"json": {"commitMeta": {"authors": "me"}, "operations": []}}),
        ("POST", commit_url, {"json": {"commitMeta": [], "operations": []}}),
        ("POST", commit_url, {"json": {"operations": []}}),
        ("POST", commit_url, {"content": b"null"}),
        ("POST", commit_url, {"content": b""}),
        (
            "POST",
            f"/trees/{branch}@{hash_}/history/merge",
            {"json": {"fromRefName": "main", "keyMergeModes": 7}},
        ),
        (
            "POST",
            f"/trees/{branch}@{hash_}/history/merge",
            {"json": {"fromRefName": "main", "fromHash": "xyz"}},
        ),
        (
            "POST",
            f"/trees/{branch}@{hash_}/history/merge",
            {"json": {"fromRefName": "main", "defaultKeyMergeMode": "YOLO"}},
        ),
        ("POST", "/trees", {"params": {"name": "ok_name", "type": "FOLDER"}, "json": {}}),
        ("POST", "/trees", {"params": {"name": "ok_name", "type": "BRANCH"}, "json": "x"}),
        (
            "POST",
            "/trees",
            {
                "params": {"name": "ok_name", "type": "BRANCH"},
                "json": {"name": "main", "hash": "not-hex"},
            },
        ),
        ("PUT", f"/trees/{branch}@{hash_}", {"json": {"name": "main"}}),
        ("POST", f"/trees/{branch}/contents", {"json": {"requestedKeys": [5]}}),
        ("POST", f"/trees/{branch}/contents", {"json": {"requestedKeys": "a"}}),
        ("GET", f"/trees/{branch}/entries", {"params": {"filter": "size(5) == 1"}}),
        ("GET", f"/trees/{branch}/entries", {"params": {"filter": "entry.key.matches('(')"}}),
        (
            "GET",
            f"/trees/{branch}/entries",
            {"params": {"filter": "(" * 2000 + "true" + ")" * 2000}},
        ),
        ("GET", f"/trees/{branch}/entries", {"params": {"filter": "entry.keyElements == 'a' ||"}}),
        ("GET", f"/trees/{branch}/entries", {"params": {"page-token": "."}}),
        ("GET", f"/trees/{branch}/history", {"params": {"page-token": "zz"}}),
        ("GET", f"/trees/{branch}/history", {"params": {"max-records": "-1"}}),
        ("GET", f"/trees/{branch}*2021-13-45T25:61:61Z/entries", {}),
        ("GET", f"/trees/{branch}^0/entries", {}),
        ("GET", f"/trees/{branch}/contents/%2E", {}),
        ("GET", f"/trees/{branch}/diff/@{'0' * 64}", {}),
        ("GET", "/trees/" + "a" * 5000, {}),
    ]


def test_garbage_never_causes_a_server_error(api, branch, unchanged):
    for method, url, kwargs in _garbage_requests(branch, head(api, branch)):
        resp = api.request(method, url, **kwargs)
        assert 400 <= resp.status_code < 500, (method, url, resp.status_code, resp.text)
        body = resp.json()
        assert body["errorCode"] in {
            "BAD_REQUEST",
            "REFERENCE_NOT_FOUND",
            "CONTENT_NOT_FOUND",
            "REFERENCE_CONFLICT",
        }, (url, body)
        assert body["message"]
