"""A table's (or dataset's) `expect:` section: parsed where the config enters, refused with
the option named, and the deadline on the wall clock of its time zone (issue 42)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from contracts.arrivals import ExpectedArrival, parse_expect
from contracts.dataset_config import parse_dataset_config
from contracts.table_config import TableConfigError, parse_table_config, parse_table_config_text


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_a_table_config_carries_its_expected_arrivals():
    config = parse_table_config_text(
        'expect:\n  every: 1d\n  by: "06:00"\n  timezone: Europe/Berlin\n', "t.yaml", yaml=yaml
    )
    assert config.expect == ExpectedArrival(86400, 6 * 3600, "Europe/Berlin")
    assert config.expect.describe() == "daily by 06:00 Europe/Berlin"
    assert parse_table_config({}).expect is None


def test_a_dataset_config_carries_its_expected_arrivals():
    config = parse_dataset_config(
        {"tables": ["sales.orders", "sales.items"], "expect": {"every": "6h"}}, "shop"
    )
    assert config.expect == ExpectedArrival(6 * 3600)


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ({"every": "1d", "by": 360}, 'by: "06:00"'),  # YAML's reading of an unquoted 06:00
        ({"every": "7h"}, "divide a day"),
        ({"every": "1d", "by": "25:00"}, '"HH:MM"'),
        ({"every": "1h", "by": "02:00"}, "at most the period"),
        ({"every": "1d", "timezone": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        ({"every": "1d", "timezone": "../etc"}, "IANA time zone"),
        ({"every": "1h", "days": ["mon"]}, "every: 1d only"),
        ({"every": "1d", "days": ["funday"]}, "weekdays"),
        ({"by": "06:00"}, "`every` is required"),
        ({"every": "1d", "at": "06:00"}, "unknown option(s) ['at']"),
        ("daily", "expected a mapping"),
    ],
)
def test_a_bad_expect_section_is_refused_naming_the_option(section, words):
    with pytest.raises(TableConfigError) as refused:
        parse_table_config({"expect": section}, "tables/sales.orders.yaml")
    assert "tables/sales.orders.yaml: expect" in str(refused.value)
    assert words in str(refused.value)


def test_a_bad_expect_section_of_a_dataset_is_refused():
    with pytest.raises(TableConfigError, match=r"expect\.every"):
        parse_dataset_config(
            {"tables": ["sales.orders", "sales.items"], "expect": {"every": "2d"}}, "shop"
        )


def test_the_deadline_is_on_the_wall_clock_of_the_time_zone():
    berlin = parse_expect({"every": "1d", "by": "06:00", "timezone": "Europe/Berlin"})
    # 06:00 in Berlin is 05:00 UTC in winter (CET), 04:00 UTC in summer (CEST).
    assert berlin.last_deadline(_at("2026-11-26T05:00:00")).due == _at("2026-11-26T05:00:00")
    assert berlin.last_deadline(_at("2026-11-26T04:59:59")).due == _at("2026-11-25T05:00:00")
    assert berlin.last_deadline(_at("2026-07-01T04:00:00")).due == _at("2026-07-01T04:00:00")
    # The period is Berlin's day: it started at 23:00 UTC the evening before.
    assert berlin.last_deadline(_at("2026-11-26T12:00:00")).start == _at("2026-11-25T23:00:00")


def test_a_drop_counts_for_the_day_of_the_time_zone_not_of_utc():
    berlin = parse_expect({"every": "1d", "by": "06:00", "timezone": "Europe/Berlin"})
    now = _at("2026-11-26T05:30:00")  # 06:30 in Berlin: the 26th's deadline has passed
    # 23:30 UTC on the 25th is 00:30 on the 26th in Berlin: that day's drop, on time.
    assert not berlin.freshness(_at("2026-11-25T23:30:00"), now).late
    # 22:30 UTC is still the 25th in Berlin: nothing for the 26th.
    assert berlin.freshness(_at("2026-11-25T22:30:00"), now).late
    in_utc = parse_expect({"every": "1d", "by": "06:00"})
    assert in_utc.freshness(_at("2026-11-25T23:30:00"), _at("2026-11-26T06:30:00")).late


def test_late_from_the_missed_deadline_until_a_drop_is_published_again():
    daily = parse_expect({"every": "1d", "by": "06:00"})
    last = _at("2026-11-25T06:02:00")
    assert not daily.freshness(last, _at("2026-11-26T05:59:00")).late  # not due yet
    assert daily.freshness(last, _at("2026-11-26T06:00:00")).late
    assert daily.freshness(last, _at("2026-11-27T01:00:00")).late  # still, the next night
    assert not daily.freshness(_at("2026-11-26T09:00:00"), _at("2026-11-26T09:05:00")).late
    assert daily.freshness(None, _at("2026-11-26T06:00:00")).late  # never published


def test_weekdays_only_expects_nothing_at_the_weekend():
    weekdays = parse_expect(
        {"every": "1d", "by": "06:00", "days": ["mon", "tue", "wed", "thu", "fri"]}
    )
    friday = _at("2026-11-27T05:00:00")
    sunday = _at("2026-11-29T12:00:00")
    assert weekdays.last_deadline(sunday).due == _at("2026-11-27T06:00:00")
    assert not weekdays.freshness(friday, sunday).late
    assert weekdays.describe() == "daily on mon, tue, wed, thu, fri by 06:00 UTC"


def test_hourly_without_by_is_due_at_the_end_of_each_hour():
    hourly = parse_expect({"every": "1h"})
    assert hourly.last_deadline(_at("2026-11-26T10:20:00")).due == _at("2026-11-26T10:00:00")
    assert not hourly.freshness(_at("2026-11-26T09:59:00"), _at("2026-11-26T10:20:00")).late
    assert hourly.freshness(_at("2026-11-26T08:59:00"), _at("2026-11-26T10:20:00")).late


def test_a_deadline_in_the_spring_forward_gap_is_read_on_the_clock_before_it():
    """02:30 does not exist in Berlin on 2026-03-29 (02:00 CET jumps to 03:00 CEST): read
    at its first reading (fold 0), 01:30 UTC; the day itself is 23 hours long."""
    berlin = parse_expect({"every": "1d", "by": "02:30", "timezone": "Europe/Berlin"})
    deadline = berlin.last_deadline(_at("2026-03-29T12:00:00"))
    assert deadline.due == _at("2026-03-29T01:30:00")
    assert deadline.start == _at("2026-03-28T23:00:00")
