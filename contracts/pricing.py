"""What an EMR Serverless job run costs: the price table, and a run's billed resources priced.

EMR Serverless bills each job run for the vCPU, memory and storage of its workers, per
second with a 1-minute minimum per worker, storage only above 20 GB per worker; GetJobRun
reports what it billed as `billedResourceUtilization` (vCPUHour, memoryGBHour,
storageGBHour; https://docs.aws.amazon.com/emr-serverless/latest/APIReference/API_JobRun.html).
This module is the one place that turns those into money.

Prices are USD per unit-hour of the x86_64 architecture (the stack's), on demand, each
region's from the source PRICE_SOURCES names, recorded here on PRICES_AS_OF. Only regions
whose prices were found in a source are listed: us-east-1 (US East (N. Virginia)). The
regional prices of us-east-2, us-west-2, eu-west-1, eu-central-1 and ap-southeast-2 were
looked for and not found in a readable source (AWS's pricing page renders them in the
browser), so they are left out rather than guessed. A region without an entry has no
price: a run's billed resources are recorded and its cost is unknown (never another
region's rates), until the deploy sets its own (`-c emrPrices=...`, `WAP_EMR_PRICES` on
the Lambdas), which also wins where the table has the region (Graviton, a negotiated
rate). `wap doctor` and the synth say when a stack's costs will be unknown.

Standard library only and Python 3.9-compatible, like the rest of `contracts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contracts.fields import ContractError

PRICES_AS_OF = "2026-11-27"
CONFIGURED = "configured"  # EmrPrices.region of prices set by the deploy (EMR_PRICES)


class PricesError(ContractError):
    """A configured price list is malformed (the message says which part)."""


@dataclass(frozen=True)
class EmrPrices:
    """USD per vCPU-hour, per GB-hour of memory and per GB-hour of storage (above the free
    20 GB per worker); `region`: whose prices these are (or CONFIGURED)."""

    vcpu_hour: float
    memory_gb_hour: float
    storage_gb_hour: float
    region: str

    def cost(self, vcpu_hours: float, memory_gb_hours: float, storage_gb_hours: float) -> float:
        """USD for the given billed resources."""
        return (
            vcpu_hours * self.vcpu_hour
            + memory_gb_hours * self.memory_gb_hour
            + storage_gb_hours * self.storage_gb_hour
        )


# The table: one entry per region whose prices were read, each with its source in
# PRICE_SOURCES (see the module docstring).
EMR_SERVERLESS_PRICES: Mapping[str, EmrPrices] = {
    "us-east-1": EmrPrices(
        vcpu_hour=0.052624, memory_gb_hour=0.0057785, storage_gb_hour=0.000111, region="us-east-1"
    ),
}


PRICE_SOURCES: Mapping[str, str] = {
    # "Amazon EMR Serverless" on the EMR pricing page, US East (N. Virginia), x86.
    "us-east-1": "https://aws.amazon.com/emr/pricing/",
}


def parse_prices(text: str) -> EmrPrices:
    """Prices set by the deploy: `vcpu=<usd>,memory=<usd>,storage=<usd>` (per hour)."""
    values = {}
    for part in text.split(","):
        name, equals, number = part.strip().partition("=")
        if not equals or name not in ("vcpu", "memory", "storage"):
            raise PricesError(
                f"EMR prices {text!r}: expected vcpu=<usd>,memory=<usd>,storage=<usd>"
            )
        try:
            values[name] = float(number)
        except ValueError as exc:
            raise PricesError(f"EMR prices {text!r}: {name} is not a number") from exc
        if values[name] < 0:
            raise PricesError(f"EMR prices {text!r}: {name} is negative")
    missing = {"vcpu", "memory", "storage"} - set(values)
    if missing:
        raise PricesError(f"EMR prices {text!r}: missing {', '.join(sorted(missing))}")
    return EmrPrices(values["vcpu"], values["memory"], values["storage"], region=CONFIGURED)


def prices_for(region: str | None, configured: str | None = None) -> EmrPrices | None:
    """The prices to use in `region`: the configured ones when set, else the table's entry
    for the region, else None (the cost is unknown: no other region's rates stand in)."""
    if configured:
        return parse_prices(configured)
    return EMR_SERVERLESS_PRICES.get(region or "")


def missing_prices(region: str | None, configured: str | None = None) -> str | None:
    """Why loads in `region` will have no cost (one sentence naming the setting), or None
    when they will be priced."""
    if prices_for(region, configured) is not None:
        return None
    return (
        f"no EMR Serverless prices for {region or 'an unknown region'} in contracts/pricing.py "
        f"(priced: {', '.join(sorted(EMR_SERVERLESS_PRICES))}): each load's billed "
        "resources are recorded and its cost shows as unknown; set "
        "-c emrPrices=vcpu=<usd>,memory=<usd>,storage=<usd> (per hour) to price them"
    )


def split_by_bytes(total: float, sizes: Sequence[int]) -> list:
    """`total` shared out in proportion to `sizes` (a batch's cost over its files); equal
    shares when no size is known. The shares add up to `total` (the last takes the
    rounding remainder)."""
    if not sizes:
        return []
    known = [max(0, int(size or 0)) for size in sizes]
    whole = sum(known)
    weights = known if whole else [1] * len(known)
    denominator = whole or len(known)
    shares = [total * weight / denominator for weight in weights[:-1]]
    return [*shares, total - sum(shares)]
