"""The local stack runs the template's schedule expressions (local/aws/schedule.py)."""

from __future__ import annotations

import pytest

from local.aws.schedule import ScheduleError, rate_seconds


def test_rates_and_the_daily_cron_of_the_maintenance_run_are_run_locally():
    assert rate_seconds("rate(5 minutes)") == 300
    assert rate_seconds("rate(1 day)") == 86400
    assert rate_seconds("cron(0 3 * * ? *)") == 86400  # maintenanceTimeUtc's
    assert rate_seconds("cron(30 1 * * ? *)") == 86400


def test_a_cron_that_is_not_daily_is_refused():
    with pytest.raises(ScheduleError, match="daily cron"):
        rate_seconds("cron(0 3 ? * MON *)")
