"""Run every benchmark: `python -m bench [name ...]` (see `make bench`).

Each benchmark measures its own baseline in the same run and prints ratios
against it, because absolute seconds on shared machines mean little.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "nessie": "bench.nessie_bench",
    "lambda_sizes": "bench.lambda_sizes",
    "wap_job": "bench.wap_job_bench",
    "audit_floor": "bench.audit_floor_bench",
    "query": "bench.query_bench",
    "burst": "bench.burst_bench",
    "per_source_audit": "bench.per_source_audit_bench",
    "history": "bench.history_bench",
    "csv": "bench.csv_bench",
    "dataset": "bench.dataset_bench",
    "foreign_key": "bench.foreign_key_bench",
    "maintenance": "bench.maintenance_bench",
    "metric_history": "bench.metric_history_bench",
    "gc_budget": "bench.gc_budget_bench",
}


PASSED_ON = ("--quick", "--no-doc")  # given to every benchmark run


def main(argv: list[str] | None = None) -> int:
    """`python -m bench [--quick] [--no-doc] [name ...]`: the named benchmarks (default all)
    one after another in this process, each under a `=== name ===` line; 1 when any
    failed (the rest still run)."""
    args = argv if argv is not None else sys.argv[1:]
    flags = [arg for arg in args if arg in PASSED_ON]
    names = [arg for arg in args if arg not in PASSED_ON] or list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
        return 2
    failed = []
    for name in names:
        print(f"\n=== {name} ===", flush=True)
        module = importlib.import_module(BENCHMARKS[name])
        if module.main(flags):
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
