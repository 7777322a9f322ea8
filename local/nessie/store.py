"""State and rules of the catalog: the commit DAG, references, contents, conflict detection.

Persisted in SQLite (WAL). Commits are immutable and content-addressed (sha256 over parents,
metadata and operations), so they are cached in memory once read; references are always read
from the database and moved with a compare-and-swap inside `BEGIN IMMEDIATE`, which keeps
concurrent writers (threads or processes) from losing updates.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from .exceptions import (
    BadRequestError,
    ReferenceAlreadyExistsError,
    ReferenceConflictError,
    ReferenceNotFoundError,
    conflict,
)
from .models import (
    BRANCH,
    DEFAULT_BRANCH,
    DETACHED,
    NO_ANCESTOR,
    TAG,
    Commit,
    Key,
    MergeRequest,
    Operation,
    Reference,
    Tree,
    build_commit_meta,
    new_content_id,
    now_iso,
)
from .refs import (
    RefSpec,
    key_to_string,
    parse_hash_spec,
    require_unambiguous,
    validate_hash,
    validate_ref_name,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS repo (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refs (name TEXT PRIMARY KEY, type TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    hash TEXT PRIMARY KEY, parent TEXT NOT NULL, merge_parent TEXT, seq INTEGER NOT NULL,
    meta TEXT NOT NULL, ops TEXT NOT NULL, tree TEXT NOT NULL,
    dist INTEGER NOT NULL DEFAULT 0);
"""
_TREE_CACHE_SIZE = 512
# A commit stores its full key -> content map only every CHECKPOINT_EVERY commits along the
# first-parent chain (tree '' otherwise); other trees are rebuilt from the nearest stored one
# by replaying operations, so a commit costs O(changed keys), not O(all keys).
CHECKPOINT_EVERY = 32
MAX_PAGE = 250


@dataclass(frozen=True)
class Resolved:
    """A reference spec resolved to a commit: `name`/`type` are None for detached hashes."""

    name: str | None
    type: str
    hash: str

    @property
    def check_name(self) -> str:
        """The reference name Nessie's access checks see (DETACHED for a bare hash)."""
        return DETACHED if self.name is None else self.name

    def as_reference(self) -> dict[str, Any]:
        if self.name is None:
            return {"type": DETACHED, "name": DETACHED, "hash": self.hash}
        return {"type": self.type, "name": self.name, "hash": self.hash}


@dataclass
class MergeResult:
    """Outcome of a merge, applied or not (dry run, conflict returned as a result)."""

    was_applied: bool
    was_successful: bool
    resultant_target_hash: str
    common_ancestor: str
    target_branch: str
    effective_target_hash: str
    expected_hash: str | None
    details: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class LogPage:
    commits: list[Commit]
    token: str | None


# Access checks run where Nessie runs them, inside each operation once what they name is
# resolved (local/nessie/authz.py); each raises ForbiddenError to refuse.
Authorize = Callable[..., None]
# (branch, [(CREATE | UPDATE | DELETE, key, content type)]): Nessie's commit validator.
ValidateChanges = Callable[[str, list[tuple[str, Key, str]]], None]


