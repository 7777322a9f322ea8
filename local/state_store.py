"""Persist what moto keeps in memory (ledger items, S3 objects) in the home, and restore it.

moto's backends die with the process; the Nessie SQLite file and the `file://`
warehouse are already on disk. Saving copies the ledger's DynamoDB items and the
source objects, audit reports and job logs into `<home>/state/`; restoring puts
them back into a freshly started moto before any command reads them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

from lambdas.common import constants as c
from lambdas.common.ledger import KIND_INGEST, KIND_TABLE
from lambdas.common.naming import iso, utcnow
from local.home import WapHome

# Artifacts worth keeping; `tables/` is uploaded from the tables directory on every start.
# staging/: the staged copies a queued or failed ingest still reads (a re-run, a rebase).
ARTIFACT_PREFIXES = ("reports/", "logs/", "staging/")
INTERRUPTED_REASON = (
    "interrupted: the wap process stopped before this ingest finished "
    "(local mode runs ingests inside the wap command)"
)
_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class StoredBucket:
    """A bucket whose objects (under `prefixes`, all when empty) are kept in the home."""

    name: str
    prefixes: tuple[str, ...] = ()

    def keeps(self, key: str) -> bool:
        return not self.prefixes or key.startswith(self.prefixes)


def _encode(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, set):
        return sorted(value)
    raise TypeError(f"cannot store {type(value).__name__} in the ledger file")


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _object_path(root: Path, bucket: str, key: str) -> Path | None:
    """Where `bucket/key` lives under `root`; None for keys that would escape it."""
    parts = PurePosixPath(key).parts
    if not parts or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return None
    return root.joinpath(bucket, *parts)


class StateStore:
    """Copies ledger items and kept S3 objects between a running moto and a `WapHome`."""

    def __init__(
        self, home: WapHome, *, ledger_table: str, buckets: tuple[StoredBucket, ...]
    ) -> None:
        self.home = home
        self.ledger_table = ledger_table
        self.buckets = buckets

    # ---- save ------------------------------------------------------------------------------

    def save(self, dynamodb: Any, s3: Any) -> None:
        """Write the ledger and every kept object (new or changed since the last save)."""
        items = _scan(dynamodb.Table(self.ledger_table))
        items.sort(key=lambda i: i["pk"])
        _write_atomically(
            self.home.ledger_file, json.dumps(items, default=_encode, indent=1).encode()
        )
        manifest_path = self.home.objects / _MANIFEST
        manifest = _read_json(manifest_path, {})
        for bucket in self.buckets:
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket.name):
                for obj in page.get("Contents", []):
                    key, etag = obj["Key"], obj["ETag"].strip('"')
                    target = _object_path(self.home.objects, bucket.name, key)
                    if target is None or not bucket.keeps(key):
                        continue
                    ident = f"{bucket.name}/{key}"
                    if manifest.get(ident) == etag and target.is_file():
                        continue
                    body = s3.get_object(Bucket=bucket.name, Key=key)["Body"].read()
                    _write_atomically(target, body)
                    manifest[ident] = etag
        _write_atomically(manifest_path, json.dumps(manifest, indent=1).encode())

    # ---- restore ---------------------------------------------------------------------------

    def restore(self, dynamodb: Any, s3: Any, *, recover_interrupted: bool) -> list[str]:
        """Put saved items and objects back; return the ingests found interrupted.

        Table lock items are not restored: no ingest runs when a command starts, so
        every table is free. With `recover_interrupted`, ingests a killed process
        left unfinished are recorded as JOB_FAILED with the reason.
        """
        table = dynamodb.Table(self.ledger_table)
        items = (
            json.loads(self.home.ledger_file.read_text(), parse_float=Decimal)
            if self.home.ledger_file.is_file()
            else []
        )
        interrupted: list[str] = []
        with table.batch_writer() as batch:
            for item in items:
                if item.get("kind") == KIND_TABLE:
                    continue
                if (
                    recover_interrupted
                    and item.get("kind") == KIND_INGEST
                    and item.get("status") not in c.TERMINAL_STATUSES
                ):
                    interrupted.append(item["ingest_id"])
                    item = {
                        **item,
                        "status": c.JOB_FAILED,
                        "error": INTERRUPTED_REASON,
                        "finished_at": iso(utcnow()),
                        "updated_at": iso(utcnow()),
                    }
                batch.put_item(Item=item)
        for bucket in self.buckets:
            self._restore_bucket(s3, bucket.name)
        return interrupted

    def _restore_bucket(self, s3: Any, bucket: str) -> None:
        """Put the saved objects back (the caller keeps S3 notifications quiet meanwhile)."""
        root = self.home.objects / bucket
        if not root.is_dir():
            return
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                continue
            s3.put_object(
                Bucket=bucket, Key=path.relative_to(root).as_posix(), Body=path.read_bytes()
            )


def _scan(table: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ConsistentRead": True}
    while True:
        page = table.scan(**kwargs)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return default
