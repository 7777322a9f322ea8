"""Cold `wap query` on the demo's failed branch against a cold `wap show` of the same branch.

    python -m bench.query_bench                   # runs `wap demo` into a temp home, 7 repeats
    python -m bench.query_bench --home .wap       # an existing home with a failed branch
    python -m bench.query_bench --quick           # 1 repeat, no warm-up (smoke test)

Cold means a new `wap` process each time, as a person types it: interpreter start,
imports, the local stack (Nessie server, moto, the ledger restored from the home), then
the command's own work. `show` (the baseline) reads the ledger, the audit report and
both row counts from Iceberg metadata; `query` resolves the branch, reads the table on it
with pyiceberg and runs the violating-rows query `wap show` suggests in DuckDB. Each
repeat runs both, in alternating order, after one untimed warm-up of each (page cache;
not with --quick);
the ratio of the medians is printed (stdout and docs/benchmarks.md). The target: query at
most 1.5 x show.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from bench.cli import Benchmark, Option
from bench.timing import rotated
from bench.wap_process import cold_wap
from contracts.lifecycle import Status

BENCHMARK = Benchmark(
    "bench.query_bench",
    "Cold `wap query` vs cold `wap show`",
    "1 repeat, no warm-up (smoke test)",
    {
        "home": Option(
            None, help="a wap home with a failed branch (default: a fresh demo)", parse=str
        ),
        "repeats": Option(7, 1),
    },
)

TARGET_RATIO = 1.5


def failed_branch(home: Path) -> str:
    """The open branch of the home's AUDIT_FAILED ingest into sales.orders with an audit
    report (the demo makes exactly one; a seeded home may hold other failed ingests)."""
    from wap.runtime.home import WapHome
    from wap.runtime.state_store import read_ledger_items

    items = read_ledger_items(WapHome(home))
    branches = [
        i["branch"]
        for i in items
        if i.get("status") == Status.AUDIT_FAILED
        and i.get("table") == "sales.orders"
        and i.get("report_uri")
    ]
    if not branches:
        raise RuntimeError(f"{home} has no AUDIT_FAILED ingest: run `wap demo` there first")
    return branches[-1]


def run(home: Path, repeats: int, *, warm_up: bool = True) -> dict[str, list[float]]:
    """Interleaved cold runs of `show BRANCH` and `query BRANCH SQL`; seconds per run.
    `warm_up`: one untimed run of each first."""
    from lakeview.check_sql import violation_query

    branch = failed_branch(home)
    sql = violation_query(
        {"kind": "range", "columns": ["amount"], "threshold": {"min": 0, "max": 1000000}},
        "sales.orders",
    )
    assert sql is not None
    commands = {"show": ["show", branch], "query": ["query", branch, sql]}
    for args in commands.values() if warm_up else ():  # warm-up: page cache, bytecode
        cold_wap(home, *args)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(repeats):
        for name in rotated(list(commands), i):
            times[name].append(cold_wap(home, *commands[name]))
    return times


def render(
    times: dict[str, list[float]], branch: str, home_note: str, *, warm_up: bool = True
) -> str:
    show, query = statistics.median(times["show"]), statistics.median(times["query"])
    ratio = query / show
    repeats = len(times["show"])
    lines = [
        "| command (a new process each run) | median s | min s | max s | x show |",
        "|---|---|---|---|---|",
    ]
    for name, label in (
        ("show", f"`wap show {branch}` (baseline)"),
        ("query", f'`wap query {branch} "<amount_range\'s violating rows>"`'),
    ):
        values = times[name]
        lines.append(
            f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | "
            f"{max(values):.2f} | {statistics.median(values) / show:.2f} |"
        )
    verdict = "within" if ratio <= TARGET_RATIO else "ABOVE"
    lines += [
        "",
        f"Median of {repeats}, interleaved, "
        f"{'after one warm-up run of each' if warm_up else 'no warm-up'}; {home_note}. "
        f"query / show = **{ratio:.2f}**, {verdict} the {TARGET_RATIO} target.",
    ]
    return "\n".join(lines)


def markdown(args: argparse.Namespace) -> str:
    """The table of a run at the sizes of `args`, on `args.home` or a fresh demo's."""
    scratch = None
    if args.home:
        home = Path(args.home).resolve()
        note = f"home {home}"
    else:
        scratch = Path(tempfile.mkdtemp(prefix="wap-query-bench-"))
        home = scratch / "home"
        print("running `wap demo` for a failed branch (Spark: about a minute)…", flush=True)
        cold_wap(home, "demo")
        note = "a fresh `wap demo` home (sales.orders: 40 rows on main, 80 on the branch)"
    try:
        times = run(home, args.repeats, warm_up=not args.quick)
        return render(times, failed_branch(home), note, warm_up=not args.quick)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
