"""The stack's log groups: every one kept three months and removed as the stack's data is."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs
from constructs import Construct

RETENTION = logs.RetentionDays.THREE_MONTHS


def log_group(scope: Construct, construct_id: str, removal_policy: RemovalPolicy) -> logs.LogGroup:
    """A log group under `scope`, with the stack's retention and `removal_policy`."""
    return logs.LogGroup(scope, construct_id, retention=RETENTION, removal_policy=removal_policy)
