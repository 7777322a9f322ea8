"""The benchmarks still run and still measure what they claim (smoke size, SF 0.01).

Those that run Spark (SHARED) run here, one after another as `make bench` runs them, in
the suite's own SparkSession (bench.scratch.lend_spark): a fresh JVM's start and warm-up
cost more than the benchmarks' smoke sizes. The others run in processes of their own, as
`python -m bench...` does. Timings are not asserted (they belong to `make bench`); what is
asserted comes from the TPC-H generator and Iceberg, not from our code: SF 0.01 lineitem
has 60,175 rows, and a `not_null` on a column whose file reports no nulls is answered from
metrics without reading a row.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest

from tests.fixtures.paths import REPO

LINEITEM_SF001_ROWS = "60,175"


def _run_quick(module: str, *args: str, timeout: float = 600) -> str:
    """The stdout of `python -m module --quick --no-doc *args`, which must exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--quick", "--no-doc", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


# The benchmarks that run Spark, in this process and its JVM (the suite's time budget).
SHARED = ("audit_floor", "wap_job", "burst", "per_source_audit", "quarantine")


@pytest.fixture(scope="module")
def quick_outputs(spark) -> dict[str, str]:
    """Each of SHARED's output (`python -m bench --quick --no-doc ...`), by name."""
    from bench.__main__ import main
    from bench.scratch import lend_spark

    printed = io.StringIO()
    with lend_spark(spark), contextlib.redirect_stdout(printed):
        failed = main([*SHARED, "--quick", "--no-doc"])
    out = printed.getvalue()
    assert failed == 0, out[-4000:]
    sections = out.split("\n=== ")
    outputs = {section.split(" ===", 1)[0]: section for section in sections[1:]}
    assert sorted(outputs) == sorted(SHARED), out[-2000:]
    return outputs


@pytest.mark.slow
def test_audit_floor_bench_counts_what_each_side_reads(quick_outputs):
    out = quick_outputs["audit_floor"]

    assert "| seed audit: 10 `count(*) ... WHERE` queries (baseline) |" in out
    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:]
        for line in out.splitlines()
        if line.startswith(("| seed: ", "| ours: "))
    }
    assert len([name for name in rows if name.startswith("seed: ")]) == 10
    # Pruned by file metrics: no rows read, not even the file opened.
    assert rows["seed: `l_orderkey IS NULL`"] == ["1", "0", "0 |"]
    # The dirty l_partkey has nulls: the seed reads all of it; our metrics settle it.
    assert rows["seed: `l_partkey IS NULL`"][1] == LINEITEM_SF001_ROWS
    assert rows["ours: the aggregation pass"][1] == LINEITEM_SF001_ROWS
    assert "Column values decoded (rows read x columns scanned" in out


@pytest.mark.slow
def test_wap_job_bench_runs_all_variants(quick_outputs):
    out = quick_outputs["wap_job"]

    assert "measured SF 0.01 clean: append" in out
    assert "measured SF 0.01 dirty: append" in out
    table = [line for line in out.splitlines() if line.startswith("| 0.01 |")]
    assert len(table) == 8  # clean and dirty in each of the four tables


@pytest.mark.slow
def test_query_bench_times_both_commands_on_a_failed_branch(tmp_path):
    from tests.fixtures.lake_seed import BRANCH, seed_home

    home = seed_home(tmp_path / "home").root
    out = _run_quick("bench.query_bench", "--home", str(home))
    assert f"| `wap show {BRANCH}` (baseline) |" in out
    assert "query / show = **" in out


@pytest.mark.slow
def test_burst_bench_publishes_every_file_and_counts_the_runs(quick_outputs):
    out = quick_outputs["burst"]

    rows = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:]
        for line in out.splitlines()
        if line.startswith(("| one file", "| burst"))
    }
    files, written, runs = (rows["one file (baseline)"][i] for i in range(3))
    assert (files, written, runs) == ("1", "1,000", "1")
    files, written, runs = (rows["burst, dropped at once"][i] for i in range(3))
    assert (files, written) == ("5", "1,000") and 1 <= int(runs) <= 3  # batched
    assert rows["burst, dropped at once"][-1].strip(" |") == "5 PUBLISHED"
    # A refused type change and a failed check among 5: the other 3 still publish.
    assert rows["burst with 3 bad files"][-1].strip(" |") == (
        "1 AUDIT_FAILED, 3 PUBLISHED, 1 REJECTED"
    )


@pytest.mark.slow
def test_per_source_audit_bench_gives_a_verdict_per_file(quick_outputs):
    out = quick_outputs["per_source_audit"]

    assert f"{LINEITEM_SF001_ROWS} rows in 10 files; the grouped pass gave 10 verdicts." in out
    steps = [
        line.split(" | ")[0].lstrip("| ")
        for line in out.splitlines()
        if line.startswith("| ") and "median" not in line and "---" not in line
    ]
    assert steps == ["one pass", "grouped", "per file"]


@pytest.mark.slow
def test_quarantine_bench_sets_the_bad_rows_aside_in_one_run_of_both(quick_outputs):
    out = quick_outputs["quarantine"]

    # 2,000 rows, every 1,000th bad on both checks (run_ingest's counts, checked by the
    # bench itself: a run that set aside other than that raises).
    assert "2,000 rows in one parquet file; dirty: 2 of them (0.1%) fail both" in out
    [row] = [line for line in out.splitlines() if line.startswith("| ingest + publish |")]
    assert "<= 1.15: wall " in row
    variants = [line.split(" | ")[0] for line in out.splitlines() if line.startswith("| clean |")]
    assert variants == ["| clean"]


def test_history_bench_compares_an_empty_home_with_a_long_history():
    out = _run_quick("bench.history_bench")
    assert "| what | empty home (baseline) | home with 500 ingests | ratio |" in out
    for row in (
        "stack start (in process)",
        "cold `wap runs` (a new process)",
        "one ingest's ledger writes",
    ):
        assert f"| {row} |" in out


def test_make_bench_runs_every_benchmark():
    """Each `bench/*_bench.py` is one of `python -m bench`'s (what `make bench` runs)."""
    from bench.__main__ import BENCHMARKS

    modules = {f"bench.{path.stem}" for path in (REPO / "bench").glob("*_bench.py")}
    assert modules <= set(BENCHMARKS.values()), modules - set(BENCHMARKS.values())


def test_gc_budget_bench_resumes_to_what_one_unbudgeted_run_finds():
    out = _run_quick("bench.gc_budget_bench")
    assert "| contents visited, history twice as deep | 1,600 | 3,200 | **2.00 x** |" in out
    assert "ended with what one unbudgeted run finds: **yes**" in out
