"""ISO-8601 dates and timestamps as table configs write them, parsed the same on every Python.

`datetime.fromisoformat` differs between versions: EMR's Python 3.9 refuses a trailing `Z`
and fractions other than 3 or 6 digits, which 3.11 accepts. A bound like
`max: "2026-01-01T00:00:00Z"` must mean the same in the job on EMR as in local runs.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

_TIMESTAMP = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    r"(?:[T ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d{1,9}))?)?"
    r"(?P<offset>[Zz]|[+-]\d{2}(?::?\d{2})?)?)?"
)
FORMAT_HINT = "YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS[.ffffff]] with an optional Z or +HH:MM"


def parse_timestamp(text: str) -> date | datetime:
    """A date (`2026-01-31`) or a datetime (aware when it has `Z` or an offset, else naive).

    Fractions beyond microseconds are truncated. Raises ValueError naming the expected form.
    """
    match = _TIMESTAMP.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not an ISO-8601 date or timestamp ({FORMAT_HINT})")
    part = match.groupdict()
    try:
        day = date(int(part["year"]), int(part["month"]), int(part["day"]))
        if part["hour"] is None:
            return day
        fraction = (part["fraction"] or "").ljust(6, "0")[:6]
        at = datetime(
            day.year,
            day.month,
            day.day,
            int(part["hour"]),
            int(part["minute"]),
            int(part["second"] or 0),
            int(fraction or 0),
        )
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a valid date or timestamp: {exc}") from None
    offset = part["offset"]
    if offset is None:
        return at
    return at.replace(tzinfo=_zone(offset, text))


def parse_date(text: str) -> date:
    """A date only (`2026-01-31`); a timestamp is refused."""
    value = parse_timestamp(text)
    if isinstance(value, datetime):
        raise ValueError(f"{text!r} is a timestamp; a date is YYYY-MM-DD")
    return value


def parse_datetime(text: str) -> datetime:
    """A timestamp; a date alone means its midnight."""
    value = parse_timestamp(text)
    return value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)


def _zone(offset: str, text: str) -> timezone:
    if offset in ("Z", "z"):
        return timezone.utc  # noqa: UP017 (datetime.UTC is 3.11+; the job runs on EMR's 3.9)
    sign = -1 if offset[0] == "-" else 1
    digits = offset[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"{text!r}: bad UTC offset {offset!r}")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))
