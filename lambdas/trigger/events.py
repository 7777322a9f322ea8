"""Turn the two S3 "object created" event shapes into `ObjectCreated` records.

Powertools' data classes get key decoding the wrong way round (v3.37: the S3
notification `key` is returned still URL-encoded, the EventBridge `key` is
`unquote_plus`-ed although EventBridge delivers it decoded, which turns a
literal `+` into a space), so keys are read from the raw event here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from lambdas.common.exceptions import InvalidEventError


@dataclass(frozen=True)
class ObjectCreated:
    """One created S3 object, key decoded."""

    bucket: str
    key: str
    version_id: str | None
    etag: str | None
    size: int | None

    @property
    def version(self) -> str:
        """The version id, or the ETag on unversioned buckets (the ingest id input)."""
        return self.version_id or (self.etag or "").strip('"')


def parse_event(event: Mapping[str, Any]) -> list[ObjectCreated]:
    """Objects created according to an S3 notification or an EventBridge event.

    Other S3 events (deletions, the `s3:TestEvent`) yield nothing; any other
    shape raises `InvalidEventError`.
    """
    if "Records" in event:
        return [obj for record in event["Records"] if (obj := _from_notification(record))]
    if event.get("source") == "aws.s3" and "detail" in event:
        obj = _from_eventbridge(event)
        return [obj] if obj else []
    if event.get("Event") == "s3:TestEvent":
        return []
    raise InvalidEventError("not an S3 notification or an EventBridge S3 event")


def _from_notification(record: Mapping[str, Any]) -> ObjectCreated | None:
    if record.get("eventSource") != "aws:s3":
        raise InvalidEventError(f"unexpected record source {record.get('eventSource')!r}")
    if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
        return None
    try:
        s3 = record["s3"]
        obj = s3["object"]
        return ObjectCreated(
            bucket=s3["bucket"]["name"],
            # S3 notifications URL-encode keys, with `+` for a space.
            key=unquote_plus(obj["key"]),
            version_id=obj.get("versionId") or None,
            etag=obj.get("eTag") or None,
            size=int(obj["size"]) if obj.get("size") is not None else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"malformed S3 notification record: {exc!r}") from exc


def _from_eventbridge(event: Mapping[str, Any]) -> ObjectCreated | None:
    if event.get("detail-type") != "Object Created":
        return None
    try:
        detail = event["detail"]
        obj = detail["object"]
        return ObjectCreated(
            bucket=detail["bucket"]["name"],
            key=obj["key"],  # EventBridge delivers the key decoded
            version_id=obj.get("version-id") or None,
            etag=obj.get("etag") or obj.get("eTag") or None,
            size=int(obj["size"]) if obj.get("size") is not None else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"malformed EventBridge S3 event: {exc!r}") from exc
