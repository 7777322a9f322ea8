"""Which grants of the synthesized template no call of the suite used (least privilege).

Every resource of every statement of every policy, in the default template and in each
variant a test ran a local stack of (the stack with the lineage key under a customer managed
key: tests/infra/test_lineage_key_grants.py), must be used by at least one call the suite
made (local/aws/iam.py records them), except the few listed below with the reason
no code of ours can use them. An unused grant is one to remove from infra/. Judged by
tests/local/aws/test_least_privilege.py (serial runs) or by tests/plugins/xdist_support.py
(on xdist's controller, over every worker's calls).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from local.aws.stack import StackSettings
from local.aws.template import stack_template

# Roles that none of our code assumes: AWS services and CDK's deploy-time helpers use them.
SERVICE_ROLES = {
    "Network/Vpc/All/IAMRole": "VPC flow logs: the VPC service writes them",
    "Catalog/Task/TaskRole": "the Nessie server's ECS task (its version store); locally "
    "our Nessie double keeps its own SQLite store",
    "Catalog/Task/ExecutionRole": "ECS pulls the image and ships the container's logs",
    "BucketNotificationsHandler": "CDK's deploy-time helper that configures S3 notifications",
    "Custom::CDKBucketDeployment": "CDK's deploy-time helper that uploads the job's archive",
}
# Statements of our roles that the services use on the role's behalf, or that no double can
# exercise: (role path, an action or resource of the statement) -> why.
SERVICE_STATEMENTS = {
    ("", "xray:PutTraceSegments"): "Lambda's active tracing sends the segments itself",
    (
        "Pipeline/Trigger/ServiceRole",
        "sqs:SendMessage",
    ): "the Lambda service sends an event that failed every async try to the DLQ",
    (
        "Pipeline/Ingest/Role",
        "logs:CreateLogDelivery",
    ): "Step Functions delivers the execution logs and traces itself",
    (
        "Compute/JobRole",
        "StorageLake",
    ): "Spark reads and writes the lake through Hadoop's FileIO on EMR; the local "
    "warehouse is a file:// directory, so no double sees those calls",
    (
        "Compute/JobRole",
        "/jobs/*",
    ): "EMR Serverless reads the entry point and the --py-files archive as the job role; "
    "the local EMR double runs the same archive from the build directory",
    (
        "Compute/JobRole",
        "cdk-hnb659fds-assets",
    ): "EMR Serverless fetches spark.jars (the Iceberg runtime jar) as the job role; the "
    "local EMR double loads the same jar from the PyPI wheel",
}


def _exemption(role: str, actions: tuple[str, ...], resource: str) -> str | None:
    for prefix, reason in SERVICE_ROLES.items():
        if role.startswith(prefix):
            return reason
    for (role_path, needle), reason in SERVICE_STATEMENTS.items():
        if role.startswith(role_path) and any(needle in text for text in (*actions, resource)):
            return reason
    return None


def unused_grants(
    used: set[tuple[str, ...]], variants: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """`[<variant>: ]<policy path> #<statement> <actions> on <resource>` of every grant of
    the default template and of each of `variants` (name -> template body: the variants a
    test ran a local stack of, local.aws.iam.UsageLog.variants) that no call of the suite
    used, in whichever variant (`used`: their keys, local.aws.template.GrantKey), and that
    is not exempted above."""
    default = stack_template(
        StackSettings(nessie_api_v1="http://unused/api/v1", job=None).deploy_context()
    )
    templates = {"": default}
    for name, body in sorted((variants or {}).items()):
        templates[name] = dataclasses.replace(default, key=name, body=body)
    unused: dict[tuple[str, ...], str] = {}
    for name, template in templates.items():
        keys = template.grants()
        for policy_id, resource in template.of_type("AWS::IAM::Policy").items():
            path = template.path(policy_id)
            [role_ref] = resource["Properties"]["Roles"]
            role = template.path(role_ref["Ref"])
            document = resource["Properties"]["PolicyDocument"]
            for index, statement in enumerate(document["Statement"]):
                actions = (
                    statement["Action"]
                    if isinstance(statement["Action"], list)
                    else [statement["Action"]]
                )
                resources = (
                    statement["Resource"]
                    if isinstance(statement["Resource"], list)
                    else [statement["Resource"]]
                )
                for r_index, granted in enumerate(resources):
                    text = json.dumps(granted)
                    # A used statement counts for all its actions (as before the keys);
                    # in another variant, each action must have been used in some variant.
                    missing = [k for k in keys[(path, index, r_index)] if k not in used]
                    if not missing or _exemption(role, tuple(actions), text):
                        continue
                    where = f"{name}: " if name else ""
                    line = f"{where}{path} #{index} {[k[2] for k in missing]} on {text}"
                    unused.setdefault(tuple(missing), line)
    return list(unused.values())
