"""What each catalog UI page shows, gathered from the store and the tables' Iceberg metadata.

Plain data, no HTML. Reference names, hashes and key elements are validated with the
API's own rules before they reach the store; a missing reference, commit or key raises the
API's `NessieApiError` subclasses, which the routes turn into error pages with the same status.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contracts.properties import INGEST_ID_PROPERTY
from lakeview import iceberg
from lakeview.exceptions import TableReadError

from ..exceptions import ContentNotFoundError, NotFoundError, ReferenceNotFoundError
from ..models import Commit, Key
from ..refs import RefSpec, validate_hash, validate_key, validate_ref_name
from ..store import NessieStore

if TYPE_CHECKING:
    import pyarrow as pa

LOG = logging.getLogger(__name__)
LOG_PAGE = 50
FIRST_ROWS = 20
EXTRA_ROWS = 50
TABLE_TYPES = ("ICEBERG_TABLE", "DELTA_LAKE_TABLE", "ICEBERG_VIEW")


@dataclass(frozen=True)
class RefView:
    """A reference and its head commit, or (pinned) one commit of its history."""

    name: str
    type: str
    hash: str
    commit_time: str | None = None
    message: str = ""
    pinned: bool = False

    @property
    def spec(self) -> str:
        """How pages name it in links: `name`, or `name@hash` when pinned to a commit."""
        return f"{self.name}@{self.hash}" if self.pinned else self.name


@dataclass(frozen=True)
class Entry:
    """One child of a namespace path: a namespace (folder) or a content object."""

    key: Key
    type: str  # NAMESPACE (also for implicit parents), ICEBERG_TABLE, ...

    @property
    def name(self) -> str:
        return self.key[-1]

    @property
    def is_folder(self) -> bool:
        return self.type == "NAMESPACE"


@dataclass(frozen=True)
class TreePage:
    ref: RefView
    refs: list[RefView]
    path: Key
    entries: list[Entry]
    default_branch: str


@dataclass(frozen=True)
class TableData:
    """An Iceberg table read through its metadata: description and some rows."""

    info: iceberg.TableInfo | None = None
    rows: pa.Table | None = None
    error: str | None = None


@dataclass(frozen=True)
class ContentPage:
    ref: RefView
    key: Key
    content: dict[str, Any]
    table: TableData | None
    default_branch: str
    versus_default: TableDiff | None = None  # on another ref: how it differs from main


@dataclass(frozen=True)
class CommitView:
    hash: str
    parents: list[str]
    message: str
    authors: list[str]
    committer: str
    commit_time: str | None
    author_time: str | None
    properties: dict[str, list[str]]
    operations: list[tuple[str, Key, str | None]]  # (PUT|DELETE, key, content type)


@dataclass(frozen=True)
class LogPage:
    ref: RefView
    commits: list[CommitView]
    next_token: str | None


@dataclass(frozen=True)
class CommitPage:
    ref: RefView
    commit: CommitView


@dataclass(frozen=True)
class TableDiff:
    """One table that differs between the base and the compared reference."""

    key: Key
    change: str  # added | changed | removed
    base_rows: int | None = None
    ref_rows: int | None = None
    base_ingest: str | None = None
    ref_ingest: str | None = None
    extra_rows: pa.Table | None = None  # rows in the ref's data files that the base lacks
    extra_count: int | None = None
    missing_count: int | None = None  # rows in the base's data files that the ref lacks
    error: str | None = None


@dataclass(frozen=True)
class DiffPage:
    ref: RefView
    base: RefView
    tables: list[TableDiff]
    other: list[tuple[Key, str, str]] = field(default_factory=list)  # key, change, type


def _ref_view(
    store: NessieStore, name: str, hash_: str, type_: str, *, pinned: bool = False
) -> RefView:
    commit = store.commit_of(hash_)
    return RefView(
        name=name,
        type=type_,
        hash=hash_,
        commit_time=commit.meta.get("commitTime"),
        message=str(commit.meta.get("message", "")),
        pinned=pinned,
    )


def reference(store: NessieStore, spec: str) -> RefView:
    """A branch or tag by name, or `name@hash`: the reference pinned to a commit of its
    history (merge parents included), as commit pages link the content a commit put."""
    name, at, hash_ = spec.partition("@")
    ref = store.get_ref(validate_ref_name(name))
    if not at:
        return _ref_view(store, ref.name, ref.hash, ref.type)
    return _ref_view(
        store, ref.name, _commit_on(store, ref.name, ref.hash, hash_), ref.type, pinned=True
    )


def _commit_on(store: NessieStore, name: str, head: str, hash_: str) -> str:
    """The full hash of a commit reachable from the reference's head (abbreviations
    accepted); REFERENCE_NOT_FOUND for any other commit."""
    full = store.expand_hash(validate_hash(hash_))
    if not store.reaches(head, full):
        raise ReferenceNotFoundError.hash_not_on_ref(full, name)
    return full


def tree_page(store: NessieStore, ref_name: str, path: list[str]) -> TreePage:
    """The namespaces and content objects directly under `path` on the reference."""
    ref = reference(store, ref_name)
    prefix = tuple(validate_key(path)) if path else ()
    tree = store.tree(ref.hash)
    children: dict[str, str] = {}
    for key, content in tree.items():
        if len(key) <= len(prefix) or key[: len(prefix)] != prefix:
            continue
        name = key[len(prefix)]
        if len(key) > len(prefix) + 1:
            children[name] = "NAMESPACE"  # a parent of something deeper
        else:
            children.setdefault(name, str(content.get("type")))
    if prefix and not children and tree.get(prefix, {}).get("type") != "NAMESPACE":
        raise NotFoundError(f"Namespace '{'.'.join(prefix)}' not found on '{ref.name}'")
    entries = sorted(
        (Entry((*prefix, name), kind) for name, kind in children.items()),
        key=lambda e: (not e.is_folder, e.name),
    )
    refs = [
        _ref_view(store, r.name, r.hash, r.type)
        if r.name == ref.name
        else RefView(r.name, r.type, r.hash)
        for r in store.list_refs()
    ]
    return TreePage(ref, refs, prefix, entries, store.default_branch)


def read_table(
    metadata_location: str, properties: dict[str, str], *, rows: int = FIRST_ROWS
) -> TableData:
    """Describe an Iceberg table and read its first rows; a read error is kept, not raised."""
    try:
        table = iceberg.open_table(metadata_location, properties)
        return TableData(info=iceberg.describe(table), rows=iceberg.read_rows(table, limit=rows))
    except TableReadError as exc:
        return TableData(error=str(exc))


def content_page(
    store: NessieStore, ref_name: str, elements: list[str], properties: dict[str, str]
) -> ContentPage:
    """One content object on the reference; Iceberg tables with schema, snapshot and rows."""
    ref = reference(store, ref_name)
    key = tuple(validate_key(elements))
    content = store.tree(ref.hash).get(key)
    if content is None:
        raise ContentNotFoundError.at(list(key), ref.name)
    table = versus = None
    location = content.get("metadataLocation")
    if content.get("type") == "ICEBERG_TABLE" and isinstance(location, str):
        table = read_table(location, properties)
        if ref.name != store.default_branch:
            base = store.tree(store.get_ref(store.default_branch).hash).get(key)
            if base != content:
                versus = _table_diff(
                    key, "added" if base is None else "changed", base, content, properties
                )
    return ContentPage(ref, key, dict(content), table, store.default_branch, versus)


def _commit_view(commit: Commit) -> CommitView:
    meta = commit.meta
    operations = [
        (
            str(op.get("type")),
            tuple(op.get("key", [])),
            (op.get("content") or {}).get("type") if op.get("type") == "PUT" else None,
        )
        for op in commit.operations
    ]
    return CommitView(
        hash=commit.hash,
        parents=commit.parents,
        message=str(meta.get("message", "")),
        authors=[str(a) for a in meta.get("authors", [])],
        committer=str(meta.get("committer", "")),
        commit_time=meta.get("commitTime"),
        author_time=meta.get("authorTime"),
        properties={
            str(k): [str(v) for v in vs] for k, vs in meta.get("allProperties", {}).items()
        },
        operations=operations,
    )


def log_page(store: NessieStore, ref_name: str, page_token: str | None = None) -> LogPage:
    """The reference's first-parent history, newest first, LOG_PAGE commits at a time."""
    ref = reference(store, ref_name)
    token = validate_hash(page_token, "page token") if page_token else None
    if token is not None:
        store.resolve(RefSpec(ref.name, token))  # the page must be on this reference
    page = store.log(ref.hash, max_records=LOG_PAGE, page_token=token)
    return LogPage(ref, [_commit_view(c) for c in page.commits], page.token)


