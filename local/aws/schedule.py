"""The template's schedule rules (the sweeper's, the maintenance run's), run locally as
EventBridge would.

Each `AWS::Events::Rule` with a `ScheduleExpression` invokes its Lambda target
asynchronously at the rule's rate; tests scale the rate down (`every_seconds`), the
rule and its target stay the template's.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_log = logging.getLogger(__name__)
_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
# Every day at one time (the maintenance run's, `maintenanceTimeUtc`): minute and hour set,
# every day of every month and year.
_DAILY_CRON = re.compile(r"^cron\((\d{1,2}) (\d{1,2}) \* \* \? \*\)$")


class ScheduleError(ValueError):
    """A schedule expression the local stack cannot run (the message says which)."""


def rate_seconds(expression: str) -> int:
    """Seconds between two runs of `rate(N unit)` or of a daily `cron(M H * * ? *)` (run
    locally once a day from the stack's start, not at that time of day)."""
    if _DAILY_CRON.match(expression.strip()):
        return _UNIT_SECONDS["day"]
    match = _RATE.match(expression.strip())
    if not match:
        raise ScheduleError(
            f"unsupported schedule expression {expression!r}: expected rate() or a daily cron()"
        )
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).rstrip("s")]


@dataclass(frozen=True)
class ScheduledTarget:
    """One rule's Lambda target and how often it runs."""

    rule: str
    function: str
    every_seconds: float


class LocalSchedule:
    """Runs each target every `every_seconds` on a thread of its own until `stop()`."""

    def __init__(self, invoke_async: Callable[[str, Any], Any]) -> None:
        self._invoke_async = invoke_async
        self.targets: list[ScheduledTarget] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def add(self, target: ScheduledTarget) -> None:
        self.targets.append(target)

    def start(self) -> None:
        self._stop.clear()
        for target in self.targets:
            thread = threading.Thread(
                target=self._run, args=(target,), daemon=True, name=f"schedule-{target.rule}"
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()

    def _run(self, target: ScheduledTarget) -> None:
        while not self._stop.wait(target.every_seconds):
            event = {
                "source": "aws.events",
                "detail-type": "Scheduled Event",
                "resources": [target.rule],
                "detail": {},
            }
            try:
                self._invoke_async(target.function, event)
            except Exception:  # a stopped dispatcher: the stack is going down
                _log.exception("scheduled invocation of %s failed", target.function)
