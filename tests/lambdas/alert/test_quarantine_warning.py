"""A drop published with rows quarantined (issue 40) is a Slack warning: its event carries
a `QuarantineNotice`, its message names the counts, the checks that set rows aside (from
the report) and links the quarantine table; a clean publish alerts nobody."""

from __future__ import annotations

import json

import pytest

from contracts.alert import AlertEvent, QuarantineNotice
from contracts.report import AuditReport
from ingestion.alerting.exceptions import AlertEventError
from ingestion.alerting.message import build_message
from ingestion.alerting.notify import send_alert
from ingestion.alerting.report import failed_checks
from ingestion.alerts import alert_event, alerts_on
from tests.fixtures.alerts import alerted_record
from tests.fixtures.quarantine import QUARANTINE_CHECK, SAMPLE

from .blockkit import all_text, assert_valid_blocks

UI = "https://nessie.example.com"
PUBLISHED_RECORD = alerted_record(rows_written=999_997, quarantined_rows=3)
REPORT = {
    "report_version": 1,
    "ingest_id": "0123456789abcdef",
    "table": "sales.orders",
    "branch": PUBLISHED_RECORD.branch,
    "outcome": "passed",
    "rows_written": 999_997,
    "quarantined_rows": 3,
    "checks": [
        QUARANTINE_CHECK,
        {  # a warning that set nothing aside is not named as a quarantining check
            "name": "email_like",
            "kind": "regex",
            "columns": ["email"],
            "severity": "warn",
            "status": "failed",
            "violations": 8,
        },
        {"name": "quarantine_gate", "kind": "quarantine_gate", "severity": "error"}
        | {"status": "passed", "violations": 3},
    ],
}
WARNING = "published 999,997 rows of sales.orders; 3 quarantined: amount_range"


def published_event() -> AlertEvent:
    return alert_event(PUBLISHED_RECORD, outcome="PUBLISHED", reason=None)


def test_the_event_of_a_publish_with_quarantined_rows_carries_the_notice():
    event = published_event()

    assert event.quarantine == QuarantineNotice(
        rows_published=999_997,
        rows_quarantined=3,
        quarantine_tables=("sales.orders__quarantine",),
    )
    assert AlertEvent.from_dict(json.loads(json.dumps(event.to_dict()))) == event


def test_only_a_publish_carries_the_notice_and_it_is_checked_where_it_enters():
    event = published_event().to_dict()
    notice = event["quarantine"]
    with pytest.raises(AlertEventError, match="'quarantine'"):
        AlertEvent.from_dict({**event, "quarantine": None})  # PUBLISHED says what it set aside
    with pytest.raises(AlertEventError, match="'quarantine'"):
        AlertEvent.from_dict({**event, "outcome": "AUDIT_FAILED"})
    with pytest.raises(AlertEventError, match="'rows_quarantined'"):
        AlertEvent.from_dict({**event, "quarantine": {**notice, "rows_quarantined": 0}})
    with pytest.raises(AlertEventError, match="'quarantine_tables'"):
        AlertEvent.from_dict({**event, "quarantine": {**notice, "quarantine_tables": []}})


def test_a_clean_publish_is_not_alerted_a_quarantining_one_and_a_failure_are():
    assert not alerts_on("PUBLISHED", None) and not alerts_on("PUBLISHED", 0)
    assert alerts_on("PUBLISHED", 3)
    assert alerts_on("AUDIT_FAILED", None)


def test_the_message_is_a_warning_naming_counts_checks_and_the_quarantine_table():
    report = AuditReport.from_dict(REPORT)

    message = build_message(published_event(), report, failed_checks(report), nessie_ui_url=UI)

    assert message.text == WARNING
    assert_valid_blocks(message.blocks)
    header = message.blocks[0]["text"]["text"]
    assert header.startswith(":warning:") and "sales.orders" in header
    text = all_text(message.blocks)
    assert f"<{UI}/content/main/sales/orders__quarantine|sales.orders__quarantine>" in text
    assert "amount_range" in text and f"Quarantined rows:\n```{json.dumps(SAMPLE)}" in text
    assert "AUDIT_FAILED" not in text and "branch stays open" not in text


def test_without_its_report_the_warning_still_names_the_counts():
    message = build_message(published_event(), None, [], nessie_ui_url=None)

    assert message.text == "published 999,997 rows of sales.orders; 3 quarantined"
    assert "sales.orders__quarantine" in all_text(message.blocks)


def test_the_warning_is_posted_through_slack(alert_env, s3, secretsmanager, slack, fast_retry):
    s3.create_bucket(
        Bucket="wap-artifacts", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    s3.put_object(
        Bucket="wap-artifacts", Key="reports/0123456789abcdef.json", Body=json.dumps(REPORT)
    )

    result = send_alert(
        published_event().to_dict(), s3=s3, secretsmanager=secretsmanager, retry=fast_retry
    )

    [message] = slack.messages
    assert result["delivered"] and result["outcome"] == "PUBLISHED"
    assert message["text"] == WARNING
    assert "sales.orders__quarantine" in all_text(message["blocks"])
