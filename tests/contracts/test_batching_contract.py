"""The table config's batch limits (contracts/batching.py): how many queued files a run takes."""

from __future__ import annotations

import pytest

from contracts.batching import BatchConfigError, BatchLimits, parse_arrival


def test_a_run_takes_files_in_order_up_to_either_limit_and_always_one():
    limits = BatchLimits(max_files=3, max_bytes=100)
    assert limits.take([10, 10, 10, 10]) == 3  # max_files
    assert limits.take([60, 30, 20]) == 2  # the third would pass max_bytes
    assert limits.take([500, 1]) == 1  # one file larger than the limit still runs, alone
    assert limits.take([]) == 0
    assert BatchLimits(max_files=1).take([1, 1]) == 1  # the behaviour before batches


def test_limits_parse_units_and_refuse_what_they_cannot_read():
    limits = BatchLimits.from_config(
        {"max_files": 20, "max_bytes": "2GiB", "marker_timeout": "30m"}
    )
    assert (limits.max_files, limits.max_bytes, limits.marker_timeout_seconds) == (
        20,
        2 * 1024**3,
        1800,
    )
    assert BatchLimits.from_config(None) == BatchLimits()
    assert parse_arrival(None) == "event" and parse_arrival("marker") == "marker"
    for section in (
        {"max_files": True},
        {"max_bytes": "1 parsec"},
        {"marker_timeout": "-1h"},
        {"max_file": 2},
        [1],
    ):
        with pytest.raises(BatchConfigError):
            BatchLimits.from_config(section)


def test_the_lambdas_take_the_queue_by_the_contracts_rule():
    """queue_taker only decides which files may run together; how many of them run is
    `BatchLimits.take` (a solo head runs alone, and the byte limit holds before a solo)."""
    from ingestion.batching import queue_taker
    from ingestion.ledger import IngestRecord

    records = {
        "a": IngestRecord(ingest_id="a", size=100),
        "b": IngestRecord(ingest_id="b", size=100),
        "c": IngestRecord(ingest_id="c", size=1, solo=True),
        "d": IngestRecord(ingest_id="d", size=1),
    }

    class Ledger:
        def get_ingests(self, ids):
            return {i: records[i] for i in ids if i in records}

    take = queue_taker(Ledger(), BatchLimits(max_files=10, max_bytes=150))
    assert take(["a", "b", "c"]) == 1  # the byte limit, though a solo file ends the group
    assert take(["c", "d"]) == 1  # a solo head runs alone
    assert take(["missing", "d"]) == 1  # an unknown head too
    assert take(["d", "a", "c"]) == 2
