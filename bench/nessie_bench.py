"""Throughput of our Nessie-compatible server: get-reference and commit vs a no-op baseline.

Starts the server in-process on 127.0.0.1 with a fresh SQLite file, sends a bounded number of
sequential keep-alive requests per operation, and prints requests/s plus each operation's
ratio to `GET /api/v2/config` (the baseline: same HTTP stack, no repository work), all
measured in the same run. `python -m bench.nessie_bench [--requests N]`; `--quick` for a
smoke run.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.nessie_requests import iceberg_table, namespace_content, operations_body, put_op
from local.nessie.runner import start_server

MAX_REQUESTS = 20_000
QUICK_REQUESTS = 60  # --quick: a smoke run, 20 per round


ROUNDS = 3


def _rate(n: int, fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - start)


def run(requests: int) -> dict[str, float]:
    """Measure requests/s for the baseline, get-reference and commit; returns the rates."""
    with tempfile.TemporaryDirectory() as tmp:
        # The catalog's own cost per request, without authentication's.
        server = start_server(str(Path(tmp) / "bench.db"), host="127.0.0.1", secure=False)
        try:
            with httpx.Client(base_url=server.api_v2, timeout=30) as api:

                def config() -> None:
                    api.get("/config").raise_for_status()

                def get_ref() -> None:
                    api.get("/trees/main").raise_for_status()

                head = api.get("/trees/main").json()["reference"]["hash"]
                body = operations_body("ns", put_op(["bench"], namespace_content(["bench"])))
                resp = api.post(f"/trees/main@{head}/history/commit", json=body)
                state = {"head": resp.json()["targetBranch"]["hash"]}
                counter = itertools.count()

                def do_commit() -> None:
                    i = next(counter)
                    body = operations_body(
                        f"c{i}", put_op(["bench", f"t{i}"], iceberg_table(f"s3://b/{i}"))
                    )
                    resp = api.post(f"/trees/main@{state['head']}/history/commit", json=body)
                    resp.raise_for_status()
                    state["head"] = resp.json()["targetBranch"]["hash"]

                ops = {"config (baseline)": config, "get-reference": get_ref, "commit": do_commit}
                for fn in ops.values():  # warm-up: connection, caches
                    for _ in range(min(20, requests)):
                        fn()
                # Interleaved rounds, median per operation: less sensitive to a busy machine.
                per_round = max(1, requests // ROUNDS)
                rates: dict[str, list[float]] = {name: [] for name in ops}
                for _ in range(ROUNDS):
                    for name, fn in ops.items():
                        rates[name].append(_rate(per_round, fn))
                return {name: statistics.median(values) for name, values in rates.items()}
        finally:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table of requests/s and ratios to the baseline.

    `argv` None means the defaults (so `python -m bench` can call `main()` whatever its own
    command line is); the script entry point passes `sys.argv[1:]`.
    """
    from bench.cli import BenchParser

    parser = BenchParser(
        "bench.nessie_bench",
        f"{QUICK_REQUESTS} requests per operation (it writes no doc section either way)",
    )
    parser.description = __doc__.splitlines()[0]
    parser.add_argument(
        "--requests",
        type=int,
        default=500,
        help=f"requests per operation (1..{MAX_REQUESTS}, default 500)",
    )
    args = parser.parse_args([] if argv is None else argv)
    if not 1 <= args.requests <= MAX_REQUESTS:
        parser.error(f"--requests must be between 1 and {MAX_REQUESTS}")
    requests = QUICK_REQUESTS if args.quick else args.requests
    rates = run(requests)
    baseline = rates["config (baseline)"]
    print(
        f"nessie server, {requests} sequential requests per operation "
        f"({ROUNDS} interleaved rounds, median), 127.0.0.1"
    )
    print(f"{'operation':<20}{'req/s':>10}{'vs baseline':>14}")
    for name, rate in rates.items():
        print(f"{name:<20}{rate:>10.0f}{rate / baseline:>13.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
