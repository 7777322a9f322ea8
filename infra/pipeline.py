"""Ledger, Lambdas, the S3 -> trigger rule, the state machine and the sweeper schedule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import NagSuppressions
from constructs import Construct

from infra import bundling, constants, definition
from infra.constants import Capability, FunctionSpec
from infra.log_groups import log_group

_LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"


def state_machine_arn(scope: Construct, name: str) -> str:
    """ARN of the state machine built from its name (breaks the SM -> Lambda -> SM cycle)."""
    return Stack.of(scope).format_arn(
        service="states",
        resource="stateMachine",
        resource_name=name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


class Pipeline(Construct):
    """The orchestration: `ledger`, `layer`, `functions` (by package name), `dead_letter_queue`,
    `ingest_rule`, `state_machine`, `state_machine_name`, `state_machine_arn`.

    Grants between these and other constructs' resources are wired by the stack.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Sequence[FunctionSpec],
        environment: Mapping[str, str],
        vpc: ec2.IVpc,
        subnets: ec2.SubnetSelection,
        source: s3.IBucket,
        artifacts: s3.IBucket,
        state_machine_name: str,
        substitutions: Mapping[str, str],
        removal_policy: RemovalPolicy,
        source_tree: constants.SourceTree,
        maintenance_time_utc: str = constants.MAINTENANCE_TIME_UTC,
    ) -> None:
        super().__init__(scope, construct_id)
        self.state_machine_name = state_machine_name
        self.state_machine_arn = state_machine_arn(self, state_machine_name)
        self.ledger = _ledger_table(self, removal_policy)
        self.dead_letter_queue = sqs.Queue(
            self,
            "IngestDlq",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )

        layers = source_tree.dependency_layers()
        self.layer = _dependency_layer(
            self,
            "Dependencies",
            layers["Dependencies"],
            "Pinned requirements-lambda.txt (boto3 comes with the runtime)",
        )
        # The Lambdas that read Iceberg metadata get a layer of both requirement files
        # (resolved together) in place of the shared one: the others stay small.
        self.iceberg_layer = (
            _dependency_layer(
                self,
                "IcebergDependencies",
                layers["IcebergDependencies"],
                "Pinned requirements-lambda.txt + requirements-lambda-maintenance.txt",
            )
            if any(spec.reads_iceberg for spec in functions)
            else None
        )
        self.nessie_clients = ec2.SecurityGroup(
            self,
            "NessieClients",
            vpc=vpc,
            allow_all_outbound=True,
            description="Lambdas that call Nessie (and Slack through the NAT)",
        )
        self.specs = {spec.name: spec for spec in functions}
        self.functions: dict[str, lambda_.Function] = {}
        for spec in functions:
            in_vpc = Capability.NESSIE in spec.capabilities
            # (iceberg_layer exists whenever a spec reads Iceberg.)
            layer = self.iceberg_layer if spec.reads_iceberg else self.layer
            function_logs = log_group(self, f"{_camel(spec.name)}Logs", removal_policy)
            self.functions[spec.name] = lambda_.Function(
                self,
                _camel(spec.name),
                runtime=lambda_.Runtime.PYTHON_3_12,
                architecture=lambda_.Architecture.X86_64,
                handler=spec.handler,
                code=lambda_.Code.from_asset(
                    str(bundling.function_code(spec.name, lambdas_dir=source_tree.lambdas_dir))
                ),
                layers=[layer],
                memory_size=spec.memory_mib,
                timeout=Duration.seconds(spec.timeout_seconds),
                environment={
                    **environment,
                    "WAP_LEDGER_TABLE": self.ledger.table_name,
                    "POWERTOOLS_SERVICE_NAME": constants.service_name(spec.name),
                    "POWERTOOLS_METRICS_NAMESPACE": constants.METRICS_NAMESPACE,
                },
                tracing=lambda_.Tracing.ACTIVE,
                log_group=function_logs,
                vpc=vpc if in_vpc else None,
                vpc_subnets=subnets if in_vpc else None,
                security_groups=[self.nessie_clients] if in_vpc else None,
                # S3 events are retried by EventBridge and Lambda; failures land in the DLQ.
                dead_letter_queue=self.dead_letter_queue if spec.name == "trigger" else None,
                **_async_invocation(spec.name),
            )

        self.ingest_rule = events.Rule(
            self,
            "SourceObjectCreated",
            description="Parquet dropped into the source bucket starts an ingest",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={"bucket": {"name": [source.bucket_name]}},
            ),
            targets=[
                targets.LambdaFunction(
                    self.functions["trigger"],
                    dead_letter_queue=self.dead_letter_queue,
                    retry_attempts=constants.EVENT_RETRY_ATTEMPTS,
                    max_event_age=Duration.hours(constants.EVENT_MAX_AGE_HOURS),
                )
            ],
        )
        self.sweeper_schedule = (
            events.Rule(
                self,
                "SweeperSchedule",
                description="Recover stuck table locks and stale branches",
                schedule=events.Schedule.rate(Duration.minutes(constants.SWEEPER_RATE_MINUTES)),
                targets=[targets.LambdaFunction(self.functions["sweeper"], retry_attempts=2)],
            )
            if "sweeper" in self.functions
            else None
        )
        self.maintenance_schedule = (
            events.Rule(
                self,
                "MaintenanceSchedule",
                description="Garbage collection across Nessie references: measure every table, "
                "report (or, with gcDelete, delete) unreferenced lake files",
                schedule=_daily_at(maintenance_time_utc),
                targets=[targets.LambdaFunction(self.functions["maintenance"], retry_attempts=0)],
            )
            if "maintenance" in self.functions
            else None
        )

        self.definition = definition.load(source_tree.state_machine_file)
        arn_substitutions = {
            spec.substitution: self.functions[spec.name].function_arn for spec in functions
        }
        self.substitutions = {**substitutions, **arn_substitutions}
        self.definition.require(self.substitutions.keys())
        sm_logs = log_group(self, "StateMachineLogs", removal_policy)
        self.state_machine = sfn.StateMachine(
            self,
            "Ingest",
            state_machine_name=state_machine_name,
            definition_body=sfn.DefinitionBody.from_string(self.definition.text),
            definition_substitutions={
                name: self.substitutions[name] for name in sorted(self.definition.placeholders)
            },
            logs=sfn.LogOptions(
                destination=sm_logs, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
            tracing_enabled=True,
        )
        self._grant_integrations(functions)
        for role in [self.state_machine.role, *(f.role for f in self.functions.values())]:
            NagSuppressions.add_resource_suppressions(
                role,
                [
                    {
                        "id": "AwsSolutions-IAM5",
                        "reason": "X-Ray trace upload (and, for the state machine, CloudWatch Logs "
                        "delivery) have no resource-level permissions.",
                        "applies_to": ["Resource::*"],
                    }
                ],
                apply_to_children=True,
            )

    def _grant_integrations(self, functions: Sequence[FunctionSpec]) -> None:
        """Let the state machine's role invoke exactly the Lambdas its Task states name."""
        role = self.state_machine.role
        by_arn_placeholder = {"${" + spec.substitution + "}": spec.name for spec in functions}
        # Render with the placeholders themselves, so ARNs stay recognisable.
        arn_names = {spec.substitution for spec in functions}
        resources = self.definition.task_resources(
            {
                name: "${" + name + "}" if name in arn_names else str(value)
                for name, value in self.substitutions.items()
            }
        )
        unknown, invoked = [], []
        for resource, parameters in resources:
            target = resource
            if resource.startswith(_LAMBDA_INVOKE):
                target = str(parameters.get("FunctionName", parameters.get("FunctionName.$", "")))
            if target in by_arn_placeholder:
                invoked.append(self.functions[by_arn_placeholder[target]].function_arn)
            else:
                unknown.append(resource)
        if invoked:
            # The definition names unqualified function ARNs; `grant_invoke` would also
            # allow every version and alias (`<arn>:*`), which nothing invokes.
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["lambda:InvokeFunction"], resources=sorted(set(invoked))
                )
            )
        if unknown:
            raise definition.DefinitionError(
                f"{self.definition.path}: Task resources {sorted(set(unknown))} are not our "
                "Lambdas; grant the state machine role exactly what they need in "
                "infra/pipeline.py"
            )


