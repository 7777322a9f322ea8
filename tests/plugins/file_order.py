"""Slowest test files first, so that xdist's workers finish together.

`--dist loadfile` hands out whole files in collection order. When a one-minute file comes
last, two workers idle while the third finishes it; ordered longest first (the classic
longest-processing-time rule) the run ends close to total work / workers. The costs are
each file's seconds in one run of the suite (tests/file_costs.json; only their order
matters); a file not listed there counts as the median file. Refresh the list after a
run with `--durations=0`:

    .venv/bin/python -m tests.plugins.file_order LOG > tests/file_costs.json
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

import pytest

COSTS = Path(__file__).resolve().parent.parent / "file_costs.json"
_DURATION = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+([^:\s]+)::")


def file_costs() -> dict[str, float]:
    """Seconds per test file (path from the repository root) in a recorded run."""
    try:
        return json.loads(COSTS.read_text())
    except (OSError, ValueError):
        return {}


@pytest.hookimpl(tryfirst=True)  # before conftest's `suite_end` sort, which must stay last
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    costs = file_costs()
    default = statistics.median(costs.values()) if costs else 0.0

    def cost(item: pytest.Item) -> float:
        return costs.get(item.nodeid.split("::", 1)[0], default)

    items.sort(key=lambda item: -cost(item))  # stable: a file's tests keep their order


def costs_from_durations(log: str) -> dict[str, float]:
    """Per-file seconds from the `slowest durations` section of a `--durations=0` run."""
    seconds: Counter[str] = Counter()
    for line in log.splitlines():
        match = _DURATION.match(line)
        if match:
            seconds[match.group(2)] += float(match.group(1))
    return {path: round(total, 1) for path, total in sorted(seconds.items())}


if __name__ == "__main__":
    print(json.dumps(costs_from_durations(Path(sys.argv[1]).read_text()), indent=1))
