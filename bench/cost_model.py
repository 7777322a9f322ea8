"""What 1,000 files cost on EMR Serverless, with and without batches: a queue model.

One table, files arriving every `interval` seconds, one run at a time (the table lock).
A run over n files takes `fixed + n * per_file` seconds; the next run takes every file
that arrived meanwhile, up to `max_files` (without batches: one). The parameters:

- `per_file`: measured in the same bench run (the batch's run against a one-file run);
- `fixed`: what a run costs before it reads a row on AWS: EMR Serverless' job start, Spark's
  start and the state machine's polling. Not measurable without AWS; the batches issue
  puts it at "about a minute or more", so the model takes 60 s (`--fixed` changes it);
- billing (AWS, EMR Serverless pricing, https://aws.amazon.com/emr/pricing/ "EMR
  Serverless", and the `billedResourceUtilization` of a job run,
  https://docs.aws.amazon.com/emr-serverless/latest/APIReference/API_JobRun.html):
  vCPU, memory and storage per second from when a worker is ready until it is released,
  **with a 1-minute minimum per worker**; storage up to 20 GB per worker is free;
- workers: EMR Serverless' Spark defaults, a driver and `spark.dynamicAllocation.
  initialExecutors` = 3 executors of 4 vCPU and 16 GB each
  (https://docs.aws.amazon.com/emr/latest/EMR-Serverless-UserGuide/jobs-spark.html,
  "Spark job properties"): 4 workers per run (our job sets none of these).
Worker-seconds are the unit: multiply by 4 vCPU x the vCPU-second price plus 16 GB x the
GB-second price of the region.
"""

from __future__ import annotations

from dataclasses import dataclass

WORKERS_PER_RUN = 4
MIN_BILLED_SECONDS = 60
FILES = 1000
RATES = (("1 file/s", 1.0), ("1 file/min", 60.0), ("1 file/h", 3600.0))


@dataclass(frozen=True)
class Cost:
    runs: int
    worker_seconds: float
    last_published_s: float  # when the last file was published, from the first arrival


def simulate(
    interval: float, *, fixed: float, per_file: float, max_files: int, files: int = FILES
) -> Cost:
    """Runs and billed worker-seconds for `files` arrivals `interval` seconds apart."""
    arrivals = [i * interval for i in range(files)]
    now, taken, runs, billed = 0.0, 0, 0, 0.0
    while taken < files:
        now = max(now, arrivals[taken])  # idle until the next file arrives
        waiting = sum(1 for at in arrivals[taken:] if at <= now)
        batch = min(waiting, max_files)
        seconds = fixed + batch * per_file
        runs += 1
        billed += WORKERS_PER_RUN * max(MIN_BILLED_SECONDS, seconds)
        now += seconds
        taken += batch
    return Cost(runs, billed, now)


def render(*, fixed: float, per_file: float, max_files: int = 500) -> str:
    """The markdown table: per 1,000 files, one file per run against batches."""
    lines = [
        f"Per {FILES:,} files; a run costs {fixed:.0f} s fixed (assumed) + {per_file:.3f} s "
        f"per file (measured above); {WORKERS_PER_RUN} workers per run, each billed at "
        f"least {MIN_BILLED_SECONDS} s.",
        "",
        "| arrival | one file per run: runs | worker-s | last file published after | "
        f"batches (max {max_files}): runs | worker-s | last file published after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, interval in RATES:
        single = simulate(interval, fixed=fixed, per_file=per_file, max_files=1)
        batched = simulate(interval, fixed=fixed, per_file=per_file, max_files=max_files)
        lines.append(
            f"| {label} | {single.runs:,} | {single.worker_seconds:,.0f} | "
            f"{_duration(single.last_published_s)} | {batched.runs:,} | "
            f"{batched.worker_seconds:,.0f} | {_duration(batched.last_published_s)} |"
        )
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"
