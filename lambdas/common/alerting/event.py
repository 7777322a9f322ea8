"""The alert event: the one definition, built by the functions that alert (through
`lambdas/common/alerts.py`) and parsed and checked where the alert Lambda receives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from lambdas.common.alerting.exceptions import AlertEventError

KNOWN_OUTCOMES = ("AUDIT_FAILED", "REJECTED", "JOB_FAILED", "PUBLISH_FAILED")

_REQUIRED = ("ingest_id", "table", "outcome")
_OPTIONAL = ("source_uri", "reason", "branch", "report_uri", "execution_arn", "log_uri")


@dataclass(frozen=True)
class AlertEvent:
    """What went wrong with one ingest; every optional field may be None."""

    ingest_id: str
    table: str
    outcome: str
    source_uri: str | None = None
    reason: str | None = None
    branch: str | None = None
    report_uri: str | None = None
    execution_arn: str | None = None
    log_uri: str | None = None

    @classmethod
    def from_dict(cls, event: Mapping[str, Any]) -> AlertEvent:
        """Build from the Lambda event; raise AlertEventError naming the first bad field."""
        if not isinstance(event, Mapping):
            raise AlertEventError(f"alert event must be a JSON object, got {type(event).__name__}")
        values: dict[str, str | None] = {}
        for name in _REQUIRED:
            value = event.get(name)
            if not isinstance(value, str) or not value.strip():
                raise AlertEventError(f"alert event field {name!r} must be a non-empty string")
            values[name] = value.strip()
        for name in _OPTIONAL:
            value = event.get(name)
            if value is not None and not isinstance(value, str):
                raise AlertEventError(
                    f"alert event field {name!r} must be a string or null, "
                    f"got {type(value).__name__}"
                )
            values[name] = value.strip() if value and value.strip() else None
        return cls(**values)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, str | None]:
        """The JSON object the alert Lambda receives (the state machine passes it on)."""
        return asdict(self)