def _async_invocation(name: str) -> dict[str, Any]:
    """A function's EventInvokeConfig: the trigger's retries (S3 events, then its DLQ); the
    maintenance run's none (the schedule's own `retry_attempts=0` covers delivery only)."""
    if name == "trigger":
        return {"retry_attempts": constants.TRIGGER_ASYNC_RETRIES}
    if name == "maintenance":
        return {
            "retry_attempts": constants.MAINTENANCE_ASYNC_RETRIES,
            "max_event_age": Duration.minutes(constants.MAINTENANCE_MAX_EVENT_AGE_MINUTES),
        }
    return {}


def _daily_at(time_utc: str) -> events.Schedule:
    """Every day at `HH:MM` UTC (EventBridge schedules are in UTC)."""
    hour, minute = time_utc.split(":")
    return events.Schedule.cron(minute=str(int(minute)), hour=str(int(hour)))


def _dependency_layer(
    scope: Construct, construct_id: str, requirements: Sequence[Path], description: str
) -> lambda_.LayerVersion:
    """A Python 3.12 x86_64 layer of the pinned `requirements` (resolved together)."""
    return lambda_.LayerVersion(
        scope,
        construct_id,
        code=lambda_.Code.from_asset(str(bundling.dependency_layer(requirements=requirements))),
        compatible_runtimes=[lambda_.Runtime.PYTHON_3_12],
        compatible_architectures=[lambda_.Architecture.X86_64],
        description=description,
    )


def _ledger_table(scope: Construct, removal_policy: RemovalPolicy) -> dynamodb.Table:
    """The ledger as ingestion/ledger.py defines it: keys, indexes and TTL."""
    from ingestion.ledger import PARTITION_KEY, TTL_ATTRIBUTE, table_schema

    schema = table_schema()
    table = dynamodb.Table(
        scope,
        "Ledger",
        partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        time_to_live_attribute=TTL_ATTRIBUTE,
        removal_policy=removal_policy,
    )
    for index in schema["GlobalSecondaryIndexes"]:
        hash_key, range_key = (k["AttributeName"] for k in index["KeySchema"])
        table.add_global_secondary_index(
            index_name=index["IndexName"],
            partition_key=dynamodb.Attribute(name=hash_key, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=range_key, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.ALL,
        )
    return table


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))
