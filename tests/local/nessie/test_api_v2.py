"""API v2 as Nessie's Java client uses it; every 200 body validates against Nessie's OpenAPI."""

from __future__ import annotations

import hashlib
import uuid

import httpx
import jsonschema
import pytest

from bench.nessie_requests import (
    delete_op,
    iceberg_table,
    merge_body,
    namespace_content,
    put_op,
    reference_body,
)
from local.nessie.runner import start_server
from tests.fixtures.catalog_auth import harness_headers
from tests.fixtures.nessie_api import commit, create_branch, head, unique


def make_table(api, branch: str, ns: str, table: str = "t", location: str = "s3://w/m1.json"):
    """Namespace + table on `branch`; returns (commit hash, table content id)."""
    resp = commit(
        api,
        branch,
        head(api, branch),
        put_op([ns], namespace_content([ns])),
        put_op([ns, table], iceberg_table(location)),
    )
    assert resp.status_code == 200, resp.text
    added = {tuple(a["key"]["elements"]): a["contentId"] for a in resp.json()["addedContents"]}
    return resp.json()["targetBranch"]["hash"], added[(ns, table)]


def test_fresh_repository_starts_main_at_the_no_ancestor_hash(tmp_path, validate):
    server = start_server(str(tmp_path / "fresh.db"))
    try:
        config = httpx.get(server.api_v2 + "/config", headers=harness_headers(server)).json()
        validate("NessieConfiguration_V2", config)
        empty = hashlib.sha256(b"empty").hexdigest()
        assert config["defaultBranch"] == "main"
        assert config["noAncestorHash"] == empty
        assert (config["minSupportedApiVersion"], config["maxSupportedApiVersion"]) == (1, 2)
        refs = httpx.get(server.api_v2 + "/trees", headers=harness_headers(server)).json()
        validate("ReferencesResponse_V2", refs)
        assert refs["references"] == [{"type": "BRANCH", "name": "main", "hash": empty}]
        log = httpx.get(
            server.api_v2 + "/trees/main/history", headers=harness_headers(server)
        ).json()
        assert log["logEntries"] == []
    finally:
        server.stop()


def test_reference_syntax_resolves_names_hashes_default_and_relative(api, validate):
    ns = unique("syn")
    first, _ = make_table(api, "main", ns)
    second = commit(api, "main", first, put_op([ns, "u"], iceberg_table("s3://w/u.json"))).json()[
        "targetBranch"
    ]["hash"]
    forms = {
        "main": second,
        "-": second,
        f"main@{first}": first,
        f"@{first}": first,
        f"main@{first[:10]}": first,
        "main~1": first,
        f"@{second}~1": first,
        "main@": second,
    }
    for spec, expected in forms.items():
        resp = api.get(f"/trees/{spec}/entries")
        assert resp.status_code == 200, (spec, resp.text)
        validate("EntriesResponse_V2", resp.json())
        assert resp.json()["effectiveReference"]["hash"] == expected, spec
    detached = api.get(f"/trees/@{first}/contents/{ns}.t").json()
    validate("ContentResponse_V2", detached)
    assert detached["effectiveReference"] == {"type": "DETACHED", "name": "DETACHED", "hash": first}
    ref = api.get("/trees/-").json()
    validate("SingleReferenceResponse_V2", ref)
    assert ref["reference"] == {"type": "BRANCH", "name": "main", "hash": second}
    assert api.get(f"/trees/main@{first}/contents/{ns}.u").status_code == 404


def test_detached_reads_need_a_starting_commit(api):
    """Nessie's `AbstractRelativeReferences.get*AmbiguousDetached`: `@~1` names no commit."""
    for url, what in (
        ("/trees/@~1/contents/a", "Expected hash"),
        ("/trees/@~1/contents?key=a", "Expected hash"),
        ("/trees/@~1/entries", "Expected hash"),
        ("/trees/@~1/history", "Youngest hash"),
        ("/trees/@~1/diff/main", '"From" hash'),
        ("/trees/main/diff/@~2", '"To" hash'),
    ):
        resp = api.get(url)
        assert resp.status_code == 400, (url, resp.text)
        assert resp.json()["errorCode"] == "BAD_REQUEST"
        assert resp.json()["message"] == f"{what} must contain a starting commit ID.", url


