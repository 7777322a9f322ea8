"""Nessie REST API v2 (the subset Iceberg's NessieCatalog and the Nessie Java client use).

Parse and serialise only: every rule lives in `store.py`. Paths, parameters and bodies follow
Nessie's OpenAPI spec (`META-INF/openapi/openapi.yaml` in the Iceberg runtime jar). Each
handler asks for the access checks Nessie's service implementation asks for (`call.access`,
local/nessie/authz.py; shared with API v1 in `responses.py`).
"""

from __future__ import annotations

from typing import Any

from contracts.catalog_authorization import VIEW_REFERENCE

from .cel import (
    COMMIT_LOG_DECLARATIONS,
    REFERENCES_DECLARATIONS,
    commit_variables,
    compile_filter,
)
from .exceptions import BadRequestError
from .http import Call, Route
from .models import (
    NO_ANCESTOR,
    SPEC_VERSION,
    Commit,
    Reference,
    parse_key,
    parse_merge,
    parse_operations,
)
from .refs import (
    RefSpec,
    key_from_path_string,
    key_to_path_string,
    key_to_string,
    parse_hash_spec,
    parse_ref_spec,
    validate_ref_name,
)
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
from .store import MAX_PAGE, NessieStore, Resolved

# ------------------------------------------------------------------ serialisers


def ref_json(ref: Reference | Resolved) -> dict[str, Any]:
    if isinstance(ref, Resolved):
        return ref.as_reference()
    return {"type": ref.type, "name": ref.name, "hash": ref.hash}


def commit_meta_json(commit: Commit) -> dict[str, Any]:
    meta = commit.meta
    return {
        "hash": commit.hash,
        "committer": meta.get("committer", ""),
        "authors": list(meta.get("authors", [])),
        "allSignedOffBy": list(meta.get("allSignedOffBy", [])),
        "message": meta.get("message", ""),
        "commitTime": meta.get("commitTime"),
        "authorTime": meta.get("authorTime"),
        "allProperties": commit_properties(commit),
        "parentCommitHashes": commit.parents,
    }


def reference_with_meta(store: NessieStore, ref: Reference, fetch_all: bool) -> dict[str, Any]:
    out = ref_json(ref)
    if fetch_all:
        out["metadata"] = ref_metadata(store, ref, commit_meta_json)
    return out


def _fetch_all(call: Call) -> bool:
    fetch = (call.arg("fetch") or "MINIMAL").upper()
    if fetch not in ("MINIMAL", "ALL"):
        raise BadRequestError(f"Invalid fetch option '{fetch}'")
    return fetch == "ALL"


def _resolve(store: NessieStore, text: str, what: str = "Expected hash") -> Resolved:
    return store.resolve(parse_ref_spec(text), what)


def _body_ref(body: dict[str, Any]) -> RefSpec:
    """A `Reference` body as the source of a create or assign: its hash may be relative."""
    name = body.get("name")
    if body.get("type") == "DETACHED" or not isinstance(name, str):
        name = None
    return parse_hash_spec(body.get("hash"), name)


def _ref_type(call: Call) -> str | None:
    value = call.arg("type")
    return None if value is None else parse_ref_type(value)


# ------------------------------------------------------------------ handlers


def get_config(store: NessieStore, call: Call) -> tuple[int, Any]:
    created, oldest = store.config_times()
    return 200, {
        "defaultBranch": store.default_branch,
        "minSupportedApiVersion": 1,
        "maxSupportedApiVersion": 2,
        "actualApiVersion": 2,
        "specVersion": SPEC_VERSION,
        "noAncestorHash": NO_ANCESTOR,
        "repositoryCreationTimestamp": created,
        "oldestPossibleCommitTimestamp": oldest,
    }


def list_references(store: NessieStore, call: Call) -> tuple[int, Any]:
    fetch_all = _fetch_all(call)
    # Nessie lists only the references the caller may view (no 403).
    visible = [r for r in store.list_refs() if call.access.allowed(VIEW_REFERENCE, r.name)]
    refs = [reference_with_meta(store, r, fetch_all) for r in visible]
    flt = call.arg("filter")
    if flt:
        predicate = compile_filter(flt, REFERENCES_DECLARATIONS)
        refs = [
            r
            for r in refs
            if predicate(
                {
                    "ref": r,
                    "refType": r["type"],
                    "refMeta": r.get("metadata", {}),
                    "metadata": r.get("metadata", {}),
                    "commit": commit_variables(r.get("metadata", {}).get("commitMetaOfHEAD", {})),
                }
            )
        ]
    return 200, {"references": refs, "hasMore": False}


