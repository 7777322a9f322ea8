"""Turn the two S3 "object created" event shapes into `ObjectCreated` records.

Powertools' data classes get key decoding the wrong way round (v3.37: the S3
notification `key` is returned still URL-encoded, the EventBridge `key` is
`unquote_plus`-ed although EventBridge delivers it decoded, which turns a
literal `+` into a space), so keys are read from the raw event here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_plus

from ingestion.exceptions import InvalidEventError
from ingestion.naming import iso


@dataclass(frozen=True)
class ObjectCreated:
    """One created S3 object, key decoded."""

    bucket: str
    key: str
    version_id: str | None
    etag: str | None
    size: int | None
    # S3's event time (`eventTime` / EventBridge `time`), to the second: when it was uploaded.
    uploaded_at: str | None = None

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
    # S3 notifications URL-encode keys, with `+` for a space.
    return _object_created(
        record,
        "s3",
        what="S3 notification record",
        decode_key=unquote_plus,
        version_field="versionId",
        etag_fields=("eTag",),
        time=record.get("eventTime"),
    )


def _from_eventbridge(event: Mapping[str, Any]) -> ObjectCreated | None:
    if event.get("detail-type") != "Object Created":
        return None
    # EventBridge delivers the key decoded.
    return _object_created(
        event,
        "detail",
        what="EventBridge S3 event",
        decode_key=_as_is,
        version_field="version-id",
        etag_fields=("etag", "eTag"),
        time=event.get("time"),
    )


def _as_is(key: Any) -> Any:
    return key


def _object_created(
    event: Mapping[str, Any],
    section: str,
    *,
    what: str,
    decode_key: Callable[[Any], Any],
    version_field: str,
    etag_fields: tuple[str, ...],
    time: Any = None,
) -> ObjectCreated:
    """The object in `event[section]` (its `bucket.name` and `object`), read the same way for
    both shapes; the ETag is the first of `etag_fields` that is set."""
    try:
        where = event[section]
        obj = where["object"]
        return ObjectCreated(
            bucket=where["bucket"]["name"],
            key=decode_key(obj["key"]),
            version_id=obj.get(version_field) or None,
            etag=next((obj[name] for name in etag_fields if obj.get(name)), None),
            size=int(obj["size"]) if obj.get("size") is not None else None,
            uploaded_at=_event_time(time),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"malformed {what}: {exc!r}") from exc


def _event_time(value: Any) -> str | None:
    """An event's ISO 8601 UTC time to the second (`...T10:15:00.123Z` -> `...T10:15:00Z`);
    None when absent or not such a time (it is only shown, never decided on)."""
    if not isinstance(value, str) or len(value) < 19 or not value.endswith("Z"):
        return None
    try:
        return iso(datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC))
    except ValueError:
        return None