def test_contents_single_and_multiple_forms(api, validate):
    ns = unique("cnt")
    hash_, table_id = make_table(api, "main", ns, location="s3://w/orders/v1.json")
    single = api.get(f"/trees/main@{hash_}/contents/{ns}.t").json()
    validate("ContentResponse_V2", single)
    assert single["content"] == {
        "type": "ICEBERG_TABLE",
        "id": table_id,
        "metadataLocation": "s3://w/orders/v1.json",
        "snapshotId": -1,
        "schemaId": 0,
        "specId": 0,
        "sortOrderId": 0,
    }
    body = {
        "requestedKeys": [
            {"elements": [ns]},
            {"elements": [ns, "t"]},
            {"elements": [ns, "missing"]},
        ]
    }
    multi = api.post("/trees/main/contents", json=body).json()
    validate("GetMultipleContentsResponse_V2", multi)
    assert [c["key"]["elements"] for c in multi["contents"]] == [[ns], [ns, "t"]]
    assert multi["contents"][0]["content"]["type"] == "NAMESPACE"
    several = api.get("/trees/main/contents", params=[("key", f"{ns}.t"), ("key", ns)]).json()
    validate("GetMultipleContentsResponse_V2", several)
    assert sorted(len(c["key"]["elements"]) for c in several["contents"]) == [1, 2]

    missing = api.get(f"/trees/main/contents/{ns}.nope")
    assert missing.status_code == 404
    assert missing.json()["errorCode"] == "CONTENT_NOT_FOUND"
    assert missing.json()["message"] == (
        f"Could not find content for key '{ns}.nope' in reference 'main'."
    )


def test_entries_with_the_filters_iceberg_sends_and_paging(api, validate):
    top = unique("ent")
    ops = [
        put_op([top], namespace_content([top])),
        put_op([top, "a"], namespace_content([top, "a"])),
        put_op([top, "b"], namespace_content([top, "b"])),
        put_op([top, "a", "x"], namespace_content([top, "a", "x"])),
    ]
    ops += [put_op([top, "a", f"t{i}"], iceberg_table(f"s3://w/{i}.json")) for i in range(5)]
    assert commit(api, "main", head(api), *ops).status_code == 200

    # What NessieIcebergClient.listNamespaces sends for a one-level parent.
    flt = (
        f"entry.contentType == 'NAMESPACE' && size(entry.keyElements) == 2 && "
        f"entry.encodedKey.startsWith('{top}.')"
    )
    resp = api.get("/trees/main/entries", params={"filter": flt}).json()
    validate("EntriesResponse_V2", resp)
    assert [e["name"]["elements"] for e in resp["entries"]] == [[top, "a"], [top, "b"]]
    assert all(e["type"] == "NAMESPACE" and e["contentId"] for e in resp["entries"])

    tables = api.get(
        "/trees/main/entries",
        params={
            "filter": f"entry.namespace == '{top}.a' && entry.contentType in ['ICEBERG_TABLE']",
            "content": "true",
        },
    ).json()
    validate("EntriesResponse_V2", tables)
    assert [e["name"]["elements"][-1] for e in tables["entries"]] == [f"t{i}" for i in range(5)]
    assert tables["entries"][0]["content"]["metadataLocation"] == "s3://w/0.json"

    seen, token, pages = [], None, 0
    while True:
        params = {"prefix-key": f"{top}.a", "max-records": "2"}
        if token:
            params["page-token"] = token
        page = api.get("/trees/main/entries", params=params).json()
        validate("EntriesResponse_V2", page)
        seen += [e["name"]["elements"] for e in page["entries"]]
        pages += 1
        if not page["hasMore"]:
            break
        token = page["token"]
    assert pages == 4
    assert seen == [[top, "a"]] + [[top, "a", f"t{i}"] for i in range(5)] + [[top, "a", "x"]]


def test_commit_assigns_ids_and_enforces_content_id_and_expected_hash_rules(api, validate):
    ns = unique("ids")
    base, table_id = make_table(api, "main", ns)
    uuid.UUID(table_id)  # a server-assigned UUID

    update = commit(api, "main", base, put_op([ns, "t"], iceberg_table("s3://w/v2", table_id)))
    assert update.status_code == 200, update.text
    validate("CommitResponse_V2", update.json())
    assert update.json()["addedContents"] == []
    after_update = update.json()["targetBranch"]["hash"]

    def conflict(resp, conflict_type: str, message: str) -> None:
        assert resp.status_code == 409, resp.text
        body = resp.json()
        assert body["errorCode"] == "REFERENCE_CONFLICT"
        assert body["message"] == message
        assert [c["conflictType"] for c in body["errorDetails"]["conflicts"]] == [conflict_type]

    conflict(
        commit(api, "main", after_update, put_op([ns, "t"], iceberg_table("s3://w/v3"))),
        "KEY_EXISTS",
        f"Key '{ns}.t' already exists.",
    )
    conflict(
        commit(
            api,
            "main",
            after_update,
            put_op([ns, "t"], iceberg_table("s3://w/v3", str(uuid.uuid4()))),
        ),
        "CONTENT_ID_DIFFERS",
        f"Content IDs of existing and expected content for key '{ns}.t' are different.",
    )
    # The table changed since `base`: a commit based on `base` must not overwrite it.
    conflict(
        commit(api, "main", base, put_op([ns, "t"], iceberg_table("s3://w/v3", table_id))),
        "VALUE_DIFFERS",
        f"Values of existing and expected content for key '{ns}.t' are different.",
    )
    conflict(
        commit(api, "main", after_update, put_op([ns, "no", "t"], iceberg_table("s3://x"))),
        "NAMESPACE_ABSENT",
        f"Namespace '{ns}.no' must exist.",
    )
    conflict(
        commit(api, "main", after_update, delete_op([ns])),
        "NAMESPACE_NOT_EMPTY",
        f"Namespace '{ns}' is not empty.",
    )
    conflict(
        commit(api, "main", after_update, put_op([ns, "t", "x"], iceberg_table("s3://x"))),
        "NOT_A_NAMESPACE",
        f"Expecting the key '{ns}.t' to be a namespace, but is not a namespace (using a content "
        "object that is not a namespace as a namespace is forbidden).",
    )
    assert head(api) == after_update

    # Unrelated keys may have moved since the expected hash: Nessie accepts that commit.
    other = commit(api, "main", base, put_op([ns, "other"], iceberg_table("s3://w/o")))
    assert other.status_code == 200, other.text
    log = api.get("/trees/main/history", params={"max-records": "1"}).json()
    assert log["logEntries"][0]["commitMeta"]["parentCommitHashes"] == [after_update]


