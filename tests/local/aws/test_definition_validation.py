"""CreateStateMachine validates a definition it has seen valid without parsing it again,
and still refuses an invalid one each time (local/aws/moto_fidelity.py)."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

from local.aws.moto_fidelity import validate_each_definition_once

ROLE = "arn:aws:iam::123456789012:role/sfn"
VALID = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})
INVALID = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "NoSuchType"}}})


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The definitions moto's ASL parser parses while a test runs."""
    seen: list[str] = []
    parse = AmazonStateLanguageParser.parse

    def counting(definition: str):
        seen.append(definition)
        return parse(definition)

    monkeypatch.setattr(AmazonStateLanguageParser, "parse", staticmethod(counting))
    return seen


def test_a_valid_definition_is_parsed_once_an_invalid_one_every_time(parses):
    validate_each_definition_once()
    # As the local stack runs it: with moto's interpreter, which validates definitions.
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="eu-west-1")
        for name in ("first", "second", "third"):
            sfn.create_state_machine(name=name, definition=VALID, roleArn=ROLE)
        for name in ("bad-1", "bad-2"):
            with pytest.raises(ClientError, match="NoSuchType"):
                sfn.create_state_machine(name=name, definition=INVALID, roleArn=ROLE)
        names = [m["name"] for m in sfn.list_state_machines()["stateMachines"]]
    assert sorted(names) == ["first", "second", "third"]
    assert parses.count(VALID) <= 1  # once, or never if an earlier test parsed it
    assert parses.count(INVALID) == 2
