"""The ingest dashboard, the outcome alarms and the OpenLineage deploy settings (issue 29)."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from infra.settings import DeploySettings, SettingsError
from ingestion import metrics
from tests.fixtures.synth import LINEAGE_KEY_ARN
from tests.infra.test_template import (
    _actions,
    _functions_by_handler,
    _ref_id,
    _statements_of_role,
)

KEY_ARN = LINEAGE_KEY_ARN


def _dashboard_body(synth) -> str:
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    return "".join(part if isinstance(part, str) else "<token>" for part in body["Fn::Join"][1])


def test_job_failed_and_publish_failed_each_raise_an_alarm_on_the_topic(synthesized):
    topics = set(synthesized.of_type("AWS::SNS::Topic"))
    for name in ("JobFailed", "PublishFailed"):
        synthesized.template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": "WAP/Ingest",
                "MetricName": name,
                "Statistic": "Sum",
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "TreatMissingData": "notBreaching",
                # Over all tables: the documents' dimension set without `Table`.
                "Dimensions": Match.absent(),
            },
        )
        [alarm] = [
            a["Properties"]
            for a in synthesized.of_type("AWS::CloudWatch::Alarm").values()
            if a["Properties"].get("MetricName") == name
        ]
        assert {_ref_id(action) for action in alarm["AlarmActions"]} <= topics


def test_the_alarmed_metrics_are_the_ones_the_lambdas_write(synthesized):
    document = metrics.emit(
        metrics.outcome_values(
            "JOB_FAILED", files=1, created_at=None, job_started_at=None, finished_at=None
        ),
        table="sales.orders",
        stream=_Discard(),
    )
    [directive] = document["_aws"]["CloudWatchMetrics"]
    assert [] in directive["Dimensions"]  # a total the alarm can watch
    assert directive["Namespace"] == "WAP/Ingest" and document["JobFailed"] == 1


def test_a_loads_cost_is_a_metric_by_table_when_emr_billed_it():
    values = metrics.outcome_values(
        "PUBLISHED", files=2, created_at=None, job_started_at=None, finished_at=None, cost_usd=0.02
    )
    document = metrics.emit(values, table="sales.orders", stream=_Discard())
    assert document["LoadCostUSD"] == 0.02 and document["Table"] == "sales.orders"
    unbilled = metrics.outcome_values(
        "JOB_FAILED", files=1, created_at=None, job_started_at=None, finished_at=None
    )
    assert metrics.LOAD_COST not in unbilled


def test_the_dashboard_shows_outcomes_latency_duration_files_and_the_queues(synthesized):
    body = _dashboard_body(synthesized)
    widgets = json.loads(body.replace("<token>", "x"))["widgets"]
    titles = {w["properties"].get("title") for w in widgets}
    assert {
        "Outcomes by table",
        "Upload to publish (seconds)",
        "Job duration (seconds)",
        "Files per run",
        "Queued files by table",
        "Oldest queued file (seconds)",
        "Outcome alarms",
        "Data files on main by table",
        "Average data file size by table (bytes)",
        "Reclaimable bytes (unreferenced lake files)",
        "Load cost by table (USD per day)",
    } <= titles
    for name in [
        *metrics.OUTCOME_METRICS.values(),
        metrics.UPLOAD_TO_PUBLISH,
        *metrics.TABLE_HEALTH_METRICS,
        metrics.JOB_DURATION,
        metrics.FILES_PER_RUN,
        "QueueDepth",
        "OldestQueuedAgeSeconds",
        "ApproximateNumberOfMessagesVisible",
        metrics.LINEAGE_NOT_SENT,
        metrics.LOAD_COST,
    ]:
        assert name in body, name
    # Per table: a SEARCH over the Table dimension the Lambdas write.
    assert "SEARCH('{WAP/Ingest,Table} MetricName=\\\"Published\\\"'" in body
    # The maintenance run's metrics: one point a day per table.
    assert "MetricName=\\\"DataFilesOnMain\\\"', 'Maximum', 86400)" in body


def test_no_lineage_is_sent_and_no_secret_read_unless_the_deploy_says_so(synthesized):
    for _, props in _functions_by_handler(synthesized).values():
        variables = props["Environment"]["Variables"]
        assert variables["WAP_LINEAGE_NAMESPACE"] == "WapIngest"
        assert "WAP_LINEAGE_URL" not in variables
        assert "WAP_LINEAGE_API_KEY_SECRET_ARN" not in variables
    assert LINEAGE_KEY_ARN not in json.dumps(synthesized.template.to_json())
    assert "LineageUrl" not in synthesized.template.to_json()["Outputs"]


def test_a_lineage_endpoint_with_a_key_reaches_the_senders_and_only_they_read_the_key(
    synthesized_non_default,
):
    synth = synthesized_non_default  # lineageUrl and lineageApiKeySecretArn=KEY_ARN among them
    # start_ingest (START) and outcomes; maintenance starts the ingest queued behind a
    # compaction.
    senders = {"trigger", "finish", "sweeper", "maintenance"}
    for name, (_, props) in _functions_by_handler(synth).items():
        variables = props["Environment"]["Variables"]
        assert variables["WAP_LINEAGE_URL"] == "https://marquez.example.com:5000"
        statements = _statements_of_role(synth, _ref_id(props["Role"]))
        on_key = [s for s in statements if LINEAGE_KEY_ARN in json.dumps(s.get("Resource"))]
        if name in senders:
            assert variables["WAP_LINEAGE_API_KEY_SECRET_ARN"] == LINEAGE_KEY_ARN
            assert [(_actions([s]), s["Resource"]) for s in on_key] == [
                ({"secretsmanager:GetSecretValue"}, LINEAGE_KEY_ARN)
            ], name
        else:
            assert on_key == [], name
    # `wap publish` / `discard --aws` find the receiver (and its key) in the outputs.
    outputs = synth.template.to_json()["Outputs"]
    assert outputs["LineageUrl"]["Value"] == "https://marquez.example.com:5000"
    assert outputs["LineageApiKeySecretArn"]["Value"] == LINEAGE_KEY_ARN


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"lineageUrl": "ftp://marquez"}, "lineageUrl"),
        ({"lineageUrl": "https://user:secret@marquez"}, "without credentials"),
        ({"lineageApiKeySecretArn": LINEAGE_KEY_ARN}, "needs lineageUrl"),
        ({"lineageUrl": "https://m", "lineageApiKeySecretArn": "marquez-key"}, "not a secret"),
    ],
)
def test_bad_lineage_settings_are_refused(context, message):
    with pytest.raises(SettingsError, match=message):
        DeploySettings.from_context(context.get)


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def test_a_late_table_raises_an_alarm_on_the_metric_the_sweeper_writes(synthesized):
    """Issue 42: `LateTables` (each sweep, over all tables) alarms on the topic at one late
    table; the dashboard charts it and each table's time since its last publish."""
    topics = set(synthesized.of_type("AWS::SNS::Topic"))
    [alarm] = [
        a["Properties"]
        for a in synthesized.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == metrics.LATE_TABLES
    ]
    assert alarm["Namespace"] == "WAP/Ingest" and "Dimensions" not in alarm
    assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Maximum", 300, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert {_ref_id(action) for action in alarm["AlarmActions"]} <= topics
    # What the sweeper writes: the same name and namespace, over all tables.
    from ingestion.arrivals import SubjectFreshness

    late = SubjectFreshness("sales.orders", "daily UTC", True, None, None, None)
    document = metrics.emit(metrics.late_tables_values([late]), stream=_Discard())
    [directive] = document["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [[]] and document[metrics.LATE_TABLES] == 1
    body = _dashboard_body(synthesized)
    assert "Late tables" in body and metrics.SINCE_LAST_PUBLISH in body
