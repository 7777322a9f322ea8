"""A table config's `batch:` section: how many queued files one run may take.

Read by the Lambdas that hand a table to its next run (they coalesce the queue) and by
the Spark job's config parser (so a bad section is refused wherever the config is read).
Standard library only and Python 3.9-compatible, like the rest of `contracts`.

    batch:
      max_files: 500      # 1 = one file per run (the behaviour before batching)
      max_bytes: 1GiB     # bytes, or a number with B, KB, MB, GB, KiB, MiB, GiB
      marker_timeout: 24h # arrival: marker: how long part files wait for their marker
    arrival: marker       # event (default): each file on its own; marker: see docs/batches.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from contracts.fields import ContractError

DEFAULT_MAX_FILES = 500
DEFAULT_MAX_BYTES = 1024**3
DEFAULT_MARKER_TIMEOUT_SECONDS = 24 * 3600
ARRIVAL_EVENT, ARRIVAL_MARKER = "event", "marker"
ARRIVALS = (ARRIVAL_EVENT, ARRIVAL_MARKER)
# A manifest (one table's or a multi-table dataset's) is read whole, up to this size.
MAX_MANIFEST_BYTES = 10 * 1024 * 1024
_DURATION = re.compile(r"(\d+)\s*([smhd])")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_SIZE = re.compile(r"(\d+)\s*([a-z]*)")


class BatchConfigError(ContractError):
    """The `batch:` section of a table config is not valid (the message names the field)."""


@dataclass(frozen=True)
class BatchLimits:
    """The most files, and bytes, one run of a table takes from its queue.

    A run always takes at least one file, however large: `take` is the one definition of
    that rule (the Lambdas' queue_taker leaves it to `take`).
    """

    max_files: int = DEFAULT_MAX_FILES
    max_bytes: int = DEFAULT_MAX_BYTES
    marker_timeout_seconds: int = DEFAULT_MARKER_TIMEOUT_SECONDS

    @classmethod
    def from_config(cls, section: Any, where: str = "batch") -> BatchLimits:
        """Parse a config's `batch:` value (None: the defaults); raise BatchConfigError."""
        if section is None:
            return cls()
        if not isinstance(section, dict):
            raise BatchConfigError(
                f"{where}: expected a mapping with max_files and/or "
                f"max_bytes, got {type(section).__name__}"
            )
        unknown = sorted(set(section) - {"max_files", "max_bytes", "marker_timeout"})
        if unknown:
            raise BatchConfigError(f"{where}: unknown key(s) {unknown}")
        max_files = section.get("max_files", DEFAULT_MAX_FILES)
        if isinstance(max_files, bool) or not isinstance(max_files, int) or max_files < 1:
            raise BatchConfigError(
                f"{where}.max_files must be a whole number >= 1, got {max_files!r}"
            )
        return cls(
            max_files=max_files,
            max_bytes=parse_size(section.get("max_bytes", DEFAULT_MAX_BYTES), f"{where}.max_bytes"),
            marker_timeout_seconds=parse_duration(
                section.get("marker_timeout", DEFAULT_MARKER_TIMEOUT_SECONDS),
                f"{where}.marker_timeout",
            ),
        )

    def take(self, sizes: list[int]) -> int:
        """How many of the queued files (their sizes, in arrival order) one run takes:
        at least one of a non-empty queue, however large, then up to both limits."""
        taken, total = 0, 0
        for size in sizes:
            if taken >= self.max_files or (taken and total + size > self.max_bytes):
                break
            taken, total = taken + 1, total + size
        return taken


def parse_size(value: Any, where: str = "size") -> int:
    """`1GiB`, `500 MB`, `1048576` -> bytes; raise BatchConfigError for anything else."""
    return _quantity(
        value,
        _SIZE,
        {"": 1, **_UNITS},
        where,
        "a positive number of bytes such as 1048576, 500MB or 1GiB",
    )


def parse_duration(value: Any, where: str = "duration") -> int:
    """`90s`, `30m`, `6h`, `2d` or a number of seconds -> seconds; BatchConfigError else."""
    return _quantity(
        value, _DURATION, _DURATION_UNITS, where, "a duration such as 90s, 30m, 6h or 2d"
    )


def _quantity(value: Any, pattern: re.Pattern, units: dict, where: str, expected: str) -> int:
    """A positive whole number, or one with a unit of `units` (matched by `pattern`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1:
            return value
    elif isinstance(value, str):
        match = pattern.fullmatch(value.strip().lower())
        if match and match.group(2) in units and int(match.group(1)) >= 1:
            return int(match.group(1)) * units[match.group(2)]
    raise BatchConfigError(f"{where} must be {expected}, got {value!r}")


def parse_arrival(value: Any, where: str = "arrival") -> str:
    """`event` (the default, for None) or `marker`; BatchConfigError else."""
    if value is None:
        return ARRIVAL_EVENT
    if value not in ARRIVALS:
        raise BatchConfigError(f"{where} must be one of {', '.join(ARRIVALS)}, got {value!r}")
    return value
