"""The execution state as a task receives it, checked against `contracts.state`."""

from __future__ import annotations

from typing import Any

from contracts.state import ExecutionState, StateError
from ingestion.exceptions import InvalidEventError


def parse_state(event: Any, task: str) -> ExecutionState:
    """The state `task` was invoked with; InvalidEventError naming the bad field (the
    state machine does not retry it: the same input would fail again)."""
    try:
        return ExecutionState.from_dict(event, f"{task} input")
    except StateError as exc:
        raise InvalidEventError(str(exc)) from exc
