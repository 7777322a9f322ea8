"""What Nessie REST API v1 and v2 answer alike: commit properties, operations, a reference's
metadata, a content lookup, a page of entries, a page of the log.

Each version's `routes_v*.py` parses its own parameters and wraps these in its own bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cel import compile_filter, entry_variables
from .exceptions import BadRequestError, ContentNotFoundError
from .models import BRANCH, NO_ANCESTOR, TAG, Commit, Reference
from .refs import key_from_path_string, key_to_path_string
from .store import MAX_PAGE, LogPage, NessieStore, Resolved

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


def content_at(store: NessieStore, resolved: Resolved, key_path: str) -> Any:
    """The content stored under `key_path` (a path-encoded key) at `resolved`."""
    key = tuple(key_from_path_string(key_path))
    content = store.tree(resolved.hash).get(key)
    if content is None:
        raise ContentNotFoundError.at(list(key), resolved.name or resolved.hash)
    return content


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


def log_entry(commit: Commit, commit_meta: CommitMeta, fetch_all: bool) -> dict[str, Any]:
    """One `logEntries` item; its operations only with fetch=ALL."""
    entry: dict[str, Any] = {"commitMeta": commit_meta(commit), "parentCommitHash": commit.parent}
    if fetch_all:
        entry["operations"] = [operation_json(op) for op in commit.operations]
    return entry


def log_json(entries: list[dict[str, Any]], page: LogPage) -> dict[str, Any]:
    """A page of the log: its entries and, when there is a next page, its token."""
    out: dict[str, Any] = {"logEntries": entries, "hasMore": page.token is not None}
    if page.token:
        out["token"] = page.token
    return out