def test_merge_dry_run_conflict_as_result_and_merge_commit(api, validate):
    ns = unique("mrg")
    _, table_id = make_table(api, "main", ns)
    b1, b2 = unique("b1"), unique("b2")
    create_branch(api, b1)
    create_branch(api, b2)
    for branch, loc in ((b1, "s3://w/b1"), (b2, "s3://w/b2")):
        resp = commit(
            api, branch, head(api, branch), put_op([ns, "t"], iceberg_table(loc, table_id))
        )
        assert resp.status_code == 200, resp.text
    main_before = head(api)

    for flag in ("dryRun", "isDryRun"):
        body = {"fromRefName": b1, "fromHash": head(api, b1), flag: True}
        dry = api.post(f"/trees/main@{main_before}/history/merge", json=body)
        assert dry.status_code == 200, dry.text
        validate("MergeResponse_V2", dry.json())
        assert (dry.json()["wasApplied"], dry.json()["wasSuccessful"]) == (False, True)
        assert head(api) == main_before

    merged = api.post(
        f"/trees/main@{main_before}/history/merge", json=merge_body(b1, head(api, b1))
    ).json()
    validate("MergeResponse_V2", merged)
    assert merged["wasApplied"] and merged["wasSuccessful"]
    assert merged["commonAncestor"] == main_before
    assert merged["details"] == [{"key": {"elements": [ns, "t"]}, "mergeBehavior": "NORMAL"}]
    log = api.get("/trees/main/history", params={"max-records": "1"}).json()
    assert log["logEntries"][0]["commitMeta"]["parentCommitHashes"] == [main_before, head(api, b1)]
    assert api.get(f"/trees/main/contents/{ns}.t").json()["content"]["metadataLocation"] == (
        "s3://w/b1"
    )

    b2_head = head(api, b2)
    as_result = api.post(
        f"/trees/main@{head(api)}/history/merge",
        json=merge_body(b2, b2_head, return_conflict_as_result=True),
    )
    assert as_result.status_code == 200
    validate("MergeResponse_V2", as_result.json())
    assert (as_result.json()["wasApplied"], as_result.json()["wasSuccessful"]) == (False, False)
    assert as_result.json()["details"][0]["conflict"]["conflictType"] == "VALUE_DIFFERS"

    refused = api.post(f"/trees/main@{head(api)}/history/merge", json=merge_body(b2, b2_head))
    assert refused.status_code == 409
    assert refused.json()["errorCode"] == "REFERENCE_CONFLICT"
    assert refused.json()["errorDetails"]["conflicts"][0]["key"] == {"elements": [ns, "t"]}
    assert head(api) == merged["resultantTargetHash"]


def test_diff_between_branches(api, validate):
    ns = unique("dif")
    _, table_id = make_table(api, "main", ns)
    branch = unique("d")
    create_branch(api, branch)
    commit(
        api,
        branch,
        head(api, branch),
        put_op([ns, "t"], iceberg_table("s3://w/2", table_id)),
        put_op([ns, "new"], iceberg_table("s3://w/n")),
    )
    diff = api.get(f"/trees/main/diff/{branch}").json()
    validate("DiffResponse_V2", diff)
    by_key = {tuple(d["key"]["elements"]): d for d in diff["diffs"]}
    assert set(by_key) == {(ns, "t"), (ns, "new")}
    assert by_key[(ns, "t")]["from"]["metadataLocation"] == "s3://w/m1.json"
    assert by_key[(ns, "t")]["to"]["metadataLocation"] == "s3://w/2"
    assert "from" not in by_key[(ns, "new")]


