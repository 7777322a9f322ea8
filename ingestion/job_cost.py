"""What a load cost: a job run's billed resources (EMR Serverless' GetJobRun, as job_status
reads them into `contracts.state.JobUsage`) priced with `contracts.pricing`, as the fields
the ledger records on the run's record; and a batch's cost shared out over its files by
their bytes."""

from __future__ import annotations

from typing import Any

from contracts.pricing import prices_for, split_by_bytes
from contracts.state import JobUsage
from ingestion.config import Settings
from ingestion.ledger import BatchRecord

# The fields a run's cost is recorded in, and shared out over a batch's files.
COST_FIELDS = ("vcpu_hours", "memory_gb_hours", "storage_gb_hours", "cost_usd")
# The ended run's EMR state times, the same for every file of a batch.
JOB_TIME_FIELDS = ("job_submitted_at", "job_running_at", "job_ended_at")


def usage_fields(settings: Settings, usage: JobUsage | None) -> dict[str, Any]:
    """The ledger fields of an ended run's usage: EMR's state times, and when EMR billed
    it, the resources and their price (no price where the region has none; none of them
    when nothing is known)."""
    if usage is None:
        return {}
    fields: dict[str, Any] = {
        "job_submitted_at": usage.created_at,
        "job_running_at": usage.started_at,
        "job_ended_at": usage.ended_at,
    }
    if usage.billed:
        vcpu = usage.vcpu_hours or 0.0
        memory = usage.memory_gb_hours or 0.0
        storage = usage.storage_gb_hours or 0.0
        fields.update(vcpu_hours=vcpu, memory_gb_hours=memory, storage_gb_hours=storage)
        # No prices for the region (and none configured): the cost stays unknown.
        prices = prices_for(settings.region, settings.emr_prices)
        if prices is not None:
            fields.update(cost_usd=prices.cost(vcpu, memory, storage), price_region=prices.region)
    return {name: value for name, value in fields.items() if value is not None}


def member_fields(batch: BatchRecord) -> dict[str, dict[str, Any]]:
    """Each file's part of its batch's run: the run's EMR times, and its share of the run's
    resources and cost in proportion to its bytes (equal shares when no size is known)."""
    members = list(batch.members)
    times = {name: batch.field_value(name) for name in JOB_TIME_FIELDS}
    result: dict[str, dict[str, Any]] = {
        member: {k: v for k, v in times.items() if v is not None} for member in members
    }
    if all(batch.field_value(name) is None for name in COST_FIELDS):
        return result
    sizes = list(batch.sizes) if len(batch.sizes) == len(members) else [0] * len(members)
    for name in COST_FIELDS:
        total = batch.field_value(name)
        if total is None:
            continue
        for member, share in zip(members, split_by_bytes(float(total), sizes), strict=True):
            result[member][name] = share
    if batch.price_region is not None:
        for member in members:
            result[member]["price_region"] = batch.price_region
    return result
