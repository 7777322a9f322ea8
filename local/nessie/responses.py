"""What Nessie REST API v1 and v2 answer alike: commit properties, operations, a reference's
metadata, a content lookup, a page of entries, a page of the log, a merge's outcome, and the
access checks of each (Nessie's ContentApiImpl and TreeApiImpl, local/nessie/authz.py).

Each version's `routes_v*.py` parses its own parameters and wraps these in its own bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contracts.catalog_authorization import READ_CONTENT_KEY

from .authz import Checks
from .cel import compile_filter, entry_variables
from .exceptions import BadRequestError, ContentNotFoundError
from .models import BRANCH, NO_ANCESTOR, TAG, Commit, Key, Reference
from .refs import key_from_path_string, key_to_path_string
from .store import MAX_PAGE, LogPage, MergeResult, NessieStore, Resolved

MERGE_PARENT_PROPERTY = "_merge_parent"

CommitMeta = Callable[[Commit], dict[str, Any]]
"""Serialises a commit's metadata (API v1 and v2 differ there only)."""


def commit_properties(commit: Commit) -> dict[str, list[str]]:
    """Commit properties; merge commits also carry Nessie's legacy `_merge_parent`."""
    props = {k: list(v) for k, v in commit.meta.get("allProperties", {}).items()}
    if commit.merge_parent:
        props[MERGE_PARENT_PROPERTY] = [commit.merge_parent]
    return props


