"""When a table's (or a dataset's) drops are expected: the `expect:` section of its config
(issue 42), and whether it is late at a given time.

    expect:
      every: 1d            # a drop each day (or 1h, 2h, 3h, 4h, 6h, 8h, 12h; 5m ... 30m)
      by: "06:00"          # published by 06:00 of that day (quote it: YAML reads 06:00 as 360)
      timezone: Europe/Berlin
      days: [mon, tue, wed, thu, fri]   # optional, with every: 1d only

Periods follow the wall clock of `timezone` (default UTC), from local midnight: with
`every: 1d` each local day is one period, with `every: 6h` the periods start at 00:00,
06:00, 12:00 and 18:00. Each period's drop must be *published* (on main, not held,
failed or rejected) between the period's start and its deadline: `by` after the start, or
the period's end when `by` is not given. A table is late from a missed deadline until a
drop is published again; a drop published late still ends the lateness.

The time zone data is the system's (`zoneinfo`, standard library): a zone it does not know
is refused; where no zone data is installed at all only the name's shape is checked.
Standard library only, Python 3.9-compatible, like the rest of `contracts`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from contracts.fields import ContractError

EXPECT_KEYS = ("every", "by", "timezone", "days")
DEFAULT_TIMEZONE = "UTC"
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_SECONDS = 86400
_EVERY = re.compile(r"^(\d+)\s*([mhd])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": _DAY_SECONDS}
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_UTC = timezone.utc  # noqa: UP017 (datetime.UTC is 3.11+; the job runs on EMR's 3.9)
_ZONE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$")


class ExpectConfigError(ContractError):
    """The `expect:` section is invalid; the message names the file and the option."""


@dataclass(frozen=True)
class ExpectedArrival:
    """The `expect:` section: a period (`every`, seconds, dividing a day), the deadline
    within it (`by`, seconds after the period's start; None: the period's end), the
    time zone of the wall clock, and (daily only) the weekdays with a drop (0 = Monday;
    empty: every day)."""

    every_seconds: int
    by_seconds: int | None = None
    timezone: str = DEFAULT_TIMEZONE
    days: tuple[int, ...] = ()

    def describe(self) -> str:
        """How a person says it: `daily by 06:00 Europe/Berlin`, `every 6h`, ..."""
        if self.every_seconds == _DAY_SECONDS:
            when = "daily"
            if self.days:
                when = "daily on " + ", ".join(WEEKDAYS[d] for d in self.days)
        else:
            when = f"every {_every_text(self.every_seconds)}"
        if self.by_seconds is not None:
            when += f" by {_clock_text(self.by_seconds)}"
        return f"{when} {self.timezone}" if self.timezone != DEFAULT_TIMEZONE else f"{when} UTC"

    def zone(self) -> Any:
        """The tzinfo of `timezone` (UTC when the system has no zone data)."""
        return load_zone(self.timezone)

    def last_deadline(self, now: datetime) -> Deadline | None:
        """The latest deadline at or before `now` (aware), with its period's start; None
        when there was none in the last 8 days (cannot happen for a valid section)."""
        zone = self.zone()
        local = now.astimezone(zone)
        day = local.date()
        per_day = _DAY_SECONDS // self.every_seconds
        for back in range(9):
            current = day - timedelta(days=back)
            if self.days and current.weekday() not in self.days:
                continue
            for index in reversed(range(per_day)):
                start_offset = index * self.every_seconds
                due_offset = start_offset + (
                    self.by_seconds if self.by_seconds is not None else self.every_seconds
                )
                due = _wall(current, due_offset, zone)
                if due <= now:
                    return Deadline(start=_wall(current, start_offset, zone), due=due)
        return None

    def freshness(self, last_published: datetime | None, now: datetime) -> Freshness:
        """Whether a drop was published for the latest deadline at or before `now`: late
        when the newest publish (None: never) is before that deadline's period started."""
        deadline = self.last_deadline(now)
        late = deadline is not None and (last_published is None or last_published < deadline.start)
        return Freshness(
            expected=self.describe(),
            last_published=last_published,
            deadline=deadline,
            late=late,
        )

    def local_text(self, moment: datetime) -> str:
        """`2026-11-25 06:02` on this section's wall clock."""
        return moment.astimezone(self.zone()).strftime("%Y-%m-%d %H:%M")


@dataclass(frozen=True)
class Deadline:
    """One period's deadline (`due`) and the start of its period, both aware."""

    start: datetime
    due: datetime


@dataclass(frozen=True)
class Freshness:
    """A subject's (table's or dataset's) arrivals at one moment."""

    expected: str  # ExpectedArrival.describe()
    last_published: datetime | None
    deadline: Deadline | None  # the latest one passed
    late: bool