def commit_page(store: NessieStore, ref_name: str, hash_: str) -> CommitPage:
    """One commit of the reference's history, merged commits included (a merge commit's
    second parent is on the merged branch); abbreviated hashes accepted."""
    ref = reference(store, ref_name)
    return CommitPage(
        ref, _commit_view(store.commit_of(_commit_on(store, ref.name, ref.hash, hash_)))
    )


def diff_page(
    store: NessieStore,
    ref_name: str,
    properties: dict[str, str],
    *,
    base_name: str | None = None,
) -> DiffPage:
    """What the reference changed since it forked from the base (default: the default
    branch): the diff from their merge base, as lakeFS compares, so what the base gained
    since is not shown as removed from the reference."""
    ref = reference(store, ref_name)
    head = reference(store, base_name or store.default_branch)
    fork = store.merge_base(head.hash, ref.hash)
    base = head if fork == head.hash else _ref_view(store, head.name, fork, head.type, pinned=True)
    base_tree, ref_tree = store.tree(base.hash), store.tree(ref.hash)
    tables: list[TableDiff] = []
    other: list[tuple[Key, str, str]] = []
    for key, before, after in store.diff(base.hash, ref.hash):
        change = "added" if before is None else "removed" if after is None else "changed"
        kind = str((after or before or {}).get("type"))
        if kind != "ICEBERG_TABLE":
            other.append((key, change, kind))
            continue
        tables.append(_table_diff(key, change, base_tree.get(key), ref_tree.get(key), properties))
    return DiffPage(ref, base, tables, other)


