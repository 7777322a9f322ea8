"""Nessie API request bodies as a client sends them (names per Nessie's OpenAPI spec), for
the Nessie bench and the server's tests; the server parses them in local/nessie/models.py."""

from __future__ import annotations

from typing import Any

BRANCH = "BRANCH"


def reference_body(name: str, hash_: str, type_: str = BRANCH) -> dict[str, Any]:
    """`Reference` body (create/assign source); Nessie refuses one without a hash."""
    return {"type": type_, "name": name, "hash": hash_}


def put_op(key: list[str], content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "PUT", "key": {"elements": list(key)}, "content": content}


def delete_op(key: list[str]) -> dict[str, Any]:
    return {"type": "DELETE", "key": {"elements": list(key)}}


def iceberg_table(
    metadata_location: str, content_id: str | None = None, snapshot_id: int = -1
) -> dict[str, Any]:
    """An `IcebergTable` content value."""
    body: dict[str, Any] = {
        "type": "ICEBERG_TABLE",
        "metadataLocation": metadata_location,
        "snapshotId": snapshot_id,
        "schemaId": 0,
        "specId": 0,
        "sortOrderId": 0,
    }
    if content_id:
        body["id"] = content_id
    return body


def namespace_content(
    elements: list[str], content_id: str | None = None, properties: dict[str, str] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "NAMESPACE",
        "elements": list(elements),
        "properties": dict(properties or {}),
    }
    if content_id:
        body["id"] = content_id
    return body


def operations_body(message: str, *ops: dict[str, Any]) -> dict[str, Any]:
    """`Operations` body of a commit."""
    return {"commitMeta": {"message": message}, "operations": list(ops)}


def merge_body(
    from_ref: str,
    from_hash: str,
    *,
    dry_run: bool = False,
    return_conflict_as_result: bool = False,
) -> dict[str, Any]:
    """`Merge` body (v2)."""
    return {
        "fromRefName": from_ref,
        "fromHash": from_hash,
        "dryRun": dry_run,
        "returnConflictAsResult": return_conflict_as_result,
    }
