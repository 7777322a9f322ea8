"""Static guarantees of statemachine/ingest.asl.json (the file CDK deploys)."""

from __future__ import annotations

import json
import re

import pytest

from infra.constants import FunctionSpec
from local.aws.intrinsics import UnresolvedIntrinsic, substitute_definition
from tests.fixtures.paths import REPO

ASL = REPO / "statemachine" / "ingest.asl.json"
CONTRACT_SUBSTITUTIONS = {
    "JobStatusFunctionArn",
    "PublishFunctionArn",
    "AlertFunctionArn",
    "FinishFunctionArn",
    "RetryJobFunctionArn",
}


@pytest.fixture(scope="module")
def definition() -> dict:
    return json.loads(ASL.read_text())


def test_file_is_valid_json_before_substitution(definition):
    assert definition["StartAt"] in definition["States"]


def test_substitutions_are_the_contract_names_plus_timing():
    names = set(re.findall(r"\$\{([A-Za-z0-9]+)\}", ASL.read_text()))
    assert names == CONTRACT_SUBSTITUTIONS | {"PollIntervalSeconds", "JobTimeoutSeconds"}
    assert FunctionSpec("job_status", frozenset()).substitution == "JobStatusFunctionArn"


def test_substitution_refuses_unknown_names():
    with pytest.raises(UnresolvedIntrinsic):
        substitute_definition(ASL.read_text(), {"PollIntervalSeconds": "1"})


def test_every_task_catches_everything(definition):
    for name, state in definition["States"].items():
        if state["Type"] == "Task":
            catches = [c for c in state.get("Catch", []) if "States.ALL" in c["ErrorEquals"]]
            assert catches, f"{name} has no Catch for States.ALL"


def test_every_path_reaches_finish_before_ending(definition):
    """Walk the graph: every terminal state is only reachable through Finish (or is its Fail)."""
    states = definition["States"]

    def successors(state: dict) -> list[str]:
        nxt = [state["Next"]] if "Next" in state else []
        nxt += [c["Next"] for c in state.get("Choices", [])]
        nxt += [state["Default"]] if "Default" in state else []
        nxt += [c["Next"] for c in state.get("Catch", [])]
        return nxt

    # Paths from the start that avoid Finish must never end.
    seen, stack = set(), [definition["StartAt"]]
    while stack:
        name = stack.pop()
        if name in seen or name == "Finish":
            continue
        seen.add(name)
        state = states[name]
        assert state["Type"] not in ("Succeed", "Fail") and not state.get("End"), (
            f"{name} ends the execution without passing Finish"
        )
        stack.extend(successors(state))
    assert "Finish" in {n for s in seen for n in successors(states[s])}


def test_alert_failures_cannot_fail_the_execution(definition):
    alert = definition["States"]["Alert"]
    [catch] = alert["Catch"]
    assert definition["States"][catch["Next"]]["Type"] in ("Pass", "Succeed")
