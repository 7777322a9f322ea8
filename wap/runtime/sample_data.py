"""Demo data for `wap demo`: two parquet files for `sales.orders` (tables/sales.orders.yaml).

One batch is clean; the other is the same kind of batch with a few negative
amounts, which break the table's `range` check on `amount` (min 0) and nothing
else. Order ids start from the current time, so repeated demos append new
orders and never trip the `unique ... against_main` check.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

DEMO_TABLE = "sales.orders"
STATUSES = ("NEW", "PAID", "SHIPPED", "CANCELLED")
BATCH_ROWS = 40
NEGATIVE_AMOUNT_ROWS = 3


@dataclass(frozen=True)
class DemoFiles:
    """The two files a demo drops, and the table they go to."""

    table: str
    clean: Path
    broken: Path


def orders(first_id: int, rows: int, now: datetime, *, seed: int, negative_amounts: int = 0):
    """A pyarrow table with the columns of `sales.orders`; the last rows get negative amounts."""
    import pyarrow as pa

    rng = random.Random(seed)
    amounts = [Decimal(rng.randint(100, 50_000)) / 100 for _ in range(rows)]
    discounts: list[Decimal | None] = [
        (a * Decimal("0.10")).quantize(Decimal("0.01")) if rng.random() < 0.3 else None
        for a in amounts
    ]
    for i in range(rows - negative_amounts, rows):
        amounts[i] = -amounts[i]
        discounts[i] = None  # keep `discount_within_amount` passing: one broken check only
    ids = list(range(first_id, first_id + rows))
    customers = [rng.randint(1000, 9999) for _ in range(rows)]
    return pa.table(
        {
            "order_id": pa.array(ids, pa.int64()),
            "customer_id": pa.array(customers, pa.int64()),
            "status": pa.array([rng.choice(STATUSES) for _ in range(rows)], pa.string()),
            "amount": pa.array(amounts, pa.decimal128(12, 2)),
            "discount": pa.array(discounts, pa.decimal128(12, 2)),
            "email": pa.array([f"customer{c}@example.com" for c in customers], pa.string()),
            "order_ts": pa.array(
                [now - timedelta(minutes=rng.randint(1, 600)) for _ in range(rows)],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


def write_demo_files(directory: Path, now: datetime | None = None) -> DemoFiles:
    """Write the clean and the broken batch under `directory`; names carry the time."""
    import pyarrow.parquet as pq

    now = now or datetime.now(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%S")
    first_id = int(now.timestamp()) * 1000
    directory.mkdir(parents=True, exist_ok=True)
    clean = directory / f"orders-{stamp}-clean.parquet"
    broken = directory / f"orders-{stamp}-negative-amounts.parquet"
    pq.write_table(orders(first_id, BATCH_ROWS, now, seed=1), clean)
    pq.write_table(
        orders(
            first_id + BATCH_ROWS, BATCH_ROWS, now, seed=2, negative_amounts=NEGATIVE_AMOUNT_ROWS
        ),
        broken,
    )
    return DemoFiles(table=DEMO_TABLE, clean=clean, broken=broken)