def get_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    spec = parse_ref_spec(call.params["ref"])
    if spec.name is None or spec.hash is not None or spec.relative:
        raise BadRequestError(f"Only a reference name is allowed here, got '{call.params['ref']}'")
    name = store.default_branch if spec.name == "-" else spec.name
    ref = store.get_ref(name)
    call.access.view(ref.name).check_and_throw()
    return 200, {"reference": reference_with_meta(store, ref, _fetch_all(call))}


def create_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    name = call.arg("name")
    ref_type = _ref_type(call)
    if not name or ref_type is None:
        raise BadRequestError("Query parameters 'name' and 'type' are required")
    validate_ref_name(name)
    # The body is optional in Nessie's v2 API; without it the source is the default branch.
    body = call.json() if call.raw_body else None
    if body is None:
        body = {"name": store.default_branch}
    if not isinstance(body, dict):
        raise BadRequestError("Request body must be a Reference object")
    if body.get("name") is not None and not isinstance(body.get("name"), str):
        raise BadRequestError("Reference name must be a string")
    ref = store.create_ref(name, ref_type, _body_ref(body), authorize_create(call.access, name))
    return 200, {"reference": ref_json(ref)}


def assign_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    target = parse_ref_spec(call.params["ref"])
    body = call.json()
    if not isinstance(body, dict):
        raise BadRequestError("Request body must be a Reference object")
    ref = store.assign_ref(target, _ref_type(call), _body_ref(body), authorize_assign(call.access))
    return 200, {"reference": ref_json(ref)}


def delete_reference(store: NessieStore, call: Call) -> tuple[int, Any]:
    spec = parse_ref_spec(call.params["ref"])
    ref = store.delete_ref(spec, _ref_type(call), authorize_delete(call.access))
    return 200, {"reference": ref_json(ref)}


def get_content(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.params["ref"])
    content = content_at(store, resolved, call.params["key"], call.access, _for_write(call))
    return 200, {"content": content, "effectiveReference": ref_json(resolved)}


def _for_write(call: Call) -> bool:
    """`for-write=true`: the caller means to commit what it reads (checked as such)."""
    return call.bool_arg("for-write")


def _contents(
    store: NessieStore, call: Call, resolved: Resolved, keys: list[tuple[str, ...]]
) -> dict[str, Any]:
    tree = store.tree(resolved.hash)
    content_checks(call.access, resolved, tree, keys, _for_write(call))
    found = [{"key": {"elements": list(k)}, "content": tree[k]} for k in keys if k in tree]
    return {"contents": found, "effectiveReference": ref_json(resolved)}


def get_several_contents(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.params["ref"])
    keys = [tuple(key_from_path_string(k)) for k in call.args("key")]
    return 200, _contents(store, call, resolved, keys)


def get_multiple_contents(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.params["ref"])
    body = call.json()
    if not isinstance(body, dict) or not isinstance(body.get("requestedKeys"), list):
        raise BadRequestError("Request body must be a GetMultipleContentsRequest")
    if len(body["requestedKeys"]) > 10_000:
        raise BadRequestError("Too many requested keys")
    keys = [parse_key(k) for k in body["requestedKeys"]]
    return 200, _contents(store, call, resolved, keys)


def get_entries(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.params["ref"])
    call.access.read_entries(resolved.check_name).check_and_throw()
    tree = store.tree(resolved.hash)
    keys = readable_keys(call.access, resolved.check_name, tree, sorted(tree))
    wanted = {tuple(key_from_path_string(k)) for k in call.args("key")}
    min_key, max_key, prefix = (call.arg("min-key"), call.arg("max-key"), call.arg("prefix-key"))
    if prefix and (min_key or max_key):
        raise BadRequestError("Combining prefixKey with either minKey or maxKey is not supported.")
    if wanted:
        keys = [k for k in keys if k in wanted]
    if min_key:
        lo = tuple(key_from_path_string(min_key))
        keys = [k for k in keys if k >= lo]
    if max_key:
        hi = tuple(key_from_path_string(max_key))
        keys = [k for k in keys if k <= hi]
    if prefix:
        pre = tuple(key_from_path_string(prefix))
        keys = [k for k in keys if k[: len(pre)] == pre]
    page, token = entries_page(
        keys, tree, call.arg("filter"), call.arg("page-token"), call.int_arg("max-records")
    )
    with_content = call.bool_arg("content")
    entries = []
    for k in page:
        entry: dict[str, Any] = {
            "type": tree[k]["type"],
            "name": {"elements": list(k)},
            "contentId": tree[k].get("id"),
        }
        if with_content:
            entry["content"] = tree[k]
        entries.append(entry)
    out: dict[str, Any] = {
        "entries": entries,
        "hasMore": token is not None,
        "effectiveReference": ref_json(resolved),
    }
    if token:
        out["token"] = token
    return 200, out


