"""A burst of small files against one file of the same rows, through the real local flow.

Upload -> trigger -> state machine -> EMR double running the real PySpark job ->
publish, on the embedded stack (`wap`'s local backend). The baseline is one file
holding all the rows, measured in the same run on the same stack: the ratio of the
burst's wall time to it, and the number of job runs each needed, are what the
batches issue (#18) is about (docs/batches.md). A third burst holds 3 bad files (a corrupt
body, a refused type change, a failed check): the good ones must still publish together.

`python -m bench.burst_bench [--files 100 --rows 1000]`; `--quick` for a smoke run (no warm-up).
"""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.scratch import job_timings, local_lake, wait_final

if TYPE_CHECKING:
    from ingestion.ledger.records import Record

SINGLE_TABLE, BURST_TABLE, WARM_UP_TABLE = "bench.single_file", "bench.burst", "bench.warm_up"
MIXED_TABLE = "bench.mixed"
# The mixed burst's table: an additive schema (a type change is refused) and one check.
MIXED_CONFIG = """
schema_policy: additive
checks:
  - {kind: range, name: amount_positive, column: amount, min: 0}
"""


@dataclass(frozen=True)
class Measured:
    files: int
    rows: int
    seconds: float
    job_runs: int
    statuses: dict[str, int]


def parquet_bytes(first_id: int, rows: int) -> bytes:
    """`rows` orders with ids from `first_id`: distinct across files, so main can be checked."""
    ids = pa.array(range(first_id, first_id + rows), pa.int64())
    table = pa.table({"order_id": ids, "amount": pa.array([1.0] * rows, pa.float64())})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def bad_files(rows: int) -> dict[int, bytes]:
    """The mixed burst's 3 bad files, by position: a corrupt body behind valid parquet magic,
    `amount` as text (a type change the additive policy refuses), and negative amounts."""
    good = parquet_bytes(0, rows)
    corrupt = good[:4] + b"\x00garbage\x00" * 20 + good[-8:]
    text = pa.table({"order_id": pa.array([10**9], pa.int64()), "amount": pa.array(["1.0"])})
    buffer = io.BytesIO()
    pq.write_table(text, buffer)
    negative = pa.table(
        {
            "order_id": pa.array(range(2 * 10**9, 2 * 10**9 + rows), pa.int64()),
            "amount": pa.array([-1.0] * rows, pa.float64()),
        }
    )
    failing = io.BytesIO()
    pq.write_table(negative, failing)
    return {17: corrupt, 42: buffer.getvalue(), 88: failing.getvalue()}


def _job_runs(backend: Any, table: str, records: Sequence[Record]) -> int:
    """Job runs started for `table`: EMR's list, plus any run a record names that the list
    lacks (one 100-file run listed 98 runs for 100 published files; counted, not hidden)."""
    emr = backend.stack.aws.client("emr-serverless")
    application = backend.stack.aws.application_id
    listed = {
        run["id"]
        for run in emr.list_job_runs(applicationId=application)["jobRuns"]
        if run["name"].startswith(f"wap-{table}-")
    }
    named = {r.job_run_id for r in records if r.job_run_id}
    if named - listed:
        print(f"note: {len(named - listed)} job run(s) of {table} missing from EMR's list")
    return len(listed | named)


def _run_seconds(backend: Any, record: Record) -> float:
    """The job's own total seconds for a run (its report's `total_s`)."""
    return float(job_timings(backend, record)["total_s"])


def per_file_seconds(backend: Any, table: str) -> float:
    """What one more file adds to a run: the table's largest batch against its one-file
    run (the burst's first file runs alone), from the job's own timings."""
    batches = [b for b in backend.ledger.list_batches() if b.table == table and b.report_uri]
    alone = [r for r in backend.ledger.list_ingests(table=table) if not r.batch_id and r.report_uri]
    if not batches or not alone:
        return 0.0
    batch = max(batches, key=lambda b: len(b.members or []))
    extra = len(batch.members) - 1
    return max(0.0, (_run_seconds(backend, batch) - _run_seconds(backend, alone[0])) / extra)


