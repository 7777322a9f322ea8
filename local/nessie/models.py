"""The data the server keeps (commits, references, contents) and the parsing of the request
bodies clients send (names per Nessie's OpenAPI spec). The tests and the bench build those
bodies with bench/nessie_requests.py."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from .exceptions import BadRequestError
from .refs import parse_hash_spec, validate_hash, validate_key

DEFAULT_BRANCH = "main"
# Nessie's "no ancestor" hash in the new storage model (RefMapping.NO_ANCESTOR = EMPTY_OBJ_ID):
# sha256("empty"). A fresh repository's default branch points at it.
NO_ANCESTOR = "2e1cfa82b035c26cbbbdae632cea070514eb8b773f616aaeaf668e2f0be8f10d"
SPEC_VERSION = "2.2.0"
BRANCH, TAG, DETACHED = "BRANCH", "TAG", "DETACHED"
CONTENT_TYPES = ("ICEBERG_TABLE", "ICEBERG_VIEW", "NAMESPACE", "DELTA_LAKE_TABLE", "UDF")
# Fields kept per content type (others are dropped, like Nessie's typed model does).
_CONTENT_FIELDS: dict[str, tuple[str, ...]] = {
    "ICEBERG_TABLE": ("metadataLocation", "snapshotId", "schemaId", "specId", "sortOrderId"),
    "ICEBERG_VIEW": ("metadataLocation", "versionId", "schemaId", "sqlText", "dialect"),
    "NAMESPACE": ("elements", "properties"),
    "DELTA_LAKE_TABLE": ("metadataLocationHistory", "checkpointLocationHistory", "lastCheckpoint"),
    "UDF": ("metadataLocation", "versionId", "signatureId", "sqlText", "dialect"),
}
_INT_FIELDS = ("snapshotId", "schemaId", "specId", "sortOrderId", "versionId")

Key = tuple[str, ...]
Tree = dict[Key, dict[str, Any]]


def now_iso() -> str:
    """Current UTC time as Nessie prints instants (ISO-8601, microseconds, 'Z')."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Reference:
    """A branch or tag and the commit it points at."""

    name: str
    type: str
    hash: str


@dataclass
class Commit:
    """One commit of the DAG: its tree is its parent's tree with `operations` applied.

    `dist` counts commits since the nearest ancestor (first parents) whose full tree is stored.
    """

    hash: str
    parent: str
    merge_parent: str | None
    seq: int
    meta: dict[str, Any]
    operations: list[dict[str, Any]]
    dist: int = 0

    @property
    def parents(self) -> list[str]:
        return [self.parent] + ([self.merge_parent] if self.merge_parent else [])


@dataclass
class Operation:
    """A parsed `Put`, `Delete` or `Unchanged` operation."""

    type: str
    key: Key
    content: dict[str, Any] | None = None


@dataclass
class MergeRequest:
    """A parsed `Merge` body (v1 and v2)."""

    from_ref: str
    from_hash: str | None
    dry_run: bool = False
    return_conflict_as_result: bool = False
    default_mode: str = "NORMAL"
    key_modes: dict[Key, str] = field(default_factory=dict)
    message: str | None = None
    commit_meta: dict[str, Any] | None = None


# ---------------------------------------------------------------- parsing (server side)


def _require_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequestError(f"{what} must be a JSON object")
    return value


def parse_key(value: Any) -> Key:
    """A `ContentKey` JSON object -> tuple of elements."""
    obj = _require_dict(value, "key")
    return tuple(validate_key(obj.get("elements")))


def parse_content(value: Any, key: Key) -> dict[str, Any]:
    """Validate a content object and keep only the fields of its type."""
    obj = _require_dict(value, "content")
    ctype = obj.get("type")
    if ctype not in CONTENT_TYPES:
        raise BadRequestError(f"Unknown content type '{ctype}'")
    out: dict[str, Any] = {"type": ctype}
    cid = obj.get("id")
    if cid is not None:
        if not isinstance(cid, str) or not cid or len(cid) > 100:
            raise BadRequestError("Content id must be a non-empty string")
        out["id"] = cid
    for name in _CONTENT_FIELDS[ctype]:
        if obj.get(name) is not None:
            out[name] = obj[name]
    for name in _INT_FIELDS:
        if name in out and (not isinstance(out[name], int) or isinstance(out[name], bool)):
            raise BadRequestError(f"Content field '{name}' must be an integer")
    if ctype in ("ICEBERG_TABLE", "ICEBERG_VIEW", "UDF"):
        loc = out.get("metadataLocation")
        if not isinstance(loc, str) or not loc.strip():
            raise BadRequestError("Iceberg content requires a non-blank 'metadataLocation'")
    if ctype == "NAMESPACE":
        elements = out.get("elements", list(key))
        if elements != list(key):
            raise BadRequestError(
                f"Namespace elements {elements} do not match the content key {list(key)}"
            )
        out["elements"] = list(key)
        props = out.get("properties", {})
        if not isinstance(props, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in props.items()
        ):
            raise BadRequestError("Namespace properties must map strings to strings")
        out["properties"] = props
    return out


