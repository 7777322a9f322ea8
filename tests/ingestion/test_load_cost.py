"""What a load cost and where its time went: a run's billed resources priced, a batch's
cost shared out over its files by bytes, and the phases of an ingest adding up."""

from __future__ import annotations

import dataclasses

import pytest

from contracts.pricing import (
    EMR_SERVERLESS_PRICES,
    PRICE_SOURCES,
    parse_prices,
    prices_for,
    split_by_bytes,
)
from contracts.state import JobUsage, Outcome
from ingestion import constants as c
from ingestion.batching import settle_members
from ingestion.job_cost import usage_fields
from ingestion.ledger import BatchRecord, IngestRecord
from ingestion.time_split import time_split, upload_to_outcome_seconds
from tests.fixtures.moto_ledger import SETTINGS as PLAIN_SETTINGS
from tests.fixtures.moto_ledger import moto_ledger

BATCH = "b" * 16
MEMBERS = ("1" * 16, "2" * 16, "3" * 16)
SIZES = (100, 300, 600)
SETTINGS = dataclasses.replace(PLAIN_SETTINGS, region="us-east-1")
USAGE = JobUsage(
    vcpu_hours=0.4,
    memory_gb_hours=1.6,
    storage_gb_hours=0.0,
    created_at="2026-11-27T10:00:05Z",
    started_at="2026-11-27T10:01:10Z",
    ended_at="2026-11-27T10:02:00Z",
)


@pytest.fixture
def ledger(monkeypatch):
    yield from moto_ledger(monkeypatch)


def test_a_runs_billed_resources_are_priced_at_the_regions_rates():
    prices = EMR_SERVERLESS_PRICES["us-east-1"]
    fields = usage_fields(SETTINGS, USAGE)

    assert fields["cost_usd"] == pytest.approx(0.4 * prices.vcpu_hour + 1.6 * prices.memory_gb_hour)
    assert fields["price_region"] == "us-east-1"
    assert fields["job_running_at"] == "2026-11-27T10:01:10Z"
    # Configured prices win.
    assert prices_for("eu-west-1", "vcpu=1,memory=0.5,storage=0").cost(2, 2, 9) == 3.0
    with pytest.raises(ValueError, match="memory"):
        parse_prices("vcpu=1,storage=0")


def test_a_region_without_prices_records_the_resources_and_an_unknown_cost():
    """Not another region's rates: no price at all, until the deploy sets `emrPrices`."""
    unpriced = dataclasses.replace(SETTINGS, region="ap-south-1")
    assert "ap-south-1" not in EMR_SERVERLESS_PRICES
    assert prices_for("ap-south-1") is None

    fields = usage_fields(unpriced, USAGE)

    assert fields["vcpu_hours"] == 0.4 and fields["memory_gb_hours"] == 1.6
    assert "cost_usd" not in fields and "price_region" not in fields
    configured = dataclasses.replace(unpriced, emr_prices="vcpu=1,memory=0.5,storage=0")
    assert usage_fields(configured, USAGE)["cost_usd"] == pytest.approx(1.2)
    assert usage_fields(configured, USAGE)["price_region"] == "configured"


def test_every_priced_region_names_its_source():
    for region, prices in EMR_SERVERLESS_PRICES.items():
        assert prices.region == region
        assert PRICE_SOURCES[region].startswith("https://"), region


def test_a_run_emr_has_not_billed_records_its_times_and_no_cost():
    fields = usage_fields(SETTINGS, JobUsage(created_at="2026-11-27T10:00:05Z"))

    assert fields == {"job_submitted_at": "2026-11-27T10:00:05Z"}


def test_the_outcome_carries_the_usage_through_the_state_machine():
    outcome = Outcome(status=c.PUBLISHED, job_usage=USAGE)

    assert Outcome.from_dict(outcome.to_dict()) == outcome
    with pytest.raises(ValueError, match="vcpu_hours"):
        Outcome.from_dict({"status": "PUBLISHED", "job_usage": {"vcpu_hours": -1}})


def test_shares_by_bytes_add_up_to_the_whole():
    shares = split_by_bytes(0.1, [1, 1, 1])

    assert sum(shares) == 0.1
    assert split_by_bytes(1.0, [0, 0]) == [0.5, 0.5]  # no sizes known: equal shares


def _published_batch(ledger, settings):
    """A PUBLISHED batch of MEMBERS (RUNNING, of SIZES bytes) that used USAGE in the region
    of `settings`, as the ledger holds it."""
    for member, size in zip(MEMBERS, SIZES, strict=True):
        ledger.create_ingest(
            IngestRecord(ingest_id=member, table="s.t", status=c.RUNNING, batch_id=BATCH, size=size)
        )
    ledger.create_ingest(
        BatchRecord(
            ingest_id=BATCH,
            table="s.t",
            members=MEMBERS,
            sizes=SIZES,
            status=c.PUBLISHED,
            **usage_fields(settings, USAGE),
        )
    )
    return ledger.get_ingest(BATCH)


def test_a_batchs_cost_is_split_across_its_files_by_bytes(ledger):
    batch = _published_batch(ledger, SETTINGS)

    settle_members(SETTINGS, ledger, batch)

    files = [ledger.get_ingest(member) for member in MEMBERS]
    assert [f.cost_usd for f in files] == pytest.approx([batch.cost_usd * s / 1000 for s in SIZES])
    assert sum(f.cost_usd for f in files) == pytest.approx(batch.cost_usd, abs=1e-15)
    assert [f.vcpu_hours for f in files] == pytest.approx([0.04, 0.12, 0.24])
    assert {f.job_running_at for f in files} == {"2026-11-27T10:01:10Z"}
    assert {f.price_region for f in files} == {"us-east-1"}


def test_a_batchs_resources_are_split_across_its_files_when_its_cost_is_unknown(ledger):
    unpriced = dataclasses.replace(SETTINGS, region="ap-south-1")
    settle_members(unpriced, ledger, _published_batch(ledger, unpriced))

    files = [ledger.get_ingest(member) for member in MEMBERS]
    assert [f.vcpu_hours for f in files] == pytest.approx([0.04, 0.12, 0.24])
    assert {f.cost_usd for f in files} == {None}
    assert {f.price_region for f in files} == {None}


def test_the_time_split_adds_up_to_the_upload_to_publish_time():
    record = IngestRecord(
        ingest_id="1" * 16,
        status=c.PUBLISHED,
        uploaded_at="2026-11-27T09:59:58Z",
        created_at="2026-11-27T10:00:00Z",
        finished_at="2026-11-27T10:02:31Z",
        **usage_fields(SETTINGS, USAGE),
    )

    phases = time_split(record)

    assert [p.name for p in phases] == [
        "to trigger",
        "to job submitted",
        "EMR start-up",
        "job",
        "to outcome",
    ]
    assert [p.seconds for p in phases] == [2, 5, 65, 50, 31]
    assert sum(p.seconds for p in phases) == upload_to_outcome_seconds(record) == 153
    # EMR gave no times (a run cancelled before it ran): one phase from record to outcome.
    unknown = IngestRecord(
        ingest_id="2" * 16,
        created_at="2026-11-27T10:00:00Z",
        finished_at="2026-11-27T10:02:31Z",
    )
    assert [(p.name, p.seconds) for p in time_split(unknown)] == [("to outcome", 151)]