def operation_json(op: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": op["type"], "key": {"elements": op["key"]}}
    if op["type"] == "PUT":
        out["content"] = op["content"]
    return out


def parse_ref_type(value: str) -> str:
    """BRANCH or TAG, in any case."""
    upper = value.upper()
    if upper not in (BRANCH, TAG):
        raise BadRequestError(f"Invalid reference type '{value}'")
    return upper


def ref_metadata(store: NessieStore, ref: Reference, commit_meta: CommitMeta) -> dict[str, Any]:
    """A reference's `metadata` (fetch=ALL); `commit_meta` serialises its head commit."""
    head = store.commit_of(ref.hash)
    meta: dict[str, Any] = {"numTotalCommits": head.seq}
    if ref.hash != NO_ANCESTOR:
        meta["commitMetaOfHEAD"] = commit_meta(head)
    if ref.type == BRANCH:
        default_head = store.get_ref(store.default_branch).hash
        base = store.merge_base(default_head, ref.hash)
        meta["commonAncestorHash"] = base
        meta["numCommitsAhead"] = len(store.ancestors(ref.hash) - store.ancestors(base))
        meta["numCommitsBehind"] = len(store.ancestors(default_head) - store.ancestors(base))
    return meta


def content_at(
    store: NessieStore,
    resolved: Resolved,
    key_path: str,
    access: Checks,
    for_write: bool = False,
) -> Any:
    """The content stored under `key_path` (a path-encoded key) at `resolved`, after
    ContentApiImpl.getContent's checks (a missing key is checked, then not found)."""
    key = tuple(key_from_path_string(key_path))
    content = store.tree(resolved.hash).get(key)
    ref = resolved.check_name
    access.view(ref)
    if for_write:
        access.commit(ref)
    if content is not None:
        access.read_entity(ref, key, content.get("type"))
        if for_write:
            access.entity_change(ref, "UPDATE", key, content.get("type"))
        access.check_and_throw()
        return content
    if for_write:
        access.read_entity(ref, key, None).entity_change(ref, "CREATE", key, None)
    access.check_and_throw()
    raise ContentNotFoundError.at(list(key), resolved.name or resolved.hash)


def content_checks(
    access: Checks,
    resolved: Resolved,
    tree: dict[Key, Any],
    keys: list[Key],
    for_write: bool,
) -> None:
    """ContentApiImpl.getMultipleContents' checks for `keys` at `resolved`; 403 if refused."""
    ref = resolved.check_name
    access.view(ref)
    if for_write:
        access.commit(ref)
    for key in keys:
        content = tree.get(key)
        if content is not None:
            access.read_entity(ref, key, content.get("type"))
            if for_write:
                access.entity_change(ref, "UPDATE", key, content.get("type"))
        elif for_write:
            access.read_entity(ref, key, None).entity_change(ref, "CREATE", key, None)
    access.check_and_throw()


def readable_keys(access: Checks, ref: str, tree: dict[Key, Any], keys: list[Key]) -> list[Key]:
    """The `keys` whose READ_CONTENT_KEY passes: Nessie leaves the others out of a listing."""
    return [k for k in keys if access.allowed(READ_CONTENT_KEY, ref, k, tree[k].get("type"))]


def readable_diffs(
    access: Checks, from_ref: Resolved, to_ref: Resolved, diffs: list[tuple[Key, Any, Any]]
) -> list[tuple[Key, Any, Any]]:
    """The diffs whose keys may be read on both sides (DiffApiImpl): others are left out."""
    out = []
    for key, before, after in diffs:
        sides = [(from_ref, before), (to_ref, after)]
        if all(
            value is None
            or access.allowed(READ_CONTENT_KEY, ref.check_name, key, value.get("type"))
            for ref, value in sides
        ):
            out.append((key, before, after))
    return out


def validate_changes(access: Checks) -> Callable[[str, list[tuple[str, Key, str]]], None]:
    """Nessie's commit validator: COMMIT_CHANGE_AGAINST_REFERENCE on the branch and
    CREATE_ENTITY / UPDATE_ENTITY / DELETE_ENTITY for each key changed; 403 if refused."""

    def validate(branch: str, changes: list[tuple[str, Key, str]]) -> None:
        access.commit(branch)
        for change, key, content_type in changes:
            access.entity_change(branch, change, key, content_type)
        access.check_and_throw()

    return validate


def authorize_create(access: Checks, name: str) -> Callable[[str], None]:
    """A create's checks: create `name`, view its source; 403 if refused."""

    def authorize(source: str) -> None:
        access.create_reference(name).view(source).check_and_throw()

    return authorize


def authorize_assign(access: Checks) -> Callable[[str, str], None]:
    """An assign's checks: view the new target, assign the reference; 403 if refused."""

    def authorize(ref: str, source: str) -> None:
        access.view(source).assign(ref).check_and_throw()

    return authorize


def authorize_delete(access: Checks) -> Callable[[str], None]:
    """A delete's check: delete (and view) the reference; 403 if refused."""

    def authorize(ref: str) -> None:
        access.delete_reference(ref).check_and_throw()

    return authorize


def authorize_merge(access: Checks) -> Callable[[str, str], None]:
    """A merge's first checks: view the source, commit to the target; 403 if refused."""

    def authorize(source: str, target: str) -> None:
        access.view(source).commit(target).check_and_throw()

    return authorize


def entries_page(
    keys: list[tuple[str, ...]],
    tree: dict[tuple[str, ...], Any],
    cel_filter: str | None,
    page_token: str | None,
    max_records: int | None,
) -> tuple[list[tuple[str, ...]], str | None]:
    """The page of `keys` (sorted) matching the CEL `filter` after `page_token`, at most
    `max_records` (capped at MAX_PAGE), and the token of the next page (None: the last)."""
    if cel_filter:
        predicate = compile_filter(cel_filter)
        keys = [k for k in keys if predicate(entry_variables(k, tree[k]))]
    if page_token:
        after = tuple(key_from_path_string(page_token))
        keys = [k for k in keys if k > after]
    size = min(max_records or MAX_PAGE, MAX_PAGE)
    page = keys[:size]
    return page, (key_to_path_string(page[-1]) if len(keys) > size else None)


def log_entry(
    commit: Commit,
    commit_meta: CommitMeta,
    fetch_all: bool,
    access: Checks | None = None,
    ref: str = "",
) -> dict[str, Any]:
    """One `logEntries` item; its operations only with fetch=ALL, and only those whose key
    the caller may read on `ref` (READ_CONTENT_KEY, as TreeApiImpl.getCommitLog)."""
    entry: dict[str, Any] = {"commitMeta": commit_meta(commit), "parentCommitHash": commit.parent}
    if fetch_all:
        entry["operations"] = [
            operation_json(op)
            for op in commit.operations
            if access is None or access.allowed(READ_CONTENT_KEY, ref, tuple(op["key"]))
        ]
    return entry


def log_json(entries: list[dict[str, Any]], page: LogPage) -> dict[str, Any]:
    """A page of the log: its entries and, when there is a next page, its token."""
    out: dict[str, Any] = {"logEntries": entries, "hasMore": page.token is not None}
    if page.token:
        out["token"] = page.token
    return out


def merge_json(result: MergeResult) -> dict[str, Any]:
    """A merge's outcome as both versions' `MergeResponse` begins; each adds its own
    `expectedHash` and `details`."""
    return {
        "wasApplied": result.was_applied,
        "wasSuccessful": result.was_successful,
        "resultantTargetHash": result.resultant_target_hash,
        "commonAncestor": result.common_ancestor,
        "targetBranch": result.target_branch,
        "effectiveTargetHash": result.effective_target_hash,
    }