def parse_operations(body: Any) -> tuple[dict[str, Any], list[Operation]]:
    """An `Operations` body -> (commit meta as sent, operations)."""
    obj = _require_dict(body, "Operations")
    meta = _require_dict(obj.get("commitMeta"), "commitMeta")
    raw_ops = obj.get("operations")
    if not isinstance(raw_ops, list):
        raise BadRequestError("operations must be a list")
    ops: list[Operation] = []
    seen: set[Key] = set()
    for raw in raw_ops:
        raw = _require_dict(raw, "operation")
        otype = raw.get("type")
        key = parse_key(raw.get("key"))
        if otype == "PUT":
            ops.append(Operation("PUT", key, parse_content(raw.get("content"), key)))
        elif otype == "DELETE":
            ops.append(Operation("DELETE", key))
        elif otype == "UNCHANGED":
            ops.append(Operation("UNCHANGED", key))
        else:
            raise BadRequestError(f"Unknown operation type '{otype}'")
        replaces = otype == "PUT" and any(o.key == key and o.type == "DELETE" for o in ops[:-1])
        if key in seen and not replaces:
            raise BadRequestError(f"Duplicate key in commit operations: {'.'.join(key)}")
        seen.add(key)
    return meta, ops


def build_commit_meta(sent: dict[str, Any], *, message: str | None = None) -> dict[str, Any]:
    """Server-side commit metadata from what the client sent (v1 or v2 field names)."""
    for field_name, what in (
        ("committer", "committer"),
        ("commitTime", "commit time"),
        ("hash", "commit hash"),
    ):
        if sent.get(field_name) is not None:
            raise BadRequestError(
                f"Cannot set the {what} on the client side. It is set by the server."
            )
    if sent.get("parentCommitHashes"):
        raise BadRequestError(
            "Cannot set the parent commit hashes on the client side. It is set by the server."
        )
    msg = sent.get("message") if message is None else message
    if msg is None:
        msg = ""
    if not isinstance(msg, str):
        raise BadRequestError("commitMeta.message must be a string")
    authors = sent.get("authors")
    if authors is None:
        authors = [sent["author"]] if sent.get("author") else []
    signed = sent.get("allSignedOffBy")
    if signed is None:
        signed = [sent["signedOffBy"]] if sent.get("signedOffBy") else []
    if not isinstance(authors, list) or not isinstance(signed, list):
        raise BadRequestError("commitMeta authors and signedOffBy must be lists of strings")
    props: dict[str, list[str]] = {}
    if isinstance(sent.get("allProperties"), dict):
        for k, v in sent["allProperties"].items():
            props[str(k)] = [str(x) for x in (v if isinstance(v, list) else [v])]
    elif isinstance(sent.get("properties"), dict):
        props = {str(k): [str(v)] for k, v in sent["properties"].items()}
    if not all(isinstance(a, str) for a in authors) or not all(isinstance(s, str) for s in signed):
        raise BadRequestError("commitMeta authors and signedOffBy must be strings")
    now = now_iso()
    author_time = sent.get("authorTime") if isinstance(sent.get("authorTime"), str) else now
    return {
        "committer": "",
        "authors": list(authors),
        "allSignedOffBy": list(signed),
        "message": msg,
        "commitTime": now,
        "authorTime": author_time,
        "allProperties": props,
    }


def parse_merge(body: Any, *, v1: bool = False) -> MergeRequest:
    """A `Merge` body; accepts both `dryRun` and `isDryRun` (older clients)."""
    obj = _require_dict(body, "Merge")
    from_ref = obj.get("fromRefName")
    if not isinstance(from_ref, str) or not from_ref:
        raise BadRequestError("fromRefName must be set")
    from_hash = obj.get("fromHash")
    if from_hash is not None and not isinstance(from_hash, str):
        raise BadRequestError("fromHash must be a string")
    if v1 and from_hash is None:
        # v1's `Merge.getFromHash()` is not @Nullable: Jackson cannot build the body without it.
        raise BadRequestError(
            "Cannot construct instance of `org.projectnessie.api.v1.params.ImmutableMerge`, "
            "problem: Cannot build Merge, some of required attributes are not set [fromHash]"
        )
    if v1:  # v1's `Merge.checkHash` takes no relative part
        validate_hash(from_hash, "fromHash")
    else:
        parse_hash_spec(from_hash)
    dry = obj.get("dryRun", obj.get("isDryRun", False))
    ret = obj.get("returnConflictAsResult", False)
    modes: dict[Key, str] = {}
    key_modes = obj.get("keyMergeModes") or []
    if not isinstance(key_modes, list):
        raise BadRequestError("keyMergeModes must be a list")
    for km in key_modes:
        km = _require_dict(km, "keyMergeModes entry")
        mode = km.get("mergeBehavior", "NORMAL")
        if mode not in ("NORMAL", "FORCE", "DROP"):
            raise BadRequestError(f"Unknown merge behavior '{mode}'")
        modes[parse_key(km.get("key"))] = mode
    default_mode = obj.get("defaultKeyMergeMode") or "NORMAL"
    if default_mode not in ("NORMAL", "FORCE", "DROP"):
        raise BadRequestError(f"Unknown merge behavior '{default_mode}'")
    commit_meta = obj.get("commitMeta")
    if commit_meta is not None:
        _require_dict(commit_meta, "commitMeta")
    return MergeRequest(
        from_ref=from_ref,
        from_hash=from_hash,
        dry_run=bool(dry),
        return_conflict_as_result=bool(ret),
        default_mode=default_mode,
        key_modes=modes,
        message=obj.get("message"),
        commit_meta=commit_meta,
    )


def new_content_id() -> str:
    """Content ids of new content are random UUIDs, like Nessie's."""
    return str(uuid.uuid4())