def commit(store: NessieStore, call: Call) -> tuple[int, Any]:
    target = parse_ref_spec(call.params["branch"])
    meta, ops = parse_operations(call.json())
    ref, added, _ = store.commit(target, meta, ops, validate_changes(call.access))
    return 200, {
        "targetBranch": ref_json(ref),
        "addedContents": [{"key": {"elements": list(k)}, "contentId": cid} for k, cid in added],
    }


def merge(store: NessieStore, call: Call) -> tuple[int, Any]:
    target = parse_ref_spec(call.params["branch"])
    request = parse_merge(call.json())
    result = store.merge(
        target, request, authorize_merge(call.access), validate_changes(call.access)
    )
    body: dict[str, Any] = {**merge_json(result), "details": result.details}
    if result.expected_hash:
        body["expectedHash"] = result.expected_hash
    return 200, body


def get_diff(store: NessieStore, call: Call) -> tuple[int, Any]:
    from_ref = _resolve(store, call.params["from"], '"From" hash')
    to_ref = _resolve(store, call.params["to"], '"To" hash')
    call.access.view(from_ref.check_name).view(to_ref.check_name).check_and_throw()
    diffs = readable_diffs(call.access, from_ref, to_ref, store.diff(from_ref.hash, to_ref.hash))
    wanted = {tuple(key_from_path_string(k)) for k in call.args("key")}
    prefix = call.arg("prefix-key")
    if wanted:
        diffs = [d for d in diffs if d[0] in wanted]
    if prefix:
        pre = tuple(key_from_path_string(prefix))
        diffs = [d for d in diffs if d[0][: len(pre)] == pre]
    token = call.arg("page-token")
    if token:
        after = tuple(key_from_path_string(token))
        diffs = [d for d in diffs if d[0] > after]
    size = min(call.int_arg("max-records") or MAX_PAGE, MAX_PAGE)
    page, more = diffs[:size], len(diffs) > size
    entries = []
    for key, before, after in page:
        entry: dict[str, Any] = {"key": {"elements": list(key)}}
        if before is not None:
            entry["from"] = before
        if after is not None:
            entry["to"] = after
        entries.append(entry)
    out: dict[str, Any] = {
        "diffs": entries,
        "hasMore": more,
        "effectiveFromReference": ref_json(from_ref),
        "effectiveToReference": ref_json(to_ref),
    }
    if more:
        out["token"] = key_to_path_string(page[-1][0])
    return 200, out


def get_log(store: NessieStore, call: Call) -> tuple[int, Any]:
    resolved = _resolve(store, call.params["ref"], "Youngest hash")
    call.access.list_commit_log(resolved.check_name).check_and_throw()
    limit = call.arg("limit-hash")
    page = store.log(
        resolved.hash,
        limit_hash=limit or None,
        max_records=call.int_arg("max-records"),
        page_token=call.arg("page-token"),
    )
    fetch_all = _fetch_all(call)
    entries = []
    flt = call.arg("filter")
    predicate = compile_filter(flt, COMMIT_LOG_DECLARATIONS) if flt else None
    for c in page.commits:
        entry = log_entry(c, commit_meta_json, fetch_all, call.access, resolved.check_name)
        if predicate is not None and not predicate(
            {
                "commit": commit_variables(entry["commitMeta"]),
                "operations": [
                    {
                        "type": op["type"],
                        "key": key_to_string(op["key"]),
                        "keyElements": op["key"],
                        "name": op["key"][-1],
                        "namespace": key_to_string(op["key"][:-1]),
                        "namespaceElements": op["key"][:-1],
                    }
                    for op in c.operations
                ],
            }
        ):
            continue
        entries.append(entry)
    return 200, log_json(entries, page)


ROUTES: list[Route] = [
    ("GET", ("config",), get_config),
    ("GET", ("trees",), list_references),
    ("POST", ("trees",), create_reference),
    ("GET", ("trees", "{ref}"), get_reference),
    ("PUT", ("trees", "{ref}"), assign_reference),
    ("DELETE", ("trees", "{ref}"), delete_reference),
    ("GET", ("trees", "{ref}", "contents"), get_several_contents),
    ("POST", ("trees", "{ref}", "contents"), get_multiple_contents),
    ("GET", ("trees", "{ref}", "contents", "{key}"), get_content),
    ("GET", ("trees", "{ref}", "entries"), get_entries),
    ("GET", ("trees", "{ref}", "history"), get_log),
    ("POST", ("trees", "{branch}", "history", "commit"), commit),
    ("POST", ("trees", "{branch}", "history", "merge"), merge),
    ("GET", ("trees", "{from}", "diff", "{to}"), get_diff),
]
