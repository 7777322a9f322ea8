"""GetExecutionHistory answers one page as Step Functions does (maxResults, reverseOrder,
nextToken), not moto's whole history (local/aws/moto_fidelity.py); and `wap`'s progress
line reads the state an ingest is in from the newest page only (wap/ops/backend.py)."""

from __future__ import annotations

import json
import time
from itertools import pairwise

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local.aws.moto_fidelity import page_execution_histories
from wap.ops.backend import STEP_PAGE_SIZE, Backend

ROLE = "arn:aws:iam::123456789012:role/sfn"
INGEST_ID = "0123456789abcdef"  # executions are named after their ingest
# 50 Pass states one after another: 102 events (started, entered and exited x 50, succeeded),
# more than the default page of 100.
STEPS = [f"Step{i}" for i in range(50)]
STATES = {name: {"Type": "Pass", "Next": after} for name, after in pairwise(STEPS)}
STATES[STEPS[-1]] = {"Type": "Pass", "End": True}
DEFINITION = json.dumps({"StartAt": STEPS[0], "States": STATES})


@pytest.fixture(scope="module")
def history():
    """A client, and the ARN of an execution that ran all 50 states."""
    page_execution_histories()
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="eu-west-1")
        machine = sfn.create_state_machine(name="steps", definition=DEFINITION, roleArn=ROLE)
        arn = sfn.start_execution(stateMachineArn=machine["stateMachineArn"], name=INGEST_ID)[
            "executionArn"
        ]
        deadline = time.monotonic() + 30
        while sfn.describe_execution(executionArn=arn)["status"] == "RUNNING":
            assert time.monotonic() < deadline, "the execution did not end"
            time.sleep(0.01)
        yield sfn, arn


def _all_pages(sfn, arn: str, **params) -> list[list[int]]:
    pages, token = [], None
    while True:
        more = {"nextToken": token} if token else {}
        answer = sfn.get_execution_history(executionArn=arn, **params, **more)
        pages.append([event["id"] for event in answer["events"]])
        token = answer.get("nextToken")
        if token is None:
            return pages


def test_a_page_holds_max_results_events_and_the_tokens_lead_through_the_rest(history):
    sfn, arn = history
    pages = _all_pages(sfn, arn, maxResults=40)
    ids = [i for page in pages for i in page]
    assert [len(page) for page in pages] == [40, 40, 22]
    assert ids == sorted(ids) and len(ids) == len(set(ids)) == 102  # oldest first, each once


def test_reverse_order_pages_from_the_newest_event(history):
    sfn, arn = history
    [newest, *_] = _all_pages(sfn, arn, maxResults=2, reverseOrder=True)
    assert newest == [102, 101]
    first = sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=3)
    entered = [e for e in first["events"] if "stateEnteredEventDetails" in e]
    assert entered[0]["stateEnteredEventDetails"]["name"] == STEPS[-1]


def test_without_max_results_a_page_is_100_events_and_more_than_1000_is_refused(history):
    sfn, arn = history
    assert [len(page) for page in _all_pages(sfn, arn)] == [100, 2]
    with pytest.raises(ClientError) as refused:
        sfn.get_execution_history(executionArn=arn, maxResults=1001)
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_a_token_of_another_order_or_made_up_is_invalid(history):
    sfn, arn = history
    token = sfn.get_execution_history(executionArn=arn, maxResults=2)["nextToken"]
    for bad in ({"nextToken": token, "reverseOrder": True}, {"nextToken": "bm90IGEgdG9rZW4="}):
        with pytest.raises(ClientError) as refused:
            sfn.get_execution_history(executionArn=arn, maxResults=2, **bad)
        assert refused.value.response["Error"]["Code"] == "InvalidToken"


class _Executions(Backend):
    """A backend with a state machine and nothing else (what current_step reads)."""

    source_bucket = "unused"

    def __init__(self, sfn, machine_arn: str) -> None:
        super().__init__(ledger=None, nessie=None)
        self._sfn, self._machine_arn = sfn, machine_arn

    def s3(self):
        raise AssertionError("current_step reads no S3")

    def iceberg_properties(self) -> dict[str, str]:
        return {}

    def state_machine_arn(self) -> str:
        return self._machine_arn

    def sfn(self):
        return self._sfn


def test_the_current_step_is_read_from_the_newest_page_of_the_history(history):
    sfn, arn = history
    machine_arn = arn.replace(":execution:", ":stateMachine:").rsplit(":", 1)[0]
    asked: list[dict] = []
    sfn.meta.events.register(
        "provide-client-params.states.GetExecutionHistory",
        lambda params, **_: asked.append(dict(params)),
    )

    assert _Executions(sfn, machine_arn).current_step(INGEST_ID) == STEPS[-1]
    # One page of the newest events, without their input and output: not the 102 events.
    assert asked == [
        {
            "executionArn": arn,
            "reverseOrder": True,
            "includeExecutionData": False,
            "maxResults": STEP_PAGE_SIZE,
        }
    ]
