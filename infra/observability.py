"""The ingest dashboard and the alarms on recorded outcomes (ingestion/metrics.py).

The Lambdas write the outcome metrics as embedded metric format in their logs, by table and
over all tables; the dashboard shows them per table (SEARCH over the `Table` dimension) next
to the sweeper's queue metrics and the dead-letter queue, and the alarms watch the totals.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import constants
from ingestion import metrics as m
from ingestion.constants import JOB_FAILED, PUBLISH_FAILED

_FIVE_MINUTES = Duration.minutes(5)
# Outcomes that mean the service (not the data) failed: each one pages.
ALARMED_OUTCOMES = (JOB_FAILED, PUBLISH_FAILED)


_ONE_DAY = Duration.days(1)  # the maintenance run's cadence: one point per run


def total(
    metric_name: str, statistic: str = "Sum", period: Duration = _FIVE_MINUTES
) -> cloudwatch.Metric:
    """A metric over all tables (the document's dimension set without `Table`)."""
    return cloudwatch.Metric(
        namespace=constants.METRICS_NAMESPACE,
        metric_name=metric_name,
        statistic=statistic,
        period=period,
    )


def per_table(
    metric_name: str, statistic: str = "Sum", label: str = "", period: Duration = _FIVE_MINUTES
) -> cloudwatch.IMetric:
    """One line per table that reported `metric_name`."""
    return cloudwatch.MathExpression(
        expression=(
            f"SEARCH('{{{constants.METRICS_NAMESPACE},{m.TABLE_DIMENSION}}} "
            f"MetricName=\"{metric_name}\"', '{statistic}', "
            f"{int(period.to_seconds())})"
        ),
        using_metrics={},
        label=label or metric_name,
        period=period,
    )


def third(title: str, *metrics: cloudwatch.IMetric) -> cloudwatch.GraphWidget:
    """A graph a third of the dashboard wide (its rows hold three), one line per metric."""
    return cloudwatch.GraphWidget(title=title, width=8, left=list(metrics))


class IngestObservability(Construct):
    """`dashboard` and `alarms` (one per outcome in ALARMED_OUTCOMES, notifying `topic`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        topic: sns.ITopic,
        dead_letter_queue: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        for status in ALARMED_OUTCOMES:
            name = m.OUTCOME_METRICS[status]
            alarm = cloudwatch.Alarm(
                self,
                f"{name}Alarm",
                metric=total(name),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=(
                    cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
                ),
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"An ingest ended {status} (the service, not the data, "
                "failed): the Slack alert names it; see `wap runs`",
            )
            alarm.add_alarm_action(actions.SnsAction(topic))
            self.alarms[status] = alarm
        # Expected arrivals (issue 42): each sweep writes how many tables with an `expect:`
        # section are late (0 when none: the alarm clears once every late table recovered).
        sweep = Duration.minutes(constants.SWEEPER_RATE_MINUTES)
        self.late_tables_alarm = cloudwatch.Alarm(
            self,
            "LateTablesAlarm",
            metric=total(m.LATE_TABLES, "Maximum", period=sweep),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="A table's expected drop (`expect:` in its config) was not "
            "published by its deadline: the sweeper's Slack alert names it; see `wap runs`",
        )
        self.late_tables_alarm.add_alarm_action(actions.SnsAction(topic))

        queue_service = {"service": constants.service_name("sweeper")}
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            default_interval=Duration.days(1),
            widgets=[
                [
                    cloudwatch.GraphWidget(
                        title="Outcomes by table",
                        width=12,
                        stacked=True,
                        left=[per_table(name, label=name) for name in m.OUTCOME_METRICS.values()],
                    ),
                    cloudwatch.AlarmStatusWidget(
                        title="Outcome alarms",
                        width=12,
                        alarms=[*self.alarms.values(), self.late_tables_alarm],
                    ),
                ],
                [
                    third(
                        "Upload to publish (seconds)",
                        total(m.UPLOAD_TO_PUBLISH, "p50"),
                        total(m.UPLOAD_TO_PUBLISH, "p90"),
                        per_table(m.UPLOAD_TO_PUBLISH, "Maximum"),
                    ),
                    third(
                        "Job duration (seconds)",
                        total(m.JOB_DURATION, "Average"),
                        per_table(m.JOB_DURATION, "Maximum"),
                    ),
                    third(
                        "Files per run",
                        total(m.FILES_PER_RUN, "Average"),
                        total(m.FILES_PER_RUN, "Maximum"),
                    ),
                ],
                [
                    third(
                        "Queued files by table",
                        cloudwatch.MathExpression(
                            expression=(
                                f"SEARCH('{{{constants.METRICS_NAMESPACE},"
                                f'{m.TABLE_DIMENSION},service}} MetricName="QueueDepth"\','
                                " 'Maximum', 300)"
                            ),
                            using_metrics={},
                            label="QueueDepth",
                            period=_FIVE_MINUTES,
                        ),
                    ),
                    third(
                        "Oldest queued file (seconds)",
                        cloudwatch.Metric(
                            namespace=constants.METRICS_NAMESPACE,
                            metric_name="OldestQueuedAgeSeconds",
                            dimensions_map=queue_service,
                            statistic="Maximum",
                            period=_FIVE_MINUTES,
                        ),
                    ),
                    third(
                        "Undelivered S3 events and lineage events",
                        dead_letter_queue.metric_approximate_number_of_messages_visible(
                            period=_FIVE_MINUTES, statistic="Maximum"
                        ),
                        total(m.LINEAGE_NOT_SENT),
                    ),
                ],
                # Expected arrivals: written by each sweep.
                [
                    third("Late tables", total(m.LATE_TABLES, "Maximum", period=sweep)),
                    third(
                        "Since the last published drop by table (seconds)",
                        per_table(m.SINCE_LAST_PUBLISH, "Maximum", period=sweep),
                    ),
                ],
                # Each garbage collection's measure of every table (lambdas/maintenance/).
                [
                    third(
                        "Data files on main by table",
                        per_table(m.DATA_FILES, "Maximum", period=_ONE_DAY),
                    ),
                    third(
                        "Average data file size by table (bytes)",
                        per_table(m.AVERAGE_FILE_BYTES, "Average", period=_ONE_DAY),
                    ),
                    third(
                        "Reclaimable bytes (unreferenced lake files)",
                        total(m.RECLAIMABLE_BYTES, "Maximum", period=_ONE_DAY),
                        per_table(m.RECLAIMABLE_BYTES, "Maximum", period=_ONE_DAY),
                    ),
                ],
                # What the loads cost: EMR's billed resources priced (ingestion/job_cost.py).
                [
                    third(
                        "Load cost by table (USD per day)",
                        total(m.LOAD_COST, "Sum", period=_ONE_DAY),
                        per_table(m.LOAD_COST, "Sum", period=_ONE_DAY),
                    ),
                ],
            ],
        )
