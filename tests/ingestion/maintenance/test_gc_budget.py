"""Garbage collection within a time budget (ingestion/maintenance/gc.py, issue 42): a mark
that outlasts its budget stops between commits, sweeps nothing and returns a checkpoint; a
run resumed from it continues where the last stopped and ends as one run would have.

The catalog (bench/view_history.py) holds views (a view's metadata JSON is all it marks:
no Iceberg reads), the warehouse is a directory, and the budget's clock is the catalog's
work (one tick a commit read), so nothing here waits.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta

from bench.view_history import NOW, ViewHistory
from ingestion.maintenance.gc import Budget, GcOptions, LocalWarehouse, collect


def _garbage(root, names: int) -> set[str]:
    made = set()
    for number in range(names):
        path = root / "ns" / "v" / "data" / f"orphan-{number}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
        made.add(str(path))
    return made


def test_a_mark_that_outlasts_its_budget_sweeps_nothing_and_the_next_run_continues_it(
    tmp_path,
):
    history = ViewHistory(tmp_path / "w", refs=4, commits=6, write_files=True)
    orphans = _garbage(tmp_path / "w", 3)
    warehouse = LocalWarehouse(tmp_path / "w")
    options = GcOptions(grace=timedelta(0), delete=True)

    def run(resume=None, budget_reads=None):
        budget = (
            None if budget_reads is None else Budget(history.clock, history.clock() + budget_reads)
        )
        return collect(history, warehouse, options, clock=lambda: NOW, budget=budget, resume=resume)

    first = run(budget_reads=5)
    assert first.complete is False and first.deleted is False
    assert first.garbage == [] and all(os.path.exists(p) for p in orphans)  # nothing swept
    assert history.reads == 5
    # Main's head is marked first, so the day's compaction still knows main's tables.
    checkpoint = json.loads(json.dumps(first.checkpoint))  # what S3 keeps
    assert list(checkpoint["main_contents"]) == ["ns.v"]

    runs, report = 1, first
    while not report.complete:
        report = run(resume=json.loads(json.dumps(report.checkpoint)), budget_reads=5)
        runs += 1
        assert runs < 10
    # Every commit was read once over all the runs (none started over), but main's head:
    # the run that takes up main's walk reads its tables again, as main's.
    assert history.reads == 4 * 6 + 1 and runs == 5
    assert report.resumed is True and report.live_commits == 4 * 6
    assert {f.path for f in report.garbage} == orphans
    assert not any(os.path.exists(p) for p in orphans)
    assert checkpoint["checkpoint_version"] == 1


def test_a_resumed_run_finds_what_one_unbudgeted_run_finds(tmp_path):
    history = ViewHistory(tmp_path / "w", refs=3, commits=5, write_files=True)
    orphans = _garbage(tmp_path / "w", 2)
    warehouse = LocalWarehouse(tmp_path / "w")
    options = GcOptions(grace=timedelta(0))
    whole = collect(history, warehouse, options, clock=lambda: NOW)
    whole_reads, history.reads = history.reads, 0

    cut = collect(
        history,
        warehouse,
        options,
        clock=lambda: NOW,
        budget=Budget(history.clock, 7.0),
    )
    assert cut.complete is False
    resumed = collect(
        history, warehouse, options, clock=lambda: NOW + timedelta(hours=1), resume=cut.checkpoint
    )
    assert history.reads == whole_reads
    assert {f.path for f in resumed.garbage} == {f.path for f in whole.garbage} == orphans
    assert resumed.marked_files == whole.marked_files
    # The resumed run dates from the first: files written since it began stay young.
    assert resumed.started == NOW


def test_a_reference_that_moved_between_the_runs_is_walked_from_its_new_head(tmp_path):
    history = ViewHistory(tmp_path / "w", refs=2, commits=4, write_files=True)
    warehouse = LocalWarehouse(tmp_path / "w")
    options = GcOptions(grace=timedelta(0))
    cut = collect(history, warehouse, options, clock=lambda: NOW, budget=Budget(history.clock, 2.0))
    assert cut.complete is False
    # b1 gets a new commit whose view file is new: a checkpoint must not hide it.
    new_head = "9" * 64
    history.logs["b1"].insert(0, new_head)
    path = history.location(new_head)
    history.write(path)
    resumed = collect(history, warehouse, options, clock=lambda: NOW, resume=cut.checkpoint)
    assert path not in {f.path for f in resumed.garbage}
    assert resumed.complete
