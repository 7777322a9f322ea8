"""Persist what moto keeps in memory (ledger items, S3 objects) in the home, and restore it.

moto's backends die with the process; the Nessie SQLite file and the `file://`
warehouse are already on disk. The ledger is written through at every change
(`wap/runtime/ledger_db.py`); saving copies the source objects, audit reports and job logs
into `<home>/state/s3/`; restoring puts both back into a freshly started moto before any
command reads them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

from contracts.layout import REPORTS_PREFIX, STAGING_PREFIX
from ingestion import constants as c
from ingestion.ledger import KIND_BATCH, KIND_INGEST, KIND_TABLE
from ingestion.naming import iso, utcnow
from wap.runtime.home import WapHome
from wap.runtime.ledger_db import LedgerDatabase, LedgerJournal, from_dynamo, pk_key, to_dynamo

# Artifacts worth keeping; `tables/` is uploaded from the tables directory on every start.
# staging/: the staged copies a queued or failed ingest still reads (a re-run, a rebase).
ARTIFACT_PREFIXES = (REPORTS_PREFIX, "logs/", STAGING_PREFIX)
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
    """Keeps the ledger (written through, `wap/runtime/ledger_db.py`) and the kept S3 objects of
    a running moto in a `WapHome`, and puts them back into a fresh one."""

    def __init__(
        self, home: WapHome, *, ledger_table: str, buckets: tuple[StoredBucket, ...]
    ) -> None:
        self.home = home
        self.ledger_table = ledger_table
        self.buckets = buckets
        self.database = LedgerDatabase(home.ledger_db)
        self.journal = LedgerJournal(self.database, ledger_table)
        _import_legacy_file(home, self.database)

    # ---- save ------------------------------------------------------------------------------

    def save(self, dynamodb: Any, s3: Any) -> None:
        """Write every kept object that is new or changed since the last save (the ledger
        is on disk already: every change was written through)."""
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

    def restore(
        self, dynamodb: Any, s3: Any, *, recover_interrupted: bool, nessie: Any = None
    ) -> list[str]:
        """Put the stored items and objects back, then write every later ledger change
        through; return the ingests found interrupted.

        Table lock items are dropped: no ingest runs when a command starts, so every table
        is free. With `recover_interrupted`, an ingest (or batch) a killed process left
        unfinished is recorded from what Nessie holds (`nessie`, a lambdas NessieClient):
        PUBLISHED when main holds its audited snapshot, else JOB_FAILED with the reason.
        """
        backend = _moto_backend(dynamodb)
        self.journal.attach(backend)  # history stays on disk until something asks for it
        locks = self.database.of_kinds([KIND_TABLE])
        if locks:
            self.database.write({}, [pk_key(item["pk"]["S"]) for item in locks])
        unfinished = (
            [
                from_dynamo(item)
                for item in self.database.of_kinds(
                    [KIND_INGEST, KIND_BATCH], except_statuses=c.TERMINAL_STATUSES
                )
            ]
            if recover_interrupted
            else []
        )
        recovered = _recovered(unfinished, nessie)
        if recovered:
            changed = {pk_key(item["pk"]): to_dynamo(item) for item in recovered}
            self.database.write(changed)
            for item in changed.values():
                backend.put_item(self.ledger_table, item)
        self.journal.install()
        for bucket in self.buckets:
            self._restore_bucket(s3, bucket.name)
        return [item["ingest_id"] for item in recovered if item.get("kind") == KIND_INGEST]

    def close(self) -> None:
        """Stop writing through (the items are on disk already)."""
        self.journal.uninstall()
        self.database.close()

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


def _recovered(unfinished: list[dict[str, Any]], nessie: Any) -> list[dict[str, Any]]:
    """The unfinished records as they end: published when main holds their audited
    snapshot (a batch's members with it), else failed as interrupted."""
    now = iso(utcnow())
    published: set[str] = set()
    for item in unfinished:
        if nessie is not None and _main_holds(nessie, item):
            published.add(item["ingest_id"])
    ended = []
    for item in unfinished:
        if item["ingest_id"] in published or item.get("batch_id") in published:
            fields = {"status": c.PUBLISHED, "error": None}
        else:
            fields = {"status": c.JOB_FAILED, "error": INTERRUPTED_REASON}
        ended.append({**item, **fields, "finished_at": now, "updated_at": now})
    return ended


def _main_holds(nessie: Any, item: dict[str, Any]) -> bool:
    from ingestion.ledger import record_from_item
    from ingestion.published import main_holds_ingest

    try:
        record = record_from_item(item)
        return main_holds_ingest(nessie, record.table, record)
    except Exception:  # Nessie cannot say: recorded as interrupted, as before
        return False


def _moto_backend(dynamodb: Any) -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][dynamodb.meta.client.meta.region_name]


def read_ledger_items(home: WapHome) -> list[dict[str, Any]]:
    """The home's ledger items as plain Python (tools, tests), in key order."""
    database = LedgerDatabase(home.ledger_db)
    try:
        _import_legacy_file(home, database)
        return [from_dynamo(item) for item in database.items()]
    finally:
        database.close()


def write_ledger_items(home: WapHome, items: list[dict[str, Any]]) -> None:
    """Put plain ledger items into the home (tools, tests that build a home by hand)."""
    database = LedgerDatabase(home.ledger_db)
    try:
        database.write({pk_key(item["pk"]): to_dynamo(item) for item in items})
    finally:
        database.close()


def _import_legacy_file(home: WapHome, database: LedgerDatabase) -> None:
    """A home written before the ledger database (`state/ledger.json`): its items move in
    once, and the file is renamed so they are not imported again."""
    legacy = home.ledger_file
    if not legacy.is_file():
        return
    items = json.loads(legacy.read_text(), parse_float=Decimal)
    database.write({pk_key(item["pk"]): to_dynamo(item) for item in items})
    os.replace(legacy, legacy.with_name(legacy.name + ".imported"))


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return default
