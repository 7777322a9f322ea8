"""The alert event: built by the functions that alert (finish, the trigger, the sweeper),
passed on by the state machine (`$.finish.alert`), checked where the alert Lambda takes it.

Besides failures, one warning: a drop PUBLISHED with rows set aside in its quarantine
table (issue 40) carries a `QuarantineNotice`; a clean publish alerts nobody.

And one about what did not happen (issue 42): a table (or dataset) with an `expect:`
section whose drop was not published by its deadline (LATE), and once more when a drop is
published again (RECOVERED); both carry an `ArrivalNotice`. Such an alert is about no
ingest: its `ingest_id` names the late episode, `late:<subject>:<missed deadline>`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from contracts.fields import ContractError, Reader
from contracts.lifecycle import FAILED_STATUSES, FINAL_STATUSES, PUBLISHED

ALERT_VERSION = 1
KNOWN_ALERT_VERSIONS = (1,)
# An alert reports a failed status (contracts/lifecycle.py), or BLOCKED: a table its next
# file cannot start on (the sweeper), or (a warning) PUBLISHED with rows quarantined.
BLOCKED = "BLOCKED"
# A table's expected drop was not published by its deadline (the sweeper), and the
# all-clear once one is (contracts/arrivals.py).
LATE = "LATE"
RECOVERED = "RECOVERED"
ARRIVAL_OUTCOMES = (LATE, RECOVERED)
KNOWN_OUTCOMES = (
    *(s for s in FINAL_STATUSES if s in FAILED_STATUSES),
    BLOCKED,
    PUBLISHED,
    *ARRIVAL_OUTCOMES,
)

_REQUIRED = ("ingest_id", "table", "outcome")
_OPTIONAL = ("source_uri", "reason", "branch", "report_uri", "execution_arn", "log_uri")


class AlertEventError(ContractError):
    """The alert event is missing a field or has a field of the wrong type."""


@dataclass(frozen=True)
class QuarantineNotice:
    """A drop published with rows set aside: how many rows went to the table(s), how many
    to their quarantine tables (`<ns>.<table>__quarantine`), and which those are."""

    rows_published: int
    rows_quarantined: int
    quarantine_tables: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: Any, where: str = "alert event.quarantine") -> QuarantineNotice:
        """Parse and check the notice; raise AlertEventError naming the bad field."""
        if not isinstance(data, Mapping):
            raise AlertEventError(f"{where} must be a JSON object, got {type(data).__name__}")
        read = Reader(data, where, AlertEventError)
        notice = cls(
            rows_published=read.integer("rows_published", minimum=0),
            rows_quarantined=read.integer("rows_quarantined", minimum=1),
            quarantine_tables=read.strings("quarantine_tables"),
        )
        if not notice.quarantine_tables:
            raise read.fail("quarantine_tables", "a non-empty list of table names")
        return notice

    def to_dict(self) -> dict[str, Any]:
        """The JSON object under the event's `quarantine`."""
        return {
            "rows_published": self.rows_published,
            "rows_quarantined": self.rows_quarantined,
            "quarantine_tables": list(self.quarantine_tables),
        }


@dataclass(frozen=True)
class ArrivalNotice:
    """A late (or recovered) table: what was expected, the deadline that was missed and
    when a drop was last published (ISO 8601 UTC; None: never on record)."""

    expected: str  # `daily by 06:00 Europe/Berlin` (ExpectedArrival.describe())
    deadline: str
    last_published_at: str | None = None

    @classmethod
    def from_dict(cls, data: Any, where: str = "alert event.arrival") -> ArrivalNotice:
        """Parse and check the notice; raise AlertEventError naming the bad field."""
        read = Reader(data, where, AlertEventError)
        notice = cls(
            expected=read.text("expected") or "",
            deadline=read.text("deadline") or "",
            last_published_at=read.text("last_published_at"),
        )
        for name in ("expected", "deadline"):
            if not getattr(notice, name).strip():
                raise read.fail(name, "a non-empty string")
        return notice

    def to_dict(self) -> dict[str, Any]:
        """The JSON object under the event's `arrival`."""
        return asdict(self)


@dataclass(frozen=True)
class AlertEvent:
    """What went wrong with one ingest (or, with `quarantine`, what it published and set
    aside); every optional field may be None."""

    ingest_id: str
    table: str
    outcome: str
    source_uri: str | None = None
    reason: str | None = None
    branch: str | None = None
    report_uri: str | None = None
    execution_arn: str | None = None
    log_uri: str | None = None
    # Only with outcome PUBLISHED, which needs it: the rows set aside (a warning).
    quarantine: QuarantineNotice | None = None
    # Only with outcome LATE or RECOVERED, which need it: the expected arrival.
    arrival: ArrivalNotice | None = None
    alert_version: int = ALERT_VERSION

    @classmethod
    def from_dict(cls, event: Any) -> AlertEvent:
        """Build from the event; raise AlertEventError naming the first bad field.

        Surrounding blanks are dropped and a blank optional field is None; an event
        without `alert_version` (built before it existed) is version 1.
        """
        if not isinstance(event, Mapping):
            raise AlertEventError(f"alert event must be a JSON object, got {type(event).__name__}")
        read = Reader(event, "alert event", AlertEventError)
        values: dict[str, Any] = {
            "alert_version": read.version("alert_version", KNOWN_ALERT_VERSIONS, default=1)
        }
        for name in _REQUIRED:
            value = event.get(name)
            if not isinstance(value, str) or not value.strip():
                raise read.fail(name, "a non-empty string")
            values[name] = value.strip()
        for name in _OPTIONAL:
            value = read.text(name)
            values[name] = value.strip() if value and value.strip() else None
        notice = read.mapping("quarantine")
        values["quarantine"] = None if notice is None else QuarantineNotice.from_dict(notice)
        if (values["outcome"] == PUBLISHED) != (notice is not None):
            raise read.fail(
                "quarantine",
                "present exactly when the outcome is PUBLISHED (rows set aside)",
            )
        arrival = read.mapping("arrival")
        values["arrival"] = None if arrival is None else ArrivalNotice.from_dict(arrival)
        if (values["outcome"] in ARRIVAL_OUTCOMES) != (arrival is not None):
            raise read.fail(
                "arrival", f"present exactly when the outcome is {' or '.join(ARRIVAL_OUTCOMES)}"
            )
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the alert Lambda receives (the state machine passes it on)."""
        event = asdict(self)
        event["quarantine"] = None if self.quarantine is None else self.quarantine.to_dict()
        event["arrival"] = None if self.arrival is None else self.arrival.to_dict()
        return event
