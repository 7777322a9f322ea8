"""Slack token secret, the alarm topic, and the alarms that watch the pipeline."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import NagSuppressions
from constructs import Construct

from infra import constants


class AlertChannel(Construct):
    """`slack_token` (created empty, set by an operator) and `topic` for CloudWatch alarms."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: RemovalPolicy,
        alarm_email: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.slack_token = secretsmanager.Secret(
            self,
            "SlackBotToken",
            description="Slack bot token (xoxb-...) used by the alert Lambda; set it after deploy",
            removal_policy=removal_policy,
        )
        # Created empty: no generated password, the operator puts the real token in.
        self.slack_token.node.default_child.add_property_deletion_override("GenerateSecretString")
        NagSuppressions.add_resource_suppressions(
            self.slack_token,
            [
                {
                    "id": "AwsSolutions-SMG4",
                    "reason": "Slack bot tokens are issued and revoked in Slack; there is no API a "
                    "rotation Lambda could call; rotation is an operator step (README: Deploy).",
                }
            ],
        )
        key = kms.Key(
            self,
            "AlarmTopicKey",
            enable_key_rotation=True,
            description="Encrypts the alarm topic",
            removal_policy=removal_policy,
        )
        # CloudWatch alarms publish to the encrypted topic, so they need the key.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                resources=["*"],
            )
        )
        self.topic = sns.Topic(
            self, "Alarms", master_key=key, enforce_ssl=True, display_name="WAP ingestion alarms"
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))


class PipelineAlarms(Construct):
    """Alarms on failed executions, DLQ depth and Lambda errors; all notify `topic`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        topic: sns.ITopic,
        state_machine: sfn.IStateMachine,
        dead_letter_queue: sqs.IQueue,
        functions: Mapping[str, lambda_.IFunction],
        queue_alarm_minutes: int = constants.QUEUE_ALARM_MINUTES,
    ) -> None:
        super().__init__(scope, construct_id)
        action = actions.SnsAction(topic)
        five_minutes = Duration.minutes(5)
        self.alarms: list[cloudwatch.Alarm] = []

        def alarm(
            alarm_id: str, metric: cloudwatch.IMetric, description: str, threshold: float = 1
        ) -> None:
            created = cloudwatch.Alarm(
                self,
                alarm_id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)

        alarm(
            "ExecutionsFailed",
            cloudwatch.MathExpression(
                expression="failed + timedout + aborted",
                period=five_minutes,
                using_metrics={
                    "failed": state_machine.metric_failed(period=five_minutes, statistic="Sum"),
                    "timedout": state_machine.metric_timed_out(
                        period=five_minutes, statistic="Sum"
                    ),
                    "aborted": state_machine.metric_aborted(period=five_minutes, statistic="Sum"),
                },
            ),
            "An ingest execution failed, timed out or was aborted (not an audit failure: "
            "those end normally and alert Slack)",
        )
        alarm(
            "DeadLetters",
            dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=five_minutes, statistic="Maximum"
            ),
            "S3 events could not be delivered to or processed by the trigger Lambda",
        )
        alarm(
            "QueueWaitTooLong",
            cloudwatch.Metric(
                namespace=constants.METRICS_NAMESPACE,
                metric_name="OldestQueuedAgeSeconds",
                # Powertools dimensions each metric with the emitting function's service name.
                dimensions_map={"service": constants.service_name("sweeper")},
                statistic="Maximum",
                period=Duration.minutes(constants.SWEEPER_RATE_MINUTES),
            ),
            f"A file has waited more than {queue_alarm_minutes} minutes for its table "
            "(the table's runs cannot keep up, or its active ingest is stuck): see `wap runs`",
            threshold=queue_alarm_minutes * 60,
        )
        for name, function in functions.items():
            alarm(
                f"{_camel(name)}Errors",
                function.metric_errors(period=five_minutes, statistic="Sum"),
                f"The {name} Lambda raised an error",
            )


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))
