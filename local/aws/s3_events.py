"""S3 -> EventBridge -> Lambda for moto: "Object Created" events reach the trigger.

moto builds S3's EventBridge events but its EventBridge cannot deliver to a
Lambda target (and sends to every rule unfiltered). This bridge replaces
moto's `_send_event_bridge_message`: it builds the event as S3 does on AWS
(decoded key, lower-case `etag`, ISO time), matches it against the default
bus' rules and invokes each Lambda target asynchronously (with AWS' two
retries) through the in-process dispatcher.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from local.aws.lambda_dispatch import LambdaDispatcher


def object_created_event(
    account_id: str,
    region: str,
    bucket: str,
    key: str,
    size: int,
    etag: str,
    version_id: str | None,
    reason: str = "PutObject",
) -> dict[str, Any]:
    """An EventBridge "Object Created" event exactly as S3 emits it."""
    obj: dict[str, Any] = {
        "key": key,
        "size": size,
        "etag": etag.strip('"'),
        "sequencer": uuid.uuid4().hex[:16].upper(),
    }
    if version_id and version_id != "null":
        obj["version-id"] = version_id
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": account_id,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": obj,
            "request-id": uuid.uuid4().hex[:16].upper(),
            "requester": account_id,
            "source-ip-address": "127.0.0.1",
            "reason": reason,
        },
    }


class S3EventBridge:
    """Patch moto's S3 -> EventBridge hand-off to deliver to Lambda targets in-process."""

    def __init__(self, dispatcher: LambdaDispatcher) -> None:
        self._dispatcher = dispatcher
        self._original: Any = None
        self.delivered: list[dict[str, Any]] = []

    def install(self) -> None:
        import moto.s3.notifications as notifications

        self._original = notifications._send_event_bridge_message
        notifications._send_event_bridge_message = self._send

    def uninstall(self) -> None:
        import moto.s3.notifications as notifications

        if self._original is not None:
            notifications._send_event_bridge_message = self._original
            self._original = None

    def _send(self, account_id: str, bucket: Any, event_name: str, key: Any) -> None:
        if "ObjectCreated" not in event_name:
            return
        event = object_created_event(
            account_id,
            bucket.region_name,
            bucket.name,
            key.name,
            key.size,
            key.etag,
            key.version_id,
            reason=event_name.split(":")[-1].replace("Put", "PutObject"),
        )
        self.deliver(account_id, bucket.region_name, event)

    def deliver(self, account_id: str, region: str, event: dict[str, Any]) -> int:
        """Send `event` to the Lambda targets of matching rules; returns how many."""
        from moto.events.models import events_backends

        count = 0
        backend = events_backends[account_id][region]
        for bus in backend.event_buses.values():
            for rule in bus.rules.values():
                if rule.state != "ENABLED" or not rule.event_pattern.matches_event(event):
                    continue
                for target in rule.targets:
                    arn = target["Arn"]
                    if ":lambda:" in arn:
                        self.delivered.append(event)
                        self._dispatcher.invoke_async(arn.rsplit(":", 1)[-1], event)
                        count += 1
        return count
