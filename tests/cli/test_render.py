"""Plain renderings of the CLI that need no backend."""

from __future__ import annotations

from lambdas.common.ledger import QueueStat
from wap.cli import render


def test_queue_lines_say_how_many_files_wait_and_for_how_long():
    lines = render.queue_lines(
        [QueueStat("sales.orders", 3, 754.0), QueueStat("sales.refunds", 1, 12.0)]
    )
    assert lines == [
        "queued for sales.orders: 3 files, the oldest waiting 12m",
        "queued for sales.refunds: 1 file, the oldest waiting 12s",
    ]
    assert render.queue_lines([]) == []