def test_log_pages_through_a_linear_history(api, validate):
    branch = unique("log")
    start = create_branch(api, branch)
    ns = unique("lg")
    expected = []
    current = commit(
        api, branch, start, put_op([ns], namespace_content([ns])), message="c0"
    ).json()["targetBranch"]["hash"]
    expected.append(current)
    for i in range(1, 5):
        current = commit(
            api, branch, current, put_op([ns, f"t{i}"], iceberg_table(f"s3://{i}")), message=f"c{i}"
        ).json()["targetBranch"]["hash"]
        expected.append(current)
    entries, token = [], None
    while True:
        params = {"max-records": "2", "fetch": "ALL", "limit-hash": expected[0]}
        if token:
            params["page-token"] = token
        page = api.get(f"/trees/{branch}/history", params=params).json()
        validate("LogResponse_V2", page)
        entries += page["logEntries"]
        if not page["hasMore"]:
            break
        token = page["token"]
    assert [e["commitMeta"]["hash"] for e in entries] == expected[::-1]
    assert [e["commitMeta"]["message"] for e in entries] == ["c4", "c3", "c2", "c1", "c0"]
    assert [e["parentCommitHash"] for e in entries] == [*expected[::-1][1:], start]
    assert entries[0]["operations"][0]["key"] == {"elements": [ns, "t4"]}


def test_tags_assign_and_delete_with_expected_hashes(api, validate):
    ns = unique("tag")
    first, _ = make_table(api, "main", ns)
    tag = unique("v")
    created = api.post(
        "/trees", params={"name": tag, "type": "TAG"}, json=reference_body("main", first)
    )
    assert created.status_code == 200, created.text
    validate("SingleReferenceResponse_V2", created.json())
    assert created.json()["reference"] == {"type": "TAG", "name": tag, "hash": first}

    branch = unique("asg")
    start = create_branch(api, branch)
    second = commit(api, branch, start, put_op([ns, "x"], iceberg_table("s3://x"))).json()[
        "targetBranch"
    ]["hash"]
    moved = api.put(
        f"/trees/{tag}@{first}", params={"type": "TAG"}, json=reference_body(branch, second)
    )
    assert moved.status_code == 200, moved.text
    validate("SingleReferenceResponse_V2", moved.json())
    assert head(api, tag) == second

    stale = api.put(f"/trees/{tag}@{first}", json=reference_body("main", first))
    assert stale.status_code == 409
    assert stale.json()["message"] == (
        f"Named-reference '{tag}' is not at expected hash '{first}', but at '{second}'."
    )
    assert head(api, tag) == second

    deleted = api.delete(f"/trees/{tag}@{second}", params={"type": "TAG"})
    assert deleted.status_code == 200
    validate("SingleReferenceResponse_V2", deleted.json())
    assert api.get(f"/trees/{tag}").status_code == 404
    assert api.delete(f"/trees/{branch}@{second}").status_code == 200
    names = [r["name"] for r in api.get("/trees").json()["references"]]
    assert tag not in names and branch not in names


def test_references_with_metadata(api, validate):
    branch = unique("meta")
    create_branch(api, branch)
    ns = unique("md")
    commit(api, branch, head(api, branch), put_op([ns], namespace_content([ns])), message="ahead")
    refs = api.get("/trees", params={"fetch": "ALL"}).json()
    validate("ReferencesResponse_V2", refs)
    mine = next(r for r in refs["references"] if r["name"] == branch)
    assert mine["metadata"]["numCommitsAhead"] == 1
    assert mine["metadata"]["numCommitsBehind"] == 0
    assert mine["metadata"]["commitMetaOfHEAD"]["message"] == "ahead"
    single = api.get(f"/trees/{branch}", params={"fetch": "ALL"}).json()
    validate("SingleReferenceResponse_V2", single)


def test_the_openapi_check_rejects_bodies_that_break_the_spec(validate):
    """Guards the guard: the schema check used above does fail on non-conforming bodies."""
    main = {"type": "BRANCH", "name": "main", "hash": "ab" * 32}
    bad = [
        ("SingleReferenceResponse_V2", {"reference": {"type": "BRANCH", "hash": "zz"}}),
        ("SingleReferenceResponse_V2", {"reference": {**main, "name": "1bad"}}),
        ("LogResponse_V2", {"logEntries": [{"commitMeta": {"message": "x"}}]}),
        ("ContentResponse_V2", {"content": {"type": "ICEBERG_TABLE"}, "effectiveReference": main}),
        ("EntriesResponse_V2", {}),
    ]
    for name, body in bad:
        with pytest.raises(jsonschema.ValidationError):
            validate(name, body)
