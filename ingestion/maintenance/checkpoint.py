"""Where a garbage collection that ran out of time keeps its mark for the next run
(`GcReport.checkpoint`): beside the summary, `<reports prefix>maintenance/gc-checkpoint.json.gz`.

A checkpoint only ever keeps files (see `gc.collect`), but one too old would keep, day
after day, what its references have since let go: past `MAX_AGE` a run starts over.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta
from typing import Any

from ingestion.log import logger
from ingestion.maintenance.gc import CHECKPOINT_VERSION
from ingestion.naming import split_s3_uri

CHECKPOINT_NAME = "maintenance/gc-checkpoint.json.gz"  # under the reports prefix
MAX_AGE = timedelta(days=2)


def checkpoint_uri(reports_prefix: str) -> str:
    return f"{reports_prefix.rstrip('/')}/{CHECKPOINT_NAME}"


def load(s3: Any, reports_prefix: str, now: datetime) -> dict[str, Any] | None:
    """The checkpoint to continue from; None when there is none, it was finished, is too
    old or does not read (the run then starts over, which is always safe)."""
    from botocore.exceptions import ClientError

    bucket, key = split_s3_uri(checkpoint_uri(reports_prefix))
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        # Never written yet: S3 answers 403, not 404, to a role that may not list the
        # bucket (the maintenance function's may not).
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "AccessDenied", "404", "403"):
            return None
        raise
    try:
        document = json.loads(gzip.decompress(body))
        if not document or document.get("checkpoint_version") != CHECKPOINT_VERSION:
            return None
        started = datetime.fromisoformat(document["started"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        logger.warning("garbage collection checkpoint unreadable: starting over")
        return None
    if now - started > MAX_AGE:
        logger.info("garbage collection checkpoint too old: starting over")
        return None
    return document


def keep(s3: Any, reports_prefix: str, checkpoint: dict[str, Any] | None) -> None:
    """Put `checkpoint` for the next run, or (None) mark the last one finished: the
    function may put under maintenance/ but deletes nothing there."""
    bucket, key = split_s3_uri(checkpoint_uri(reports_prefix))
    s3.put_object(
        Bucket=bucket,
        Key=key,
        ContentType="application/json",
        ContentEncoding="gzip",
        Body=gzip.compress(json.dumps(checkpoint or {}).encode()),
    )