def ingest_at_once(backend: Any, table: str, files: Sequence[bytes], timeout: float) -> Measured:
    """Upload every file without waiting between them; time until all are final."""
    from wap.ops.operations import upload_for_ingest

    namespace, name = table.split(".")
    started = time.perf_counter()
    ids = [
        upload_for_ingest(backend, f"{namespace}/{name}/part-{index:05d}.parquet", body)
        for index, body in enumerate(files)
    ]
    records = wait_final(backend, ids, timeout, poll=0.2, what=table, started=started)
    seconds = time.perf_counter() - started
    statuses: dict[str, int] = {}
    for record in records:
        statuses[record.status] = statuses.get(record.status, 0) + 1
    rows = sum(int(r.rows_written or 0) for r in records)
    return Measured(len(files), rows, seconds, _job_runs(backend, table, records), statuses)


def run(
    files: int, rows: int, timeout: float, *, warm_up: bool = True
) -> tuple[Measured, Measured, Measured, float]:
    """(one file of files x rows rows, files files of rows rows, the same with 3 bad files),
    on one fresh local stack; `warm_up`: one small ingest first, unmeasured."""
    # The bench's other tables have no config and are not on main yet: uploads create them.
    with local_lake("wap-burst-bench-", {MIXED_TABLE: MIXED_CONFIG}) as backend:
        # JIT, class loading and Spark's first plans must not count against the baseline.
        if warm_up:
            ingest_at_once(backend, WARM_UP_TABLE, [parquet_bytes(0, 10)], timeout)
        single = ingest_at_once(backend, SINGLE_TABLE, [parquet_bytes(0, files * rows)], timeout)
        burst = ingest_at_once(
            backend, BURST_TABLE, [parquet_bytes(i * rows, rows) for i in range(files)], timeout
        )
        # The mixed table exists before its burst: on a new table the first file to arrive
        # (S3 events come in no fixed order) sets the schema, and were that the retyped one,
        # every good file would be the one refused.
        seeded = ingest_at_once(backend, MIXED_TABLE, [parquet_bytes(-10, 10)], timeout)
        bad = {position % files: body for position, body in bad_files(rows).items()}
        mixed = ingest_at_once(
            backend,
            MIXED_TABLE,
            [bad.get(i) or parquet_bytes(i * rows, rows) for i in range(files)],
            timeout,
        )
        mixed = replace(mixed, job_runs=mixed.job_runs - seeded.job_runs)  # the burst's own
        per_file = per_file_seconds(backend, BURST_TABLE)
        return single, burst, mixed, per_file


def render(single: Measured, burst: Measured, mixed: Measured) -> str:
    """The markdown table: runs, wall time, and the burst's ratio to the single file."""

    def row(label: str, m: Measured, ratio: str) -> str:
        outcomes = ", ".join(f"{n} {s}" for s, n in sorted(m.statuses.items()))
        return (
            f"| {label} | {m.files} | {m.rows:,} | {m.job_runs} | {m.seconds:.1f} | "
            f"{ratio} | {outcomes} |"
        )

    return "\n".join(
        [
            "| what | files | rows written | job runs | wall s | ratio | outcomes |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
            row("one file (baseline)", single, "1.0"),
            row("burst, dropped at once", burst, f"{burst.seconds / single.seconds:.1f}x"),
            row("burst with 3 bad files", mixed, f"{mixed.seconds / single.seconds:.1f}x"),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    from bench import cost_model
    from bench.cli import BenchParser, Option
    from bench.doc import finish

    args = BenchParser(
        "bench.burst_bench",
        "5 files of 200 rows, no warm-up (smoke test)",
        files=Option(100, 5),
        rows=Option(1000, 200, help="rows per file of the burst"),
        timeout=Option(3600.0),
        fixed=Option(60.0, help="the cost model's fixed seconds per run on AWS (assumed)"),
    ).parse_args(argv)
    started = time.perf_counter()
    single, burst, mixed, per_file = run(
        args.files, args.rows, args.timeout, warm_up=not args.quick
    )
    text = (
        render(single, burst, mixed)
        + "\n\n"
        + cost_model.render(fixed=args.fixed, per_file=per_file)
    )
    title = f"A burst of {args.files} files against one file of the same rows (real local flow)"
    return finish(args, argv, "bench.burst_bench", title, text, started)


if __name__ == "__main__":
    raise SystemExit(main())
