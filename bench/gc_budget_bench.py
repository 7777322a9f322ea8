"""Garbage collection's mark on a large history, and what its time budget and checkpoint
save (issue 42).

    python -m bench.gc_budget_bench            # 40 references x 250 commits x 8 tables
    python -m bench.gc_budget_bench --quick    # 8 x 50 x 4 (smoke test)

The catalog is an in-process double of Nessie's history (every reference a chain of
commits, one a minute, each holding the same tables; views, so no file is read): what
is measured is the mark's own work, which grows with live commits x tables. Measured in
this run, against its own baselines:
- growth: one unbudgeted collection over the history, then over a history twice as deep
  (the ratio of their times, and of the contents they visit);
- budget: collections each given a quarter of the unbudgeted run's time, each continuing
  the last one's checkpoint (as the daily run does), until one completes: how many runs,
  the contents they visited in all against one unbudgeted run's (the work a checkpoint
  saves: without it, every run would start over and none would finish), and whether the
  last found what the unbudgeted run found.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from bench.cli import BenchParser
from bench.doc import finish
from bench.view_history import NOW, ViewHistory

# The heading of its section in docs/benchmarks.md.
TITLE = "Garbage collection: the mark's work and its time budget"


def _history(root: Path, refs: int, depth: int, tables: int) -> ViewHistory:
    """`refs` references of `depth` commits over `tables` views (no files: nothing reads them)."""
    return ViewHistory(root, refs, depth, views=tuple(f"ns.t{t}" for t in range(tables)))


def collect_once(history: ViewHistory, budget_seconds: float | None = None, resume=None):
    """One collection (report, seconds, contents visited)."""
    from ingestion.maintenance.gc import Budget, GcOptions, LocalWarehouse, collect

    history.reads = 0
    budget = (
        None
        if budget_seconds is None
        else Budget(time.monotonic, time.monotonic() + budget_seconds)
    )
    began = time.perf_counter()
    report = collect(
        history,
        LocalWarehouse(history.root),
        GcOptions(retention=timedelta(days=30), grace=timedelta(0)),
        clock=lambda: NOW,
        budget=budget,
        resume=resume,
    )
    return report, time.perf_counter() - began, history.reads * len(history.views)


def main(argv: list[str] | None = None) -> int:
    parser = BenchParser("bench.gc_budget_bench", "8 references x 50 commits x 4 tables")
    args = parser.parse_args(argv)
    refs, depth, tables = (8, 50, 4) if args.quick else (40, 250, 8)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wap-gc-budget-") as tmp:
        root = Path(tmp)
        (root / "ns").mkdir()
        base = _history(root, refs, depth, tables)
        deep = _history(root, refs, depth * 2, tables)
        repeats = 1 if args.quick else 3
        collect_once(_history(root, 2, 5, 2))  # warm-up: imports
        whole = [collect_once(base) for _ in range(repeats)]
        doubled = [collect_once(deep) for _ in range(repeats)]
        seconds = statistics.median(s for _, s, _ in whole)
        deep_seconds = statistics.median(s for _, s, _ in doubled)
        report, _, visits = whole[0]

        runs, total_visits, budgeted = 0, 0, None
        checkpoint_bytes = 0
        while budgeted is None or not budgeted.complete:
            resume = None if budgeted is None else json.loads(json.dumps(budgeted.checkpoint))
            budgeted, _, used = collect_once(base, seconds / 4, resume)
            runs += 1
            total_visits += used
            if budgeted.checkpoint is not None:
                checkpoint_bytes = max(checkpoint_bytes, len(json.dumps(budgeted.checkpoint)))
            if runs > 50:
                raise SystemExit("the budgeted runs did not complete within 50 runs")
        same = budgeted.marked_files == report.marked_files and {
            f.path for f in budgeted.garbage
        } == {f.path for f in report.garbage}

    table = "\n".join(
        [
            "| measured | baseline | measured | ratio |",
            "| --- | --- | --- | --- |",
            f"| mark time, history twice as deep | {seconds:.2f} s ({refs} refs x {depth} "
            f"commits x {tables} tables) | {deep_seconds:.2f} s | "
            f"**{deep_seconds / seconds:.2f} x** |",
            f"| contents visited, history twice as deep | {visits:,} | {doubled[0][2]:,} | "
            f"**{doubled[0][2] / visits:.2f} x** |",
            f"| contents visited by budgeted runs (a quarter of the time each), in all | "
            f"{visits:,} (one unbudgeted run) | {total_visits:,} over {runs} runs | "
            f"**{total_visits / visits:.2f} x** |",
        ]
    )
    text = (
        f"{table}\n\nThe budgeted runs ended with what one unbudgeted run finds: "
        f"**{'yes' if same else 'NO'}**; the largest checkpoint was "
        f"{checkpoint_bytes / 1e6:.1f} MB of JSON before gzip. The mark's work grows with "
        "live commits x tables; a run cut short by its budget keeps its checkpoint, and the "
        "runs after it visit each commit once in all (a run that takes up main's walk "
        "reads main's head again), where runs starting over would each redo the same first "
        "quarter and never finish."
    )
    finish(args, argv, "bench.gc_budget_bench", TITLE, text, started)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
