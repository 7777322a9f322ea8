"""Staged copies: the exact object version an ingest reads, frozen under its ingest id.

The source key may be overwritten (a user re-uploads a fixed file) while an
ingest waits in its table's queue; every reader (the job, a rebase re-run, a
retry) therefore reads `staging/<ingest id>/<file name>` in the artifacts bucket,
copied from the version the S3 event named. The source object is never modified.
"""

from __future__ import annotations

import hashlib
from typing import Any

from contracts.layout import STAGING_PREFIX, staged_key
from ingestion.exceptions import SourceVersionGoneError
from ingestion.naming import s3_uri, split_s3_uri

__all__ = ["STAGING_PREFIX"]  # infra grants by it
# Server-side copies: CopyObject up to this size, a managed multipart copy above it
# (parts copied in parallel, about 1 GB/s, so 100 GB fit the trigger's timeout).
_MULTIPART_THRESHOLD = 256 * 1024**2
_PART_SIZE = 256 * 1024**2
_CONCURRENCY = 16


def staged_uri(artifacts_bucket: str, ingest_id: str, key: str) -> str:
    """Where an ingest's staged copy lives."""
    return s3_uri(artifacts_bucket, staged_key(ingest_id, key))


def frozen_config_uri(artifacts_bucket: str, ingest_id: str, name: str, data: bytes) -> str:
    """Where a multi-table dataset's config, as its trigger read it, is kept for its runs:
    `staging/<batch id>/config-<digest>/<name>.yaml` (the file keeps its name: the job
    takes the dataset's name from it). The digest of the bytes makes the key the copy's
    own: two invocations that read different bytes never overwrite each other's."""
    digest = hashlib.sha256(data).hexdigest()[:16]
    return s3_uri(artifacts_bucket, f"{STAGING_PREFIX}{ingest_id}/config-{digest}/{name}.yaml")


def put_frozen(s3: Any, uri: str, data: bytes) -> None:
    """Write `data` at `uri` (a `frozen_config_uri`): the same bytes each time."""
    bucket, key = split_s3_uri(uri)
    s3.put_object(Bucket=bucket, Key=key, Body=data)


def stage_version(
    s3: Any, *, bucket: str, key: str, version_id: str | None, etag: str | None, target: str
) -> None:
    """Copy exactly `bucket/key` at `version_id` (or, unversioned, with `etag`) to `target`.

    Idempotent: the target is derived from the ingest id, so a retry rewrites the same
    bytes. Raises `SourceVersionGoneError` when that version cannot be had any more.
    """
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import ClientError

    source: dict[str, str] = {"Bucket": bucket, "Key": key}
    extra: dict[str, str] = {}
    if version_id:
        source["VersionId"] = version_id
    elif etag:
        extra["CopySourceIfMatch"] = f'"{etag.strip(chr(34))}"'
    target_bucket, target_key = split_s3_uri(target)
    config = TransferConfig(
        multipart_threshold=_MULTIPART_THRESHOLD,
        multipart_chunksize=_PART_SIZE,
        max_concurrency=_CONCURRENCY,
        use_threads=True,
    )
    try:
        s3.copy(source, target_bucket, target_key, ExtraArgs=extra or None, Config=config)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("NoSuchKey", "NoSuchVersion", "404", "PreconditionFailed", "412"):
            version = version_id or etag
            raise SourceVersionGoneError(
                f"version {version} of {s3_uri(bucket, key)} no longer exists "
                "(deleted or overwritten before it could be staged)"
            ) from exc
        raise


def delete_staged(s3: Any, uri: str) -> None:
    """Remove a staged copy (the sweeper does, once the ingest is final and its branch gone)."""
    bucket, key = split_s3_uri(uri)
    s3.delete_object(Bucket=bucket, Key=key)
