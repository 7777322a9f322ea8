"""A late table (issue 42) is alerted through the same path as a failed ingest: its event
carries an `ArrivalNotice`, checked where it enters; its message says in one line what
did not arrive, and it is posted through Slack."""

from __future__ import annotations

import pytest

from contracts.alert import AlertEvent
from ingestion.alerting.exceptions import AlertEventError
from ingestion.alerting.message import build_message
from ingestion.alerting.notify import send_alert

from .blockkit import all_text, assert_valid_blocks

REASON = "sales.orders: nothing published since 2026-11-25 06:02; expected daily by 06:00 UTC"
LATE_EVENT = {
    "ingest_id": "late:sales.orders:2026-11-26T06:00:00Z",
    "table": "sales.orders",
    "outcome": "LATE",
    "reason": REASON,
    "arrival": {
        "expected": "daily by 06:00 UTC",
        "deadline": "2026-11-26T06:00:00Z",
        "last_published_at": "2026-11-25T06:02:00Z",
    },
}


def test_the_late_event_carries_its_notice_and_round_trips():
    event = AlertEvent.from_dict(LATE_EVENT)
    assert event.arrival.expected == "daily by 06:00 UTC"
    assert AlertEvent.from_dict(event.to_dict()) == event


@pytest.mark.parametrize(
    "event",
    [
        {**LATE_EVENT, "arrival": None},  # LATE needs its notice
        {**LATE_EVENT, "outcome": "JOB_FAILED"},  # and only LATE/RECOVERED carry one
        {**LATE_EVENT, "arrival": {"expected": "daily", "deadline": ""}},
    ],
)
def test_the_notice_is_checked_where_the_event_enters(event):
    with pytest.raises(AlertEventError, match="arrival"):
        AlertEvent.from_dict(event)


def test_the_message_says_what_did_not_arrive():
    message = build_message(AlertEvent.from_dict(LATE_EVENT), None, [])
    assert_valid_blocks(message.blocks)
    assert message.text == f":hourglass: Late: nothing published: {REASON}"
    text = all_text(message.blocks)
    assert "daily by 06:00 UTC" in text and "2026-11-25T06:02:00Z" in text
    recovered = build_message(
        AlertEvent.from_dict({**LATE_EVENT, "outcome": "RECOVERED", "reason": "published"}),
        None,
        [],
    )
    assert recovered.text.startswith(":white_check_mark: Published again")


def test_the_late_alert_is_posted_through_slack(alert_env, s3, secretsmanager, slack, fast_retry):
    result = send_alert(LATE_EVENT, s3=s3, secretsmanager=secretsmanager, retry=fast_retry)

    [message] = slack.messages
    assert result["delivered"] and result["outcome"] == "LATE"
    assert REASON in message["text"]
