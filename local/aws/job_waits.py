"""The state machine's WaitForJob ends when the local EMR double has nothing left to run.

On AWS, WaitForJob sleeps PollIntervalSeconds between two job_status polls, and a job
runs for minutes. Locally a job takes milliseconds (the stand-in) to seconds (Spark), so
the fixed sleep was most of an orchestration test's time. Here that Wait ends at its full
length, as on AWS, or as soon as no job run of a local EMR double is queued or running:
the next poll then sees the run's outcome. The states and their order are those of the
definition; only the poll comes sooner. Other Wait states (the retry backoff) keep their
full length.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

WAIT_FOR_JOB = "WaitForJob"  # the poll's Wait state in statemachine/ingest.asl.json
_changed = threading.Condition()
_settled_probes: list[Callable[[], bool]] = []
_original: Any = None


def job_runs_changed() -> None:
    """Called by the EMR double when a job run settles: wake the waiting executions."""
    with _changed:
        _changed.notify_all()


def install(settled: Callable[[], bool]) -> None:
    """Patch moto's Wait states (once per process) and watch `settled` (an EMR double's)."""
    global _original
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function import wait_function

    with _changed:
        _settled_probes.append(settled)
        if _original is None:
            _original = wait_function.WaitFunction._wait_interval
            wait_function.WaitFunction._wait_interval = _wait_interval


def uninstall(settled: Callable[[], bool]) -> None:
    """Stop watching `settled` (the patch stays: without probes it waits in full)."""
    with _changed:
        if settled in _settled_probes:
            _settled_probes.remove(settled)


def _state_name(env: Any) -> str | None:
    try:
        return env.states.context_object.context_object_data["State"]["Name"]
    except (AttributeError, KeyError, TypeError):
        return None


def _wait_interval(self: Any, env: Any, wait_seconds: int) -> None:
    if _state_name(env) != WAIT_FOR_JOB:
        return _original(self, env, wait_seconds)
    deadline = time.monotonic() + wait_seconds
    with _changed:
        while env.is_running():
            if _settled_probes and all(probe() for probe in _settled_probes):
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            # Also re-check now and then: a run may settle without a notification (cancel).
            _changed.wait(min(left, 0.1))
    return None
