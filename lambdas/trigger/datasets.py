"""Datasets of `arrival: marker` tables: part files held until a marker completes them.

A Spark or Hive export writes `part-00000 ... part-00099` and then `_SUCCESS` (or a
`_manifest.json` listing the files and their sizes). For a table whose config says
`arrival: marker`, each part file is recorded and staged as it arrives but HELD; the
marker makes every file of its prefix one batch that is audited together and published
all together or not at all (docs/batches.md). The marker names the dataset's files
itself (S3's listing of the prefix, or the manifest), so events that arrive out of order
change nothing: a part whose own event comes late is recorded here first and its event
is then a duplicate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError

from contracts.batching import MAX_MANIFEST_BYTES
from contracts.layout import MANIFEST_MARKER, file_name, is_hidden_name, is_manifest_path
from ingestion import constants as c
from ingestion.config import Settings
from ingestion.ingest import start_or_fail
from ingestion.ledger import (
    LOCK_QUEUED,
    BatchRecord,
    Changes,
    IngestRecord,
    Ledger,
    Record,
)
from ingestion.lifecycle import settle_new, share
from ingestion.naming import ingest_id, iso, route_key, s3_uri, utcnow
from ingestion.nessie import NessieClient
from lambdas.trigger.events import ObjectCreated

# What a file of a dataset can be before its marker came: recorded, staged, waiting.
_JOINABLE = frozenset({c.HELD, c.RECEIVED})


class DatasetError(ValueError):
    """The marker cannot complete its dataset (the message says which file and why)."""


def dataset_prefix(key: str) -> str:
    """The folder a part file or marker is in: the dataset it belongs to."""
    return key.rsplit("/", 1)[0] + "/"


def complete_dataset(
    marker: ObjectCreated,
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    s3: Any,
    ingest_file: Callable[[ObjectCreated], IngestRecord],
) -> tuple[str, str, str | None]:
    """Turn the marker's dataset into one batch and start or queue it; safe to repeat.

    `ingest_file` records and stages one part file (the trigger's own path). Returns
    (action, batch id, reason): the batch's status after this call.
    """
    table = route_key(marker.key).qualified
    prefix = dataset_prefix(marker.key)
    batch_id = ingest_id(marker.bucket, marker.key, marker.version)
    batch = ledger.get_ingest(batch_id)
    if batch is None:
        try:
            parts, problem = _listed_parts(marker, s3)
        except DatasetError as exc:
            parts, problem = [], str(exc)
        members = [ingest_file(part) for part in parts]
        problem = problem or problem_of(members)
        batch = record_batch(settings, ledger, batch_id, table, prefix, marker, members, problem)
    if not batch.is_pending:
        return batch.status or "?", batch_id, batch.error
    if isinstance(batch, BatchRecord):  # a retry after a stop between record and join
        join_members(ledger, batch_id, batch.members)
    if ledger.acquire_or_enqueue(table, batch_id) == LOCK_QUEUED:
        ledger.update_ingest(batch_id, status=c.QUEUED, only_if_status={c.RECEIVED})
        return c.QUEUED, batch_id, None
    started = start_or_fail(settings, ledger, nessie, ledger.get_ingest(batch_id) or batch)
    return started.status or "?", batch_id, started.error


def _listed_parts(marker: ObjectCreated, s3: Any) -> tuple[list[ObjectCreated], str | None]:
    """The dataset's part files that exist, at the versions S3 has now: the manifest's, or
    every data file S3 lists under the prefix; and why the dataset cannot run (a listed
    file missing or of another size), or None."""
    prefix = dataset_prefix(marker.key)
    if file_name(marker.key) == MANIFEST_MARKER:
        listed = _manifest(marker, s3)
    else:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=marker.bucket, Prefix=prefix)
        listed = [
            (obj["Key"], None)
            for page in pages
            for obj in page.get("Contents", [])
            if not is_hidden_name(file_name(obj["Key"]))
        ]
    if not listed:
        raise DatasetError(
            f"{s3_uri(marker.bucket, marker.key)} completes no files: nothing under {prefix}"
        )
    return head_parts(marker, listed, s3)


def head_parts(
    marker: ObjectCreated,
    listed: list[tuple[str, int | None]],
    s3: Any,
) -> tuple[list[ObjectCreated], str | None]:
    """Each listed `(key, size)` at the version S3 has now, and why the dataset cannot run
    (a listed file missing or of another size than listed), or None."""
    parts, problems = [], []
    for key, size in listed:
        try:
            head = s3.head_object(Bucket=marker.bucket, Key=key)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) not in ("404", "NoSuchKey"):
                raise
            problems.append(f"{file_name(marker.key)} lists {key}, which does not exist")
            continue
        if size is not None and head["ContentLength"] != size:
            problems.append(
                f"{file_name(marker.key)} lists {key} with {size} bytes, but it "
                f"has {head['ContentLength']}"
            )
        parts.append(
            ObjectCreated(
                bucket=marker.bucket,
                key=key,
                version_id=head.get("VersionId"),
                etag=head.get("ETag", "").strip('"'),
                size=head["ContentLength"],
            )
        )
    return parts, "; ".join(problems) or None


def marker_bytes(marker: ObjectCreated, s3: Any) -> bytes:
    """The manifest's bytes at the event's version: at most MAX_MANIFEST_BYTES + 1 (enough
    to tell it is too large)."""
    extra = {"VersionId": marker.version_id} if marker.version_id else {}
    return s3.get_object(
        Bucket=marker.bucket, Key=marker.key, Range=f"bytes=0-{MAX_MANIFEST_BYTES}", **extra
    )["Body"].read()


def _manifest(marker: ObjectCreated, s3: Any) -> list[tuple[str, int]]:
    """`{"files": [{"path": "part-0.parquet", "size": 123}, ...]}`, paths relative to the
    manifest's folder; DatasetError naming what is wrong."""
    body = marker_bytes(marker, s3)
    where = s3_uri(marker.bucket, marker.key)
    try:
        if len(body) > MAX_MANIFEST_BYTES:
            raise ValueError(f"larger than {MAX_MANIFEST_BYTES} bytes")
        files = json.loads(body)["files"]
        entries = [(entry["path"], entry["size"]) for entry in files]
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(
            f"{where} is not a manifest like "
            '{"files": [{"path": "part-0.parquet", "size": 123}]}: '
            f"{exc}"
        ) from exc
    for path, size in entries:
        if not is_manifest_path(path) or not isinstance(size, int) or isinstance(size, bool):
            raise DatasetError(
                f"{where}: entry {path!r} needs a relative path to a data "
                "file (not _ or . prefixed) and a size in bytes"
            )
    return [(dataset_prefix(marker.key) + path, size) for path, size in entries]


def problem_of(members: list[IngestRecord]) -> str | None:
    """Why the dataset cannot run: one of its files was rejected (all or nothing)."""
    for member in members:
        if member.status not in _JOINABLE:
            return (
                f"{member.key} is {member.status}"
                + (f": {member.error}" if member.error else "")
                + "; the dataset is published all together or not at all"
            )
    return None


def join_members(
    ledger: Ledger, batch_id: str, members: Sequence[str], problem: str | None = None
) -> None:
    """Make the files the dataset's (RUNNING in it, or REJECTED with its `problem`, which
    the dataset announces): only those still waiting are changed, so it is safe to repeat
    (a retried trigger does, in case the one before stopped between recording the dataset
    and joining its files)."""
    if problem:
        rejected = Changes(
            status=c.REJECTED, batch_id=batch_id, error=problem, finished_at=iso(utcnow())
        )
        share(ledger, dict.fromkeys(members, rejected), only_if_status=_JOINABLE)
        return
    joined = Changes(status=c.RUNNING, batch_id=batch_id, error=None, finished_at=None)
    ledger.update_ingests(dict.fromkeys(members, joined), only_if_status=_JOINABLE)


def record_batch(
    settings: Settings,
    ledger: Ledger,
    batch_id: str,
    table: str | None,
    prefix: str,
    marker: ObjectCreated,
    members: list[IngestRecord],
    problem: str | None,
    extra: dict[str, Any] | None = None,
) -> Record:
    """The dataset's batch record (created once, with `extra` fields), its members joined
    to it; a dataset that cannot run is recorded REJECTED with its files, announced once."""
    ids = [member.ingest_id for member in members]
    recorded = BatchRecord(
        **(extra or {}),
        ingest_id=batch_id,
        table=table,
        members=tuple(ids),
        sources=tuple(member.staged_uri for member in members),
        files=len(ids),
        dataset=prefix,
        all_or_nothing=True,
        source_uri=s3_uri(marker.bucket, prefix),
        marker_uri=s3_uri(marker.bucket, marker.key),
        size=sum(int(member.size or 0) for member in members),
        sizes=tuple(int(member.size or 0) for member in members),
        attempts=0,
        status=c.RECEIVED,
        staged_at=iso(utcnow()),
    )
    if problem:
        settle_new(settings, ledger, recorded, c.REJECTED, problem)
    else:
        ledger.create_ingest(recorded)
    join_members(ledger, batch_id, ids, problem)
    batch = ledger.get_ingest(batch_id)
    assert batch is not None
    return batch
