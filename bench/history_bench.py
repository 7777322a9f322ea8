"""Local mode as its history grows: a command's start and one ingest's ledger writes, in
an empty home against a home holding N earlier ingests (issue 30, item 8).

    python -m bench.history_bench              # N = 10,000, 5 repeats
    python -m bench.history_bench --quick      # N = 500, 1 repeat, no warm-up (smoke test)

The big home is built by writing ingest records straight into its ledger database.
Timed in this process, each repeat alternating the two homes:
- start: the embedded stack a read-only command (`wap runs`, `wap show`) starts: Nessie,
  moto, the ledger and the kept objects restored from the home; then stopped;
- ingest: the ledger writes one ingest makes (record, take the table, the run's updates,
  the outcome, hand the table on), through the DynamoDB API, in the started stack;
- cold `wap runs`: a new process, start to exit, listing the newest 50.
Printed: the medians and the ratio big / empty for each. The target: at most 1.2 x.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.cli import BenchParser
from bench.doc import finish
from bench.timing import rotated
from bench.wap_process import cold_wap
from contracts.lifecycle import Status

# The heading of its section in docs/benchmarks.md.
TITLE = "Local mode as history grows"

TARGET_RATIO = 1.2


def build_home(root: Path, ingests: int) -> Path:
    """A home whose ledger holds `ingests` finished ingests of 20 tables."""
    from wap.runtime.home import WapHome
    from wap.runtime.state_store import write_ledger_items

    home = WapHome(root).create()
    items = []
    for number in range(ingests):
        iid = f"{number:016x}"
        items.append(
            {
                "pk": f"ingest#{iid}",
                "kind": "ingest",
                "ingest_id": iid,
                "table": f"hist.t{number % 20}",
                "status": Status.PUBLISHED,
                "key": f"hist/t{number % 20}/part-{number}.parquet",
                "source_uri": f"s3://wap-source/hist/t{number % 20}/part-{number}.parquet",
                "created_at": f"2026-01-01T00:{(number // 60) % 60:02d}:{number % 60:02d}Z",
                "updated_at": "2026-01-02T00:00:00Z",
                "finished_at": "2026-01-02T00:00:00Z",
                "rows_written": 1000,
                "size": 20_000,
                "attempts": 1,
            }
        )
    write_ledger_items(home, items)
    return root


def time_start(root: Path) -> float:
    """Seconds to start (and stop) the embedded stack of a read-only command."""
    from wap.runtime.embedded_stack import EmbeddedStack
    from wap.runtime.home import WapHome

    started = time.perf_counter()
    stack = EmbeddedStack(WapHome(root)).start()
    elapsed = time.perf_counter() - started
    stack.stop()
    return elapsed


def time_ingest_writes(root: Path, rounds: int = 20) -> float:
    """Seconds per ingest for the ledger writes of `rounds` ingests, in a started stack."""
    from ingestion.ledger import Ledger
    from wap.runtime.embedded_stack import EmbeddedStack
    from wap.runtime.home import WapHome

    stack = EmbeddedStack(WapHome(root)).start()
    try:
        assert stack.aws is not None
        ledger = Ledger(stack.aws.settings.ledger_table, stack.dynamodb())
        stamp = time.time_ns()
        started = time.perf_counter()
        for number in range(rounds):
            iid = f"{(stamp + number) % 16**16:016x}"
            table = "hist.bench"
            ledger.create_ingest(iid, {"table": table, "status": Status.RECEIVED, "size": 1})
            ledger.acquire_or_enqueue(table, iid)
            ledger.update_ingest(iid, status=Status.RUNNING, branch=f"wap_b_{iid}")
            ledger.update_ingest(iid, job_run_id="run", report_uri="s3://r")
            ledger.update_ingest(iid, status=Status.PUBLISHED, finished_at="2026-01-03T01Z")
            ledger.release(table, iid, take=lambda queue: 1, requeue=[])
        return (time.perf_counter() - started) / rounds
    finally:
        stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = BenchParser("bench.history_bench", "N = 500, one repeat, no warm-up")
    parser.add_argument("--ingests", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    ingests = args.ingests or (500 if args.quick else 10_000)
    repeats = args.repeats or (1 if args.quick else 5)

    with tempfile.TemporaryDirectory(prefix="wap-history-") as tmp:
        homes = {
            "empty": build_home(Path(tmp) / "empty", 0),
            "big": build_home(Path(tmp) / "big", ingests),
        }
        # Warm-up: the synthesized template, imports, caches (a smoke run measures nothing).
        for root in homes.values() if not args.quick else ():
            time_start(root)
        starts: dict[str, list[float]] = {name: [] for name in homes}
        writes: dict[str, list[float]] = {name: [] for name in homes}
        cold: dict[str, list[float]] = {name: [] for name in homes}
        for repeat in range(repeats):
            for name in rotated(list(homes), repeat):
                starts[name].append(time_start(homes[name]))
                writes[name].append(time_ingest_writes(homes[name]))
                cold[name].append(cold_wap(homes[name], "runs"))

    rows = []
    ratios = {}
    for label, samples in (
        ("stack start (in process)", starts),
        ("cold `wap runs` (a new process)", cold),
        ("one ingest's ledger writes", writes),
    ):
        empty, big = statistics.median(samples["empty"]), statistics.median(samples["big"])
        ratios[label] = big / empty
        rows.append(
            f"| {label} | {empty * 1000:.1f} ms | {big * 1000:.1f} ms | **{big / empty:.2f} x** |"
        )
    table = "\n".join(
        [
            f"| what | empty home (baseline) | home with {ingests:,} ingests | ratio |",
            "| --- | --- | --- | --- |",
            *rows,
        ]
    )
    verdict = all(ratio <= TARGET_RATIO for ratio in ratios.values())
    text = (
        f"{table}\n\nMedians of {repeats} repeat(s), homes alternating. Target: at most "
        f"{TARGET_RATIO} x: {'met' if verdict else 'NOT met'}."
    )
    return finish(args, argv, "bench.history_bench", TITLE, text, section="history")


if __name__ == "__main__":
    raise SystemExit(main())
