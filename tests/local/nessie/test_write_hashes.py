"""Every write names the commit it expects, as real Nessie demands.

Messages and statuses are Nessie's: `HashValidator` and `TreeApiImpl` (servers/services) for
API v2 and the service layer, bean validation of `api/v1/TreeApi` for API v1. The layout and
the cases follow Nessie's REST suite `AbstractRelativeReferences` (servers/jax-rs-tests):

    base  c1 -- c2
                  \\
    etl1           c3
                     \\
    etl2              c4 -- c5
                       |
                      tag1
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from bench.nessie_requests import namespace_content, operations_body, put_op
from tests.fixtures.catalog_auth import harness_headers
from tests.fixtures.nessie_api import commit, create_branch, head, unique

AMBIGUOUS_TIME = "*2023-01-01T00:00:00.000Z"


@dataclass(frozen=True)
class Layout:
    base: str
    etl1: str
    etl2: str
    tag1: str
    c1: str
    c2: str
    c3: str
    c4: str
    c5: str

    def refs(self) -> dict[str, str]:
        return {n: getattr(self, n) for n in ("base", "etl1", "etl2", "tag1")}


def _commit_key(api: httpx.Client, branch: str) -> str:
    ns = unique("k")
    resp = commit(api, branch, head(api, branch), put_op([ns], namespace_content([ns])))
    assert resp.status_code == 200, resp.text
    return resp.json()["targetBranch"]["hash"]


@pytest.fixture
def lay(api: httpx.Client) -> Layout:
    base, etl1, etl2, tag1 = unique("base"), unique("etl1"), unique("etl2"), unique("tag1")
    create_branch(api, base)
    c1 = _commit_key(api, base)
    c2 = _commit_key(api, base)
    create_branch(api, etl1, base)
    c3 = _commit_key(api, etl1)
    create_branch(api, etl2, etl1)
    c4 = _commit_key(api, etl2)
    tag = api.post("/trees", params={"name": tag1, "type": "TAG"}, json=ref(etl2, c4))
    assert tag.status_code == 200, tag.text
    c5 = _commit_key(api, etl2)
    return Layout(base, etl1, etl2, tag1, c1, c2, c3, c4, c5)


def ref(name: str, hash_: str | None = None, type_: str = "BRANCH") -> dict[str, Any]:
    body: dict[str, Any] = {"type": type_, "name": name}
    if hash_ is not None:
        body["hash"] = hash_
    return body


def detached(hash_: str) -> dict[str, Any]:
    return {"type": "DETACHED", "name": "DETACHED", "hash": hash_}


def heads(api: httpx.Client, lay: Layout) -> dict[str, str]:
    return {name: head(api, name) for name in lay.refs().values()}


def expect_error(resp: httpx.Response, status: int, code: str, message: str) -> None:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert (body["status"], body["errorCode"], body["message"]) == (status, code, message)


def bad_request(resp: httpx.Response, message: str) -> None:
    expect_error(resp, 400, "BAD_REQUEST", message)


def ops_body() -> dict[str, Any]:
    ns = unique("w")
    return operations_body("write", put_op([ns], namespace_content([ns])))


def merge_json(from_ref: str, from_hash: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"fromRefName": from_ref}
    if from_hash is not None:
        body["fromHash"] = from_hash
    return body


# ------------------------------------------------------------------ v2: delete


def test_delete_without_expected_hash_is_refused(api, lay):
    before = heads(api, lay)
    for name in (lay.base, lay.tag1):
        bad_request(api.delete(f"/trees/{name}"), "Expected hash must be provided.")
    assert heads(api, lay) == before


def test_delete_with_ambiguous_expected_hash_is_refused(api, lay):
    bad_request(
        api.delete(f"/trees/{lay.base}@^1"), "Expected hash must contain a starting commit ID."
    )
    bad_request(
        api.delete(f"/trees/{lay.base}~1"), "Expected hash must contain a starting commit ID."
    )
    assert head(api, lay.base) == lay.c2


def test_delete_resolves_an_unambiguous_relative_expected_hash(api, lay):
    deleted = api.delete(f"/trees/{lay.base}@{lay.c3}~1")
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["reference"] == {"type": "BRANCH", "name": lay.base, "hash": lay.c2}
    expect_error(
        api.delete(f"/trees/{lay.etl1}@cafebabe~1"),
        404,
        "REFERENCE_NOT_FOUND",
        "Commit 'cafebabe' not found",
    )


def test_delete_of_default_branch_is_refused_before_the_hash_is_checked(api):
    bad_request(api.delete("/trees/main"), "Default branch 'main' cannot be deleted.")


def test_delete_of_detached_is_an_unknown_reference(api, lay):
    expect_error(
        api.delete(f"/trees/@{lay.c2}"),
        404,
        "REFERENCE_NOT_FOUND",
        "Named reference 'DETACHED' not found",
    )


# ------------------------------------------------------------------ v2: assign


def test_assign_without_expected_hash_is_refused(api, lay):
    for name in (lay.base, lay.tag1):
        bad_request(
            api.put(f"/trees/{name}", json=ref(lay.etl1, lay.c3)),
            "Expected hash must be provided.",
        )
    assert (head(api, lay.base), head(api, lay.tag1)) == (lay.c2, lay.c4)


def test_assign_with_ambiguous_expected_hash_is_refused(api, lay):
    for spec in (f"{lay.base}@^1", f"{lay.tag1}@~1"):
        bad_request(
            api.put(f"/trees/{spec}", json=ref(lay.etl1, lay.c3)),
            "Expected hash must contain a starting commit ID.",
        )


def test_assign_of_detached_is_refused(api, lay):
    for spec in (f"@{lay.c2}~1", "@~1"):
        bad_request(
            api.put(f"/trees/{spec}", json=ref(lay.etl1, lay.c3)),
            "Assignment target must be a branch or a tag.",
        )


def test_assign_to_a_reference_without_target_hash_is_refused(api, lay):
    for body in (ref(lay.base), ref(lay.tag1, type_="TAG")):
        bad_request(
            api.put(f"/trees/{lay.etl1}@{lay.c3}", json=body), "Target hash must be provided."
        )
    assert head(api, lay.etl1) == lay.c3


def test_assign_to_an_ambiguous_target_hash_is_refused(api, lay):
    for body in (ref(lay.etl2, "~1"), ref(lay.tag1, "~1", "TAG"), detached("~1")):
        bad_request(
            api.put(f"/trees/{lay.etl1}@{lay.c3}", json=body),
            "Target hash must contain a starting commit ID.",
        )


def test_assign_resolves_unambiguous_relative_hashes(api, lay):
    moved = api.put(f"/trees/{lay.base}@{lay.c3}~1", json=ref(lay.etl1, lay.c3))
    assert moved.status_code == 200, moved.text
    assert moved.json()["reference"]["hash"] == lay.c3
    moved = api.put(f"/trees/{lay.etl1}@{lay.c3}", json=ref(lay.etl2, f"{lay.c4}~1"))
    assert moved.status_code == 200, moved.text
    assert moved.json()["reference"]["hash"] == lay.c3
    moved = api.put(f"/trees/{lay.etl1}@{lay.c3}", json=detached(f"{lay.c2}~1"))
    assert moved.status_code == 200, moved.text
    assert head(api, lay.etl1) == lay.c1
    expect_error(
        api.put(f"/trees/{lay.tag1}@{lay.c5}~2", json=ref(lay.etl1, lay.c1)),
        409,
        "REFERENCE_CONFLICT",
        f"Named-reference '{lay.tag1}' is not at expected hash '{lay.c3}', but at '{lay.c4}'.",
    )


# ------------------------------------------------------------------ v2: create


def test_create_without_target_hash_is_refused(api, lay):
    name = unique("new")
    for body in (ref(lay.etl2), ref(lay.tag1, type_="TAG")):
        bad_request(
            api.post("/trees", params={"name": name, "type": "BRANCH"}, json=body),
            "Target hash must be provided.",
        )
    bad_request(
        api.post("/trees", params={"name": name, "type": "BRANCH"}),
        "Target hash must be provided.",
    )
    assert api.get(f"/trees/{name}").status_code == 404


def test_create_from_an_ambiguous_target_hash_is_refused(api, lay):
    for body in (ref(lay.base, "~1"), ref(lay.tag1, "~1", "TAG"), detached("~1")):
        bad_request(
            api.post("/trees", params={"name": unique("new"), "type": "BRANCH"}, json=body),
            "Target hash must contain a starting commit ID.",
        )


def test_create_resolves_an_unambiguous_relative_target_hash(api, lay):
    for body, expected in (
        (ref(lay.base, f"{lay.c2}~1"), lay.c1),
        (ref(lay.tag1, f"{lay.c4}~1", "TAG"), lay.c3),
        (detached(f"{lay.c2}~1"), lay.c1),
    ):
        name = unique("new")
        created = api.post("/trees", params={"name": name, "type": "BRANCH"}, json=body)
        assert created.status_code == 200, created.text
        assert created.json()["reference"] == {"type": "BRANCH", "name": name, "hash": expected}


# ------------------------------------------------------------------ v2: commit


def test_commit_without_expected_hash_is_refused(api, lay):
    bad_request(
        api.post(f"/trees/{lay.base}/history/commit", json=ops_body()),
        "Expected hash must be provided.",
    )
    assert head(api, lay.base) == lay.c2


def test_commit_with_ambiguous_expected_hash_is_refused(api, lay):
    for spec in (f"{lay.base}{AMBIGUOUS_TIME}", f"{lay.base}@~1"):
        bad_request(
            api.post(f"/trees/{spec}/history/commit", json=ops_body()),
            "Expected hash must contain a starting commit ID.",
        )


def test_commit_into_a_tag_or_detached_is_refused(api, lay):
    for spec in (lay.tag1, f"{lay.tag1}@{lay.c4}~1", f"{lay.tag1}@~1", f"@{lay.c5}~1", "@~1"):
        bad_request(
            api.post(f"/trees/{spec}/history/commit", json=ops_body()),
            "Reference to commit into must be a branch.",
        )


def test_commit_resolves_an_unambiguous_relative_expected_hash(api, lay):
    done = api.post(f"/trees/{lay.base}@{lay.c3}~1/history/commit", json=ops_body())
    assert done.status_code == 200, done.text
    expect_error(
        api.post(f"/trees/{lay.etl1}@{lay.c5}~1/history/commit", json=ops_body()),
        404,
        "REFERENCE_NOT_FOUND",
        f"Could not find commit '{lay.c4}' in reference '{lay.etl1}'.",
    )


# ------------------------------------------------------------------ v2: merge


def test_merge_without_expected_hash_is_refused(api, lay):
    bad_request(
        api.post(f"/trees/{lay.base}/history/merge", json=merge_json(lay.etl1, lay.c3)),
        "Expected hash must be provided.",
    )
    assert head(api, lay.base) == lay.c2


def test_merge_with_ambiguous_expected_hash_is_refused(api, lay):
    bad_request(
        api.post(
            f"/trees/{lay.base}@{AMBIGUOUS_TIME}/history/merge", json=merge_json(lay.etl1, lay.c3)
        ),
        "Expected hash must contain a starting commit ID.",
    )


def test_merge_into_a_tag_or_detached_is_refused(api, lay):
    for spec in (lay.tag1, f"{lay.tag1}@{lay.c4}~1", f"@{lay.c5}~1", f"@{AMBIGUOUS_TIME}"):
        bad_request(
            api.post(f"/trees/{spec}/history/merge", json=merge_json(lay.etl1, lay.c3)),
            "Reference to merge into must be a branch.",
        )


def test_merge_without_source_hash_is_refused(api, lay):
    for source in (lay.etl1, lay.tag1):
        bad_request(
            api.post(f"/trees/{lay.base}@{lay.c2}/history/merge", json=merge_json(source, None)),
            "Source hash must be provided.",
        )
    # Nessie resolves the source before the target.
    bad_request(
        api.post(f"/trees/{lay.base}/history/merge", json=merge_json(lay.etl1, None)),
        "Source hash must be provided.",
    )
    assert head(api, lay.base) == lay.c2


def test_merge_from_an_ambiguous_source_hash_is_refused(api, lay):
    for source, spec in ((lay.etl1, AMBIGUOUS_TIME), (lay.tag1, "~2"), ("DETACHED", "~2")):
        bad_request(
            api.post(f"/trees/{lay.base}@{lay.c2}/history/merge", json=merge_json(source, spec)),
            "Source hash must contain a starting commit ID.",
        )


@pytest.mark.parametrize("source", ["etl2", "tag1", "DETACHED"])
def test_merge_resolves_unambiguous_relative_hashes(api, lay, source):
    from_ref = lay.refs().get(source, source)
    from_hash = f"{lay.c5}~2" if source != "tag1" else f"{lay.c4}~1"
    merged = api.post(
        f"/trees/{lay.base}@{lay.c3}~1/history/merge", json=merge_json(from_ref, from_hash)
    )
    assert merged.status_code == 200, merged.text
    body = merged.json()
    assert (body["commonAncestor"], body["effectiveTargetHash"]) == (lay.c2, lay.c2)
    assert body["wasApplied"]
    log = api.get(f"/trees/{lay.base}/history", params={"max-records": "1"}).json()
    assert log["logEntries"][0]["commitMeta"]["parentCommitHashes"] == [lay.c2, lay.c3]


# ------------------------------------------------------------------ v1


@pytest.fixture
def v1(nessie) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=nessie.api_v1, timeout=30, headers=harness_headers(nessie)
    ) as client:
        yield client


def violations(resp: httpx.Response) -> set[str]:
    """Nessie joins bean-validation violations with ', ' in no fixed order."""
    assert resp.status_code == 400, resp.text
    assert resp.json()["errorCode"] == "BAD_REQUEST"
    return set(resp.json()["message"].split(", "))


def test_v1_delete_without_expected_hash_is_refused(v1, api, lay):
    for kind, name in (("branch", lay.base), ("tag", lay.tag1), ("branch", "main")):
        bad_request(
            v1.delete(f"/trees/{kind}/{name}"), "deleteReference.expectedHash: must not be null"
        )
    assert (head(api, lay.base), head(api, lay.tag1)) == (lay.c2, lay.c4)


@pytest.mark.parametrize(
    ("method", "path", "body", "bodyless_path", "operation", "body_param"),
    [
        pytest.param(
            "PUT",
            "/trees/branch/{base}",
            lambda lay: ref(lay.etl1, lay.c3),
            "/trees/tag/{tag1}",
            "assignReference",
            "assignTo",
            id="assign",
        ),
        pytest.param(
            "POST",
            "/trees/branch/{base}/merge",
            lambda lay: merge_json(lay.etl1, lay.c3),
            "/trees/branch/{base}/merge",
            "mergeRefIntoBranch",
            "merge",
            id="merge",
        ),
    ],
)
def test_v1_write_without_expected_hash_is_refused(
    v1, api, lay, method, path, body, bodyless_path, operation, body_param
):
    """Without `expectedHash` the write is refused; without a body too, both are named."""
    bad_request(
        v1.request(method, path.format(**lay.refs()), json=body(lay)),
        f"{operation}.expectedHash: must not be null",
    )
    assert violations(v1.request(method, bodyless_path.format(**lay.refs()))) == {
        f"{operation}.expectedHash: must not be null",
        f"{operation}.{body_param}: must not be null",
    }
    assert head(api, lay.base) == lay.c2


def test_v1_assign_to_a_reference_without_hash_is_refused(v1, api, lay):
    bad_request(
        v1.put(f"/trees/branch/{lay.etl1}", params={"expectedHash": lay.c3}, json=ref(lay.base)),
        "Target hash must be provided.",
    )
    assert head(api, lay.etl1) == lay.c3


def test_v1_create_without_hash_is_refused(v1, api, lay):
    name = unique("new")
    for params in ({}, {"sourceRefName": lay.base}):
        bad_request(
            v1.post("/trees/tree", params=params, json=ref(name)), "Target hash must be provided."
        )
    assert api.get(f"/trees/{name}").status_code == 404


def test_v1_commit_without_expected_hash_is_refused(v1, api, lay):
    bad_request(
        v1.post(f"/trees/branch/{lay.base}/commit", json=ops_body()),
        "commitMultipleOperations.expectedHash: must not be null",
    )
    assert head(api, lay.base) == lay.c2


def test_v1_merge_without_source_hash_is_refused(v1, api, lay):
    bad_request(
        v1.post(
            f"/trees/branch/{lay.base}/merge",
            params={"expectedHash": lay.c2},
            json=merge_json(lay.etl1, None),
        ),
        "Cannot construct instance of `org.projectnessie.api.v1.params.ImmutableMerge`, "
        "problem: Cannot build Merge, some of required attributes are not set [fromHash]",
    )
    assert head(api, lay.base) == lay.c2
