"""Nessie REST API v1 (the subset pynessie 0.67 calls): references, entries, log, contents,
commit, merge, assign, delete, diff. Parse and serialise only; rules live in `store.py`.

v1 bodies differ from v2: references are returned bare (not wrapped), commit metadata uses
the single-valued `author` / `signedOffBy` / `properties`, assign and delete answer 204.
"""

from __future__ import annotations

from typing import Any

from contracts.catalog_authorization import VIEW_REFERENCE

from .exceptions import BadRequestError
from .http import Call, Route
from .models import Commit, Reference, parse_key, parse_merge, parse_operations
from .refs import RefSpec, validate_hash, validate_ref_name
from .responses import (
    authorize_assign,
    authorize_create,
    authorize_delete,
    authorize_merge,
    commit_properties,
    content_at,
    content_checks,
    entries_page,
    log_entry,
    log_json,
    merge_json,
    parse_ref_type,
    readable_diffs,
    readable_keys,
    ref_metadata,
    validate_changes,
)
from .store import NessieStore, Resolved


def commit_meta_v1(commit: Commit) -> dict[str, Any]:
    meta = commit.meta
    authors = meta.get("authors") or []
    signed = meta.get("allSignedOffBy") or []
    return {
        "hash": commit.hash,
        "committer": meta.get("committer", ""),
        "author": authors[0] if authors else None,
        "signedOffBy": signed[0] if signed else None,
        "message": meta.get("message", ""),
        "commitTime": meta.get("commitTime"),
        "authorTime": meta.get("authorTime"),
        "properties": {k: v[0] for k, v in commit_properties(commit).items() if v},
    }


def ref_v1(store: NessieStore, ref: Reference, fetch_all: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ref.type, "name": ref.name, "hash": ref.hash}
    if fetch_all:
        out["metadata"] = ref_metadata(store, ref, commit_meta_v1)
    return out


def _resolve(store: NessieStore, ref: str | None, hash_on_ref: str | None) -> Resolved:
    name = ref or store.default_branch
    if name != "-":
        validate_ref_name(name)
    return store.resolve(RefSpec(name, validate_hash(hash_on_ref) if hash_on_ref else None))


def _expected_hash(call: Call) -> str | None:
    """`expectedHash` if sent (validated); None is refused by `_not_null`."""
    value = call.arg("expectedHash")
    return None if value is None else validate_hash(value, "expectedHash")


def _body(call: Call) -> Any:
    return call.json() if call.raw_body else None


def _not_null(method: str, **params: object) -> None:
    """Nessie's bean validation of the `@NotNull` parameters of `api/v1/TreeApi`: one 400
    naming every missing parameter, joined as `ConstraintViolationException` joins them."""
    missing = [f"{method}.{name}: must not be null" for name, v in params.items() if v is None]
    if missing:
        raise BadRequestError(", ".join(missing))


def get_config(store: NessieStore, call: Call) -> tuple[int, Any]:
    return 200, {"defaultBranch": store.default_branch, "maxSupportedApiVersion": 2}


def list_references(store: NessieStore, call: Call) -> tuple[int, Any]:
    fetch_all = (call.arg("fetch") or "").upper() == "ALL"
    # Nessie lists only the references the caller may view (no 403).
    visible = [r for r in store.list_refs() if call.access.allowed(VIEW_REFERENCE, r.name)]
    return 200, {"references": [ref_v1(store, r, fetch_all) for r in visible], "hasMore": False}


def get_default_branch(store: NessieStore, call: Call) -> tuple[int, Any]:
    ref = store.get_ref(store.default_branch)
    call.access.view(ref.name).check_and_throw()
    return 200, ref_v1(store, ref)


def get_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    name = call.params["ref"]
    validate_ref_name(name)
    ref = store.get_ref(name)
    call.access.view(ref.name).check_and_throw()
    return 200, ref_v1(store, ref, (call.arg("fetch") or "").upper() == "ALL")


def create_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    body = call.json()
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        raise BadRequestError("Request body must be a Reference with a 'name'")
    ref_type = parse_ref_type(str(body.get("type") or ""))
    name, source = body["name"], RefSpec(call.arg("sourceRefName"), _hash(body))
    ref = store.create_ref(name, ref_type, source, authorize_create(call.access, name))
    return 200, ref_v1(store, ref)


def _hash(body: dict[str, Any]) -> str | None:
    hash_ = body.get("hash")
    return validate_hash(hash_) if hash_ is not None else None


def assign_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    ref_type = parse_ref_type(call.params["type"])
    body = _body(call)
    expected = _expected_hash(call)
    _not_null("assignReference", expectedHash=expected, assignTo=body)
    if not isinstance(body, dict):
        raise BadRequestError("Request body must be a Reference")
    name = body.get("name")
    source = name if isinstance(name, str) and body.get("type") != "DETACHED" else None
    store.assign_ref(
        RefSpec(call.params["name"], expected),
        ref_type,
        RefSpec(source, _hash(body)),
        authorize_assign(call.access),
    )
    return 204, None


def delete_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    ref_type = parse_ref_type(call.params["type"])
    expected = _expected_hash(call)
    _not_null("deleteReference", expectedHash=expected)
    store.delete_ref(
        RefSpec(call.params["name"], expected), ref_type, authorize_delete(call.access)
    )
    return 204, None