def _table_diff(
    key: Key,
    change: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    properties: dict[str, str],
) -> TableDiff:
    try:
        base_table = _open(before, properties)
        ref_table = _open(after, properties)
        base_info = iceberg.describe(base_table) if base_table is not None else None
        ref_info = iceberg.describe(ref_table) if ref_table is not None else None
        base_files = iceberg.data_files(base_table) if base_table is not None else set()
        extra, extra_count = (None, None)
        missing = None
        if ref_table is not None:
            extra, extra_count = iceberg.rows_outside(ref_table, base_files, limit=EXTRA_ROWS)
            if base_table is not None:
                missing = iceberg.count_outside(base_table, iceberg.data_files(ref_table))
    except TableReadError as exc:
        return TableDiff(key, change, error=str(exc))
    return TableDiff(
        key,
        change,
        base_rows=base_info.row_count if base_info else None,
        ref_rows=ref_info.row_count if ref_info else None,
        base_ingest=_ingest_of(base_info),
        ref_ingest=_ingest_of(ref_info),
        extra_rows=extra,
        extra_count=extra_count,
        missing_count=missing,
    )


def _open(content: dict[str, Any] | None, properties: dict[str, str]) -> Any:
    location = (content or {}).get("metadataLocation")
    return iceberg.open_table(location, properties) if isinstance(location, str) else None


def _ingest_of(info: iceberg.TableInfo | None) -> str | None:
    if info is None or info.current is None:
        return None
    return info.current.summary.get(INGEST_ID_PROPERTY)
