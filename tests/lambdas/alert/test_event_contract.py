"""The alert event has one definition: what the functions build is what the alert Lambda parses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contracts.alert import AlertEvent
from ingestion.alerting.exceptions import AlertEventError
from ingestion.alerts import alert_event
from tests.fixtures.alerts import alerted_record

RECORD = alerted_record(execution_arn="arn:aws:states:eu-west-1:1:execution:m:0123456789abcdef")


def test_what_the_functions_build_the_alert_lambda_parses_unchanged():
    event = alert_event(RECORD, outcome="JOB_FAILED", reason="executor lost")
    assert AlertEvent.from_dict(event.to_dict()) == event
    assert event.outcome == "JOB_FAILED" and event.table == "sales.orders"
    assert event.to_dict()["alert_version"] == 1


def test_an_event_without_a_version_is_version_1_and_an_unknown_version_is_refused():
    built = alert_event(RECORD, outcome="JOB_FAILED", reason=None).to_dict()
    del built["alert_version"]  # built before the field existed, e.g. mid-deploy
    assert AlertEvent.from_dict(built).alert_version == 1
    with pytest.raises(AlertEventError, match="'alert_version'"):
        AlertEvent.from_dict({**built, "alert_version": 2})


def test_a_bad_field_is_refused_when_the_event_is_built_not_when_it_is_sent():
    with pytest.raises(AlertEventError, match="branch"):
        alert_event(replace(RECORD, branch=42), outcome="AUDIT_FAILED", reason=None)
    with pytest.raises(AlertEventError, match="outcome"):
        alert_event(RECORD, outcome="", reason=None)