class NessieStore:
    """The repository: one SQLite file, one default branch."""

    def __init__(self, db_path: str, default_branch: str = DEFAULT_BRANCH) -> None:
        self.db_path = db_path
        self.default_branch = default_branch
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._commits: dict[str, Commit] = {}
        self._trees: OrderedDict[str, Tree] = OrderedDict()
        self._cache_lock = threading.Lock()
        conn = self._conn()
        conn.executescript(_SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(commits)")}
        if "dist" not in columns:  # files written before checkpoints: every tree is stored
            conn.execute("ALTER TABLE commits ADD COLUMN dist INTEGER NOT NULL DEFAULT 0")
        with self._write() as c:
            if c.execute("SELECT 1 FROM repo WHERE key='created'").fetchone() is None:
                c.execute("INSERT INTO repo VALUES ('created', ?)", (now_iso(),))
                c.execute(
                    "INSERT OR IGNORE INTO refs VALUES (?, ?, ?)",
                    (default_branch, BRANCH, NO_ANCESTOR),
                )
        self.created = conn.execute("SELECT value FROM repo WHERE key='created'").fetchone()[0]

    # ------------------------------------------------------------------ connections
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.db_path, isolation_level=None, timeout=30, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            with self._cache_lock:
                self._all_conns = [*getattr(self, "_all_conns", []), conn]
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: in-process lock + `BEGIN IMMEDIATE` (cross-process lock)."""
        with self._write_lock:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._cache_lock:
            for conn in getattr(self, "_all_conns", []):
                with suppress(sqlite3.ProgrammingError):
                    conn.close()
            self._all_conns = []
        self._local = threading.local()

    # ------------------------------------------------------------------ commits
    def commit_of(self, hash_: str) -> Commit:
        """The commit with this full hash (header only); REFERENCE_NOT_FOUND if unknown."""
        if hash_ == NO_ANCESTOR:
            return Commit(NO_ANCESTOR, "", None, 0, {}, [])
        cached = self._commits.get(hash_)
        if cached is not None:
            return cached
        row = (
            self._conn()
            .execute(
                "SELECT parent, merge_parent, seq, meta, ops, dist FROM commits WHERE hash=?",
                (hash_,),
            )
            .fetchone()
        )
        if row is None:
            raise ReferenceNotFoundError.commit(hash_)
        commit = Commit(
            hash_, row[0], row[1], row[2], json.loads(row[3]), json.loads(row[4]), row[5]
        )
        with self._cache_lock:
            self._commits[hash_] = commit
        return commit

    def tree(self, hash_: str) -> Tree:
        """The full key -> content map at a commit."""
        if hash_ == NO_ANCESTOR:
            return {}
        # Walk first parents back to a cached or stored tree, then replay operations forward.
        replay: list[Commit] = []
        current = hash_
        base: Tree | None = None
        while base is None:
            if current == NO_ANCESTOR:
                base = {}
                break
            with self._cache_lock:
                base = self._trees.get(current)
                if base is not None:
                    self._trees.move_to_end(current)
                    break
            row = (
                self._conn().execute("SELECT tree FROM commits WHERE hash=?", (current,)).fetchone()
            )
            if row is None:
                raise ReferenceNotFoundError.commit(current)
            if row[0]:
                base = {tuple(k): v for k, v in json.loads(row[0])}
                self._remember_tree(current, base)
                break
            commit = self.commit_of(current)
            replay.append(commit)
            current = commit.parent
        if not replay:
            return base
        tree = dict(base)
        for commit in reversed(replay):
            _apply_operations(tree, commit.operations)
        self._remember_tree(hash_, tree)
        return tree

    def _remember_tree(self, hash_: str, tree: Tree) -> None:
        with self._cache_lock:
            self._trees[hash_] = tree
            self._trees.move_to_end(hash_)
            while len(self._trees) > _TREE_CACHE_SIZE:
                self._trees.popitem(last=False)

    def expand_hash(self, hash_: str) -> str:
        """Full hash for a (possibly abbreviated) hash of an existing commit."""
        hash_ = validate_hash(hash_)
        if NO_ANCESTOR.startswith(hash_):
            return NO_ANCESTOR
        if len(hash_) == 64:
            self.commit_of(hash_)
            return hash_
        upper = hash_ + "g"  # 'g' sorts after every hex digit
        rows = (
            self._conn()
            .execute(
                "SELECT hash FROM commits WHERE hash >= ? AND hash < ? LIMIT 2", (hash_, upper)
            )
            .fetchall()
        )
        if len(rows) != 1:
            raise ReferenceNotFoundError.commit(hash_)
        return rows[0][0]

    def _on_chain(self, head: str, target: str) -> bool:
        """Whether `target` is on the first-parent chain of `head` (Nessie's commitInChain)."""
        if target == NO_ANCESTOR:
            return True
        target_seq = self.commit_of(target).seq
        current = head
        while current != NO_ANCESTOR:
            if current == target:
                return True
            commit = self.commit_of(current)
            if commit.seq < target_seq:
                return False
            current = commit.parent
        return False

    def _reachable(
        self, start: str, stop: Callable[[str], bool] = lambda _: False
    ) -> Iterator[str]:
        """Each commit reachable from `start` through any parent, once; the parents of a
        commit for which `stop` is true are not followed."""
        seen = {start}
        stack = [start]
        while stack:
            current = stack.pop()
            yield current
            if current == NO_ANCESTOR or stop(current):
                continue
            for parent in self.commit_of(current).parents:
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)

    def reaches(self, head: str, target: str) -> bool:
        """Whether `target` is `head` or one of its ancestors through any parent (merge
        parents included); commits older than `target` are not walked past."""
        if target == NO_ANCESTOR:
            return True
        seq = self.commit_of(target).seq
        return any(
            h == target
            for h in self._reachable(
                head, stop=lambda h: h == target or self.commit_of(h).seq <= seq
            )
        )

    def ancestors(self, hash_: str) -> set[str]:
        """Every commit reachable through any parent, `hash_` included."""
        return set(self._reachable(hash_))

    def merge_base(self, a: str, b: str) -> str:
        """The nearest common ancestor of two commits (merge parents included)."""
        in_a = self.ancestors(a)
        common = [h for h in self._reachable(b, stop=in_a.__contains__) if h in in_a]
        return max(common, key=lambda h: self.commit_of(h).seq, default=NO_ANCESTOR)

    # ------------------------------------------------------------------ references
    def get_ref(self, name: str) -> Reference:
        """A branch or tag by name; REFERENCE_NOT_FOUND if missing."""
        row = self._conn().execute("SELECT type, hash FROM refs WHERE name=?", (name,)).fetchone()
        if row is None:
            raise ReferenceNotFoundError.named(name)
        return Reference(name, row[0], row[1])

    def list_refs(self) -> list[Reference]:
        rows = self._conn().execute("SELECT name, type, hash FROM refs ORDER BY name").fetchall()
        return [Reference(*row) for row in rows]

    def resolve(self, spec: RefSpec, what: str = "Expected hash") -> Resolved:
        """Resolve a reference spec to a commit, checking `name@hash` reachability.

        `what` names the hash in Nessie's message when a detached spec has no starting commit.
        """
        if spec.name is not None:
            name = self.default_branch if spec.name == "-" else spec.name
            ref = self.get_ref(name)
            hash_ = ref.hash
            if spec.hash is not None:
                hash_ = self.expand_hash(spec.hash)
                if not self._on_chain(ref.hash, hash_):
                    raise ReferenceNotFoundError.hash_not_on_ref(hash_, name)
            resolved = Resolved(name, ref.type, hash_)
        else:
            if spec.hash is None:
                raise BadRequestError(f"{what} must contain a starting commit ID.")
            resolved = Resolved(None, DETACHED, self.expand_hash(spec.hash))
        for op, arg in spec.relative:
            resolved = Resolved(
                resolved.name, resolved.type, self._relative(resolved.hash, op, arg)
            )
        return resolved

    def _relative(self, hash_: str, op: str, arg: str) -> str:
        if op == "~":
            for _ in range(int(arg)):
                if hash_ == NO_ANCESTOR:
                    break
                hash_ = self.commit_of(hash_).parent
            return hash_
        if op == "^":
            n = int(arg)
            parents = self.commit_of(hash_).parents if hash_ != NO_ANCESTOR else []
            if n < 1 or n > len(parents):
                raise ReferenceNotFoundError(f"Commit '{hash_}' has no parent number {n}")
            return parents[n - 1]
        when = _parse_instant(arg)
        while hash_ != NO_ANCESTOR:
            commit = self.commit_of(hash_)
            if _parse_instant(commit.meta["commitTime"]) <= when:
                return hash_
            hash_ = commit.parent
        return NO_ANCESTOR

    def create_ref(
        self, name: str, ref_type: str, source: RefSpec, authorize: Authorize | None = None
    ) -> Reference:
        """Create a branch or tag at `source.hash` (plus its relative part), which must be on
        the reference `source.name` (any commit when the source is detached). `authorize`
        (the source's name) runs once the source is resolved (TreeApiImpl.createReference)."""
        validate_ref_name(name)
        if ref_type not in (BRANCH, TAG):
            raise BadRequestError(f"Invalid reference type '{ref_type}'")
        with self._write() as conn:
            target = self._commit_on_source(source)
            if authorize is not None:
                authorize(self._source_name(source))
            try:
                conn.execute("INSERT INTO refs VALUES (?, ?, ?)", (name, ref_type, target))
            except sqlite3.IntegrityError:
                raise ReferenceAlreadyExistsError.named(name) from None
        return Reference(name, ref_type, target)

    def _ref_name(self, name: str) -> str:
        return self.default_branch if name == "-" else name

    def _source_name(self, spec: RefSpec) -> str:
        """The name Nessie's checks see for a create's or assign's source (DETACHED: none)."""
        return DETACHED if spec.name is None else self._ref_name(spec.name)

    def _commit_named(self, spec: RefSpec, what: str) -> str:
        """The commit a write acts on: `spec.hash` plus its relative part (Nessie's
        `HashValidator.hashMustBeUnambiguous`); reachability from a reference is not checked."""
        require_unambiguous(spec, what)
        return self.resolve(RefSpec(None, spec.hash, spec.relative), what).hash

    def _commit_on_source(self, spec: RefSpec) -> str:
        """The target commit of a create or assign: `spec.hash` plus its relative part, which
        must be on the reference `spec.name` (any commit when `spec` is detached)."""
        source = None
        if spec.name is not None and spec.name != DETACHED:
            source = self.get_ref(self._ref_name(spec.name))
        target = self._commit_named(spec, "Target hash")
        if source is not None and not self._on_chain(source.hash, target):
            raise ReferenceNotFoundError.hash_not_on_ref(target, source.name)
        return target

    def _expected_head(self, spec: RefSpec) -> str:
        """The head an assign or delete expects. A full hash is compared as sent: an unknown
        one is a conflict, not a missing commit, as in Nessie."""
        require_unambiguous(spec, "Expected hash")
        if not spec.relative and spec.hash is not None and len(spec.hash) == 64:
            return spec.hash
        return self._commit_named(spec, "Expected hash")

    @staticmethod
    def _check_type(ref: Reference, ref_type: str | None) -> None:
        if ref_type is not None and ref.type != ref_type:
            raise BadRequestError(
                f"Expected reference type {ref_type} does not match existing "
                f"reference {ref.type.capitalize()}Name{{name={ref.name}}}"
            )

    def _branch_for_write(self, target: RefSpec, what: str) -> Reference:
        if target.name is None:
            raise BadRequestError(f"{what} must be a branch.")
        ref = self.get_ref(self._ref_name(target.name))
        if ref.type != BRANCH:
            raise BadRequestError(f"{what} must be a branch.")
        return ref

    def assign_ref(
        self,
        target: RefSpec,
        ref_type: str | None,
        assign_to: RefSpec,
        authorize: Authorize | None = None,
    ) -> Reference:
        """Point `target.name` at `assign_to`, if it is still at `target.hash`.

        Checks run in `TreeApiImpl.assignReference`'s order: the reference and its expected
        hash, then the new commit, then the type, then `authorize(reference, new source)`,
        then the compare-and-swap.
        """
        with self._write() as conn:
            if target.name is None:
                raise BadRequestError("Assignment target must be a branch or a tag.")
            ref = self.get_ref(self._ref_name(target.name))
            expected = self._expected_head(target)
            new_hash = self._commit_on_source(assign_to)
            self._check_type(ref, ref_type)
            if authorize is not None:
                authorize(ref.name, self._source_name(assign_to))
            if expected != ref.hash:
                raise ReferenceConflictError.unexpected_hash(ref.name, expected, ref.hash)
            cur = conn.execute(
                "UPDATE refs SET hash=? WHERE name=? AND hash=?", (new_hash, ref.name, ref.hash)
            )
            if cur.rowcount != 1:  # cannot happen under BEGIN IMMEDIATE; kept as a guard
                raise ReferenceConflictError.unexpected_hash(ref.name, ref.hash, "?")
        return Reference(ref.name, ref.type, new_hash)

    def delete_ref(
        self, target: RefSpec, ref_type: str | None, authorize: Authorize | None = None
    ) -> Reference:
        """Delete a branch or tag, if it is still at `target.hash`; never the default branch.

        The type and default-branch checks, then `authorize(reference)`, come before the hash
        check, as in `TreeApiImpl.deleteReference`.
        """
        with self._write() as conn:
            if target.name is None:
                raise ReferenceNotFoundError.named(DETACHED)
            ref = self.get_ref(self._ref_name(target.name))
            self._check_type(ref, ref_type)
            if ref.name == self.default_branch and ref.type == BRANCH:
                raise BadRequestError(f"Default branch '{ref.name}' cannot be deleted.")
            if authorize is not None:
                authorize(ref.name)
            expected = self._expected_head(target)
            if expected != ref.hash:
                raise ReferenceConflictError.unexpected_hash(ref.name, expected, ref.hash)
            conn.execute("DELETE FROM refs WHERE name=? AND hash=?", (ref.name, ref.hash))
        return ref

    # ------------------------------------------------------------------ commit
    def commit(
        self,
        target: RefSpec,
        meta_sent: dict[str, Any],
        ops: list[Operation],
        validate: ValidateChanges | None = None,
    ) -> tuple[Reference, list[tuple[Key, str]], Commit]:
        """Commit operations to branch `target.name` on top of its head.

        Per-key conflict detection: for every key the commit touches, the value at the
        expected hash must equal the value at the head (Nessie's rule; the expected hash may
        be older than the head when unrelated keys changed meanwhile). `validate` sees the
        branch and each key's change before anything is written (Nessie's commit validator).
        """
        meta = build_commit_meta(meta_sent)
        with self._write() as conn:
            ref = self._branch_for_write(target, "Reference to commit into")
            branch, head = ref.name, ref.hash
            expected_full = self._commit_named(target, "Expected hash")
            if not self._on_chain(head, expected_full):
                raise ReferenceNotFoundError.hash_not_on_ref(expected_full, branch)
            head_tree = self.tree(head)
            expected_tree = head_tree if expected_full == head else self.tree(expected_full)
            new_tree, stored_ops, added = self._apply(head_tree, expected_tree, ops)
            if validate is not None:
                validate(branch, _changes(head_tree, stored_ops))
            commit = self._insert_commit(conn, head, None, meta, stored_ops, new_tree)
            cur = conn.execute(
                "UPDATE refs SET hash=? WHERE name=? AND hash=?", (commit.hash, branch, head)
            )
            if cur.rowcount != 1:
                raise ReferenceConflictError.unexpected_hash(branch, head, "?")
        return Reference(branch, BRANCH, commit.hash), added, commit

    def _apply(
        self, head_tree: Tree, expected_tree: Tree, ops: list[Operation]
    ) -> tuple[Tree, list[dict[str, Any]], list[tuple[Key, str]]]:
        conflicts: list[dict[str, Any]] = []
        new_tree = dict(head_tree)
        stored: list[dict[str, Any]] = []
        added: list[tuple[Key, str]] = []
        deleted_ids = {
            head_tree[op.key].get("id") for op in ops if op.type == "DELETE" and op.key in head_tree
        }
        deleted_keys: set[Key] = set()
        for op in ops:
            key = op.key
            ks = key_to_string(key)
            current = head_tree.get(key)
            if key in deleted_keys:
                current = None
            if expected_tree.get(key) != head_tree.get(key):
                before = expected_tree.get(key)
                if before is None:
                    conflicts.append(
                        conflict("KEY_EXISTS", list(key), f"key '{ks}' already exists")
                    )
                elif head_tree.get(key) is None:
                    conflicts.append(
                        conflict("KEY_DOES_NOT_EXIST", list(key), f"key '{ks}' does not exist")
                    )
                else:
                    conflicts.append(
                        conflict(
                            "VALUE_DIFFERS",
                            list(key),
                            f"values of existing and expected content for key '{ks}' are different",
                        )
                    )
                continue
            if op.type == "UNCHANGED":
                continue
            if op.type == "DELETE":
                if current is None:
                    conflicts.append(
                        conflict("KEY_DOES_NOT_EXIST", list(key), f"key '{ks}' does not exist")
                    )
                    continue
                new_tree.pop(key, None)
                deleted_keys.add(key)
                stored.append({"type": "DELETE", "key": list(key)})
                continue
            content = dict(op.content or {})
            cid = content.get("id")
            if cid is None:
                if current is not None:
                    conflicts.append(
                        conflict("KEY_EXISTS", list(key), f"key '{ks}' already exists")
                    )
                    continue
                content["id"] = new_content_id()
                added.append((key, content["id"]))
            elif current is None:
                if cid not in deleted_ids:  # only a rename may re-use an existing id
                    conflicts.append(
                        conflict("KEY_DOES_NOT_EXIST", list(key), f"key '{ks}' does not exist")
                    )
                    continue
            elif current.get("id") != cid:
                conflicts.append(
                    conflict(
                        "CONTENT_ID_DIFFERS",
                        list(key),
                        f"content IDs of existing and expected content for key '{ks}' "
                        "are different",
                    )
                )
                continue
            elif current.get("type") != content["type"]:
                conflicts.append(
                    conflict(
                        "PAYLOAD_DIFFERS",
                        list(key),
                        f"payload of existing and expected content for key '{ks}' are different",
                    )
                )
                continue
            new_tree[key] = content
            stored.append({"type": "PUT", "key": list(key), "content": content})
        conflicts.extend(self._namespace_conflicts(new_tree, stored))
        if conflicts:
            raise ReferenceConflictError(conflicts)
        return new_tree, stored, added

    @staticmethod
    def _namespace_conflicts(tree: Tree, stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Parents of put keys must be namespaces; deleted namespaces must be empty."""
        out: list[dict[str, Any]] = []
        reported: set[Key] = set()
        for op in stored:
            key = tuple(op["key"])
            if op["type"] == "PUT":
                for n in range(len(key) - 1, 0, -1):
                    parent = key[:n]
                    if parent in reported:
                        continue
                    value = tree.get(parent)
                    ps = key_to_string(parent)
                    if value is None:
                        reported.add(parent)
                        out.append(
                            conflict(
                                "NAMESPACE_ABSENT", list(parent), f"namespace '{ps}' must exist"
                            )
                        )
                    elif value.get("type") != "NAMESPACE":
                        reported.add(parent)
                        out.append(
                            conflict(
                                "NOT_A_NAMESPACE",
                                list(parent),
                                f"expecting the key '{ps}' to be a namespace, but is not a "
                                "namespace (using a content object that is not a namespace as a "
                                "namespace is forbidden)",
                            )
                        )
            else:
                size = len(key)
                if any(len(k) > size and k[:size] == key for k in tree):
                    out.append(
                        conflict(
                            "NAMESPACE_NOT_EMPTY",
                            list(key),
                            f"namespace '{key_to_string(key)}' is not empty",
                        )
                    )
        return out

    def _insert_commit(
        self,
        conn: sqlite3.Connection,
        parent: str,
        merge_parent: str | None,
        meta: dict[str, Any],
        ops: list[dict[str, Any]],
        tree: Tree,
    ) -> Commit:
        parents = [parent] + ([merge_parent] if merge_parent else [])
        seq = 1 + max(self.commit_of(p).seq for p in parents)
        payload = json.dumps(
            {"parents": parents, "meta": meta, "ops": ops}, sort_keys=True, separators=(",", ":")
        )
        hash_ = hashlib.sha256(payload.encode()).hexdigest()
        dist = self.commit_of(parent).dist + 1 if parent != NO_ANCESTOR else 0
        tree_json = ""
        if dist >= CHECKPOINT_EVERY:
            dist = 0
            tree_json = json.dumps(
                sorted([list(k), v] for k, v in tree.items()), separators=(",", ":")
            )
        # Content-addressed: an identical commit object may already exist (same parents,
        # metadata and operations); it is then the same commit.
        conn.execute(
            "INSERT OR IGNORE INTO commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (hash_, parent, merge_parent, seq, json.dumps(meta), json.dumps(ops), tree_json, dist),
        )
        commit = Commit(hash_, parent, merge_parent, seq, meta, ops, dist)
        with self._cache_lock:
            self._commits[hash_] = commit
        self._remember_tree(hash_, tree)
        return commit

    # ------------------------------------------------------------------ merge
    def merge(
        self,
        target_spec: RefSpec,
        request: MergeRequest,
        authorize: Authorize | None = None,
        validate: ValidateChanges | None = None,
    ) -> MergeResult:
        """Merge the source's changes since the merge base into `target` as one merge commit.

        A key changed on both sides since the merge base (to different values) is a conflict,
        unless its merge behaviour is FORCE (take the source) or DROP (skip the key).
        `authorize(source, target)` runs once both are resolved; `validate` sees the target
        and each key's change before anything is written (TreeApiImpl.mergeRefIntoBranch).
        """
        with self._write() as conn:
            # Nessie resolves the source before the target (`TreeApiImpl.mergeRefIntoBranch`).
            source_name = self._ref_name(request.from_ref)
            source = None if source_name == DETACHED else self.get_ref(source_name)
            from_hash = self._commit_named(
                parse_hash_spec(request.from_hash, source_name), "Source hash"
            )
            ref = self._branch_for_write(target_spec, "Reference to merge into")
            target, head = ref.name, ref.hash
            expected = self._commit_named(target_spec, "Expected hash")
            if not self._on_chain(head, expected):
                raise ReferenceNotFoundError.hash_not_on_ref(expected, target)
            if source is not None and not self._on_chain(source.hash, from_hash):
                raise ReferenceNotFoundError.hash_not_on_ref(from_hash, source_name)
            if authorize is not None:
                authorize(source_name, target)
            base = self.merge_base(head, from_hash)
            result = MergeResult(False, True, head, base, target, head, expected)
            if base == from_hash:  # nothing on the source that the target does not have
                return result
            base_tree, source_tree, target_tree = (
                self.tree(base),
                self.tree(from_hash),
                self.tree(head),
            )
            source_changes = _changed_keys(base_tree, source_tree)
            target_changes = set(_changed_keys(base_tree, target_tree))
            new_tree = dict(target_tree)
            stored: list[dict[str, Any]] = []
            conflicts: list[dict[str, Any]] = []
            for key in source_changes:
                mode = request.key_modes.get(key, request.default_mode)
                detail: dict[str, Any] = {"key": {"elements": list(key)}, "mergeBehavior": mode}
                result.details.append(detail)
                if mode == "DROP":
                    continue
                new_value = source_tree.get(key)
                if mode == "NORMAL" and key in target_changes and target_tree.get(key) != new_value:
                    ks = key_to_string(key)
                    if base_tree.get(key) is None:
                        c = conflict("KEY_EXISTS", list(key), f"key '{ks}' already exists")
                    elif target_tree.get(key) is None:
                        c = conflict("KEY_DOES_NOT_EXIST", list(key), f"key '{ks}' does not exist")
                    else:
                        c = conflict(
                            "VALUE_DIFFERS",
                            list(key),
                            f"values of existing and expected content for key '{ks}' are different",
                        )
                    detail["conflict"] = c
                    conflicts.append(c)
                    continue
                if new_value is None:
                    new_tree.pop(key, None)
                    stored.append({"type": "DELETE", "key": list(key)})
                else:
                    new_tree[key] = new_value
                    stored.append({"type": "PUT", "key": list(key), "content": new_value})
            conflicts.extend(self._namespace_conflicts(new_tree, stored))
            if validate is not None and not conflicts:
                validate(target, _changes(target_tree, stored))
            if conflicts:
                if not request.return_conflict_as_result:
                    raise ReferenceConflictError(conflicts)
                result.was_successful = False
                return result
            if request.dry_run:
                return result
            sent = dict(request.commit_meta or {})
            message = (
                request.message
                or sent.get("message")
                or (f"Merged {request.from_ref} at {from_hash} into {target} at {expected}")
            )
            meta = build_commit_meta(sent, message=message)
            commit = self._insert_commit(conn, head, from_hash, meta, stored, new_tree)
            cur = conn.execute(
                "UPDATE refs SET hash=? WHERE name=? AND hash=?", (commit.hash, target, head)
            )
            if cur.rowcount != 1:
                raise ReferenceConflictError.unexpected_hash(target, head, "?")
            result.was_applied = True
            result.resultant_target_hash = commit.hash
            return result

    # ------------------------------------------------------------------ reads
    def log(
        self,
        start: str,
        *,
        limit_hash: str | None = None,
        max_records: int | None = None,
        page_token: str | None = None,
    ) -> LogPage:
        """First-parent history from `start` (or the page token) back to the root."""
        size = min(max_records or MAX_PAGE, MAX_PAGE)
        current = start
        if page_token:
            current = self.expand_hash(page_token)
        stop = self.expand_hash(limit_hash) if limit_hash else None
        out: list[Commit] = []
        while current != NO_ANCESTOR:
            if len(out) >= size:
                return LogPage(out, current)
            commit = self.commit_of(current)
            out.append(commit)
            if current == stop:
                break
            current = commit.parent
        return LogPage(out, None)

    def diff(self, from_hash: str, to_hash: str) -> list[tuple[Key, Any, Any]]:
        """Keys whose content differs between two commits, sorted."""
        a, b = self.tree(from_hash), self.tree(to_hash)
        return [(k, a.get(k), b.get(k)) for k in _changed_keys(a, b)]

    def config_times(self) -> tuple[str, str]:
        return self.created, self.created


def _changes(before: Tree, stored: list[dict[str, Any]]) -> list[tuple[str, Key, str]]:
    """Each stored operation as Nessie's validator sees it: CREATE, UPDATE or DELETE of a key,
    with the content's type (the new one for a put, the removed one for a delete)."""
    out = []
    for op in stored:
        key = tuple(op["key"])
        old = before.get(key)
        if op["type"] == "DELETE":
            out.append(("DELETE", key, (old or {}).get("type", "")))
        else:
            out.append(("CREATE" if old is None else "UPDATE", key, op["content"].get("type", "")))
    return out


def _apply_operations(tree: Tree, ops: list[dict[str, Any]]) -> None:
    """Replay stored operations (PUT with content, DELETE) onto `tree` in place."""
    for op in ops:
        key = tuple(op["key"])
        if op["type"] == "PUT":
            tree[key] = op["content"]
        else:
            tree.pop(key, None)


def _changed_keys(a: Tree, b: Tree) -> list[Key]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _parse_instant(value: str) -> dt.datetime:
    try:
        if value.isdigit():
            return dt.datetime.fromtimestamp(int(value) / 1000, dt.UTC)
        text = value.rstrip("Z")
        if "." in text:
            head, frac = text.split(".", 1)
            text = f"{head}.{frac[:6].ljust(6, '0')}"
        return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
    except (ValueError, OverflowError, OSError):
        raise BadRequestError(f"Invalid timestamp '{value}'") from None
