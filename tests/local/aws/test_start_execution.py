"""StartExecution is idempotent by name, as in Step Functions: starts racing with one name
and one input make one execution (the trigger relies on it: the ingest id is the name)."""

from __future__ import annotations

import json
import threading
import time

import boto3
from botocore.exceptions import ClientError
from moto import mock_aws

from local.aws.moto_fidelity import make_start_execution_atomic

PASS = {"StartAt": "done", "States": {"done": {"Type": "Pass", "End": True}}}


def test_racing_starts_with_one_name_make_one_execution(monkeypatch):
    from moto.stepfunctions.models import StateMachine

    look = StateMachine._handle_name_input_idempotency

    def slow_look(self, name, execution_input):
        found = look(self, name, execution_input)
        time.sleep(0.05)  # widen the window between looking and appending
        return found

    monkeypatch.setattr(StateMachine, "_handle_name_input_idempotency", slow_look)
    make_start_execution_atomic()
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="eu-west-1")
        arn = sfn.create_state_machine(
            name="ingest",
            definition=json.dumps(PASS),
            roleArn="arn:aws:iam::123456789012:role/machine",
        )["stateMachineArn"]
        barrier = threading.Barrier(8)
        answers: list[str] = []

        def start() -> None:
            barrier.wait()
            try:
                answer = sfn.start_execution(
                    stateMachineArn=arn, name="0123456789abcdef", input="{}"
                )
                answers.append(answer["executionArn"])
            except ClientError as exc:  # the one execution ended already: its name is taken
                answers.append(exc.response["Error"]["Code"])

        threads = [threading.Thread(target=start) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        executions = sfn.list_executions(stateMachineArn=arn)["executions"]
        assert [e["name"] for e in executions] == ["0123456789abcdef"]
        assert len(answers) == 8
        assert set(answers) <= {executions[0]["executionArn"], "ExecutionAlreadyExists"}