def parse_expect(value: Any, where: str = "expect") -> ExpectedArrival | None:
    """The `expect:` section (None when absent); ExpectConfigError naming the option."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ExpectConfigError(
            f'{where}: expected a mapping such as {{every: 1d, by: "06:00"}}, '
            f"got {type(value).__name__}"
        )
    unknown = sorted(set(value) - set(EXPECT_KEYS))
    if unknown:
        raise ExpectConfigError(
            f"{where}: unknown option(s) {unknown}; known: {', '.join(EXPECT_KEYS)}"
        )
    if "every" not in value:
        raise ExpectConfigError(f"{where}: `every` is required (1d, 6h, 30m, ...)")
    every = _parse_every(value["every"], f"{where}.every")
    by = _parse_by(value.get("by"), every, f"{where}.by")
    zone = _parse_timezone(value.get("timezone", DEFAULT_TIMEZONE), f"{where}.timezone")
    days = _parse_days(value.get("days"), every, f"{where}.days")
    return ExpectedArrival(every_seconds=every, by_seconds=by, timezone=zone, days=days)


def load_zone(name: str) -> Any:
    """The tzinfo named `name`; UTC for `UTC` or when the system has no zone data at all;
    ExpectConfigError for a zone the system's data does not have."""
    if name == DEFAULT_TIMEZONE:
        return _UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        if _has_zone_data():
            raise ExpectConfigError(
                f"unknown time zone {name!r} (an IANA name such as Europe/Berlin)"
            ) from exc
        return _UTC


def _has_zone_data() -> bool:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo("Etc/UTC")
    except ZoneInfoNotFoundError:
        return False
    return True


def _wall(day: date, offset_seconds: int, zone: Any) -> datetime:
    """The aware moment `offset_seconds` of wall clock after `day`'s midnight in `zone`
    (a time in a DST gap or overlap is taken at its first reading: fold 0)."""
    extra_days, seconds = divmod(offset_seconds, _DAY_SECONDS)
    on = day + timedelta(days=extra_days)
    wall = datetime.combine(on, time(seconds // 3600, seconds % 3600 // 60), tzinfo=zone)
    return wall.astimezone(_UTC)


def _parse_every(value: Any, where: str) -> int:
    match = _EVERY.match(str(value).strip().lower()) if isinstance(value, str) else None
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)] if match else 0
    if seconds <= 0 or seconds > _DAY_SECONDS or _DAY_SECONDS % seconds or seconds % 60:
        raise ExpectConfigError(
            f"{where} must be 1d, or hours or minutes that divide a day evenly "
            f"(1h, 2h, 3h, 4h, 6h, 8h, 12h; 5m, 10m, 15m, 20m, 30m), got {value!r}"
        )
    return seconds


def _parse_by(value: Any, every: int, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        raise ExpectConfigError(
            f'{where}: write the time in quotes, e.g. by: "06:00" (YAML reads an '
            f"unquoted 06:00 as the number {value})"
        )
    match = _CLOCK.match(value.strip()) if isinstance(value, str) else None
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise ExpectConfigError(f'{where} must be a time of day "HH:MM", got {value!r}')
    seconds = int(match.group(1)) * 3600 + int(match.group(2)) * 60
    if seconds == 0 or seconds > every:
        raise ExpectConfigError(
            f"{where} is the deadline after each period's start: more than 00:00 and at "
            f"most the period ({_every_text(every)}), got {value!r}"
        )
    return seconds


def _parse_timezone(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _ZONE_NAME.match(value.strip()):
        raise ExpectConfigError(
            f"{where} must be an IANA time zone name such as Europe/Berlin, got {value!r}"
        )
    name = value.strip()
    try:
        load_zone(name)
    except ExpectConfigError as exc:
        raise ExpectConfigError(f"{where}: {exc}") from exc
    return name


def _parse_days(value: Any, every: int, where: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if every != _DAY_SECONDS:
        raise ExpectConfigError(f"{where} goes with every: 1d only")
    names = [str(day).strip().lower()[:3] for day in value] if isinstance(value, list) else []
    if not names or any(name not in WEEKDAYS for name in names):
        raise ExpectConfigError(
            f"{where} must list weekdays ({', '.join(WEEKDAYS)}), got {value!r}"
        )
    return tuple(sorted({WEEKDAYS.index(name) for name in names}))


def _every_text(seconds: int) -> str:
    if seconds % _DAY_SECONDS == 0:
        return f"{seconds // _DAY_SECONDS}d"
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    return f"{seconds // 60}m"


def _clock_text(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"