def get_entries(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.params["ref"], call.arg("hashOnRef"))
    call.access.read_entries(resolved.check_name).check_and_throw()
    tree = store.tree(resolved.hash)
    page, token = entries_page(
        readable_keys(call.access, resolved.check_name, tree, sorted(tree)),
        tree,
        call.arg("filter"),
        call.arg("pageToken"),
        call.int_arg("maxRecords"),
    )
    out: dict[str, Any] = {
        "entries": [{"type": tree[k]["type"], "name": {"elements": list(k)}} for k in page],
        "hasMore": token is not None,
    }
    if token:
        out["token"] = token
    return 200, out


def get_log(store: NessieStore, call: Call) -> tuple[int, Any]:
    youngest = call.arg("endHash") or call.arg("hashOnRef")
    resolved = _resolve(store, call.params["ref"], youngest)
    call.access.list_commit_log(resolved.check_name).check_and_throw()
    page = store.log(
        resolved.hash,
        limit_hash=call.arg("startHash") or None,
        max_records=call.int_arg("maxRecords"),
        page_token=call.arg("pageToken"),
    )
    fetch_all = (call.arg("fetch") or "").upper() == "ALL"
    entries = [
        log_entry(c, commit_meta_v1, fetch_all, call.access, resolved.check_name)
        for c in page.commits
    ]
    return 200, log_json(entries, page)


def get_content(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.arg("ref"), call.arg("hashOnRef"))
    return 200, content_at(store, resolved, call.params["key"], call.access)


def get_multiple_contents(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.arg("ref"), call.arg("hashOnRef"))
    body = call.json()
    if not isinstance(body, dict) or not isinstance(body.get("requestedKeys"), list):
        raise BadRequestError("Request body must be a GetMultipleContentsRequest")
    tree = store.tree(resolved.hash)
    keys = [parse_key(k) for k in body["requestedKeys"]]
    content_checks(call.access, resolved, tree, keys, for_write=False)
    return 200, {
        "contents": [{"key": {"elements": list(k)}, "content": tree[k]} for k in keys if k in tree]
    }


def commit(store: NessieStore, call: Call) -> tuple[int, Any]:
    branch = validate_ref_name(call.params["branch"])
    body = _body(call)
    expected = _expected_hash(call)
    _not_null("commitMultipleOperations", expectedHash=expected, operations=body)
    meta, ops = parse_operations(body)
    ref, _, _ = store.commit(RefSpec(branch, expected), meta, ops, validate_changes(call.access))
    return 200, ref_v1(store, ref)


def merge(store: NessieStore, call: Call) -> tuple[int, Any]:
    branch = validate_ref_name(call.params["branch"])
    body = _body(call)
    # Jackson builds the body before bean validation looks at the parameters.
    request = parse_merge(body, v1=True) if body is not None else None
    expected = _expected_hash(call)
    _not_null("mergeRefIntoBranch", expectedHash=expected, merge=request)
    assert request is not None  # refused by _not_null
    result = store.merge(
        RefSpec(branch, expected),
        request,
        authorize_merge(call.access),
        validate_changes(call.access),
    )
    return 200, {
        **merge_json(result),
        "expectedHash": result.expected_hash,
        "sourceCommits": [],
        "targetCommits": None,
        "details": [
            {
                "key": d["key"],
                "mergeBehavior": d["mergeBehavior"],
                "conflictType": "UNRESOLVABLE" if "conflict" in d else "NONE",
                "sourceCommits": [],
                "targetCommits": [],
            }
            for d in result.details
        ],
    }


def _diff_side(store: NessieStore, text: str) -> Resolved:
    name, _, hash_ = text.partition("*")
    return _resolve(store, name, hash_ or None)


def get_diff(store: NessieStore, call: Call) -> tuple[int, Any]:
    spec = call.params["spec"]
    if "..." not in spec:
        raise BadRequestError("Diff path must be '<from>...<to>'")
    from_text, _, to_text = spec.partition("...")
    from_ref, to_ref = _diff_side(store, from_text), _diff_side(store, to_text)
    call.access.view(from_ref.check_name).view(to_ref.check_name).check_and_throw()
    diffs = []
    changes = store.diff(from_ref.hash, to_ref.hash)
    for key, before, after in readable_diffs(call.access, from_ref, to_ref, changes):
        diffs.append({"key": {"elements": list(key)}, "from": before, "to": after})
    return 200, {"diffs": diffs, "hasMore": False}


ROUTES: list[Route] = [
    ("GET", ("config",), get_config),
    ("GET", ("trees",), list_references),
    ("GET", ("trees", "tree"), get_default_branch),
    ("POST", ("trees", "tree"), create_reference),
    ("GET", ("trees", "tree", "{ref}"), get_reference),
    ("GET", ("trees", "tree", "{ref}", "entries"), get_entries),
    ("GET", ("trees", "tree", "{ref}", "log"), get_log),
    ("POST", ("trees", "branch", "{branch}", "commit"), commit),
    ("POST", ("trees", "branch", "{branch}", "merge"), merge),
    ("PUT", ("trees", "{type}", "{name}"), assign_reference),
    ("DELETE", ("trees", "{type}", "{name}"), delete_reference),
    ("GET", ("contents", "{key}"), get_content),
    ("POST", ("contents",), get_multiple_contents),
    ("GET", ("diffs", "{spec}"), get_diff),
]
