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

The start-up model (`startup`, `render_startup`; `python -m bench.cost_model`): how long a
run waits before its job runs, and what the application costs while it waits for work, in
the three states a run can find the EMR Serverless application in:

- **cold**: the application has stopped (idle longer than its auto-stop time, 15 minutes by
  default: https://docs.aws.amazon.com/emr/latest/EMR-Serverless-UserGuide/app-behavior.html
  "Auto-stop"); StartJobRun auto-starts it, then its workers start. AWS publishes no
  figure; the issue puts a cold start at "tens of seconds to minutes": the model takes
  120 s (`COLD_START_S`, an assumption: measure yours with `wap show`'s "EMR start-up");
- **warm application**: started, no pre-initialized workers: the run's workers are
  provisioned on demand; 30 s (`WARM_START_S`; a third-party glossary says "typically
  15-30 seconds", https://awsi.click/en/glossary/emrsl/: not AWS's word, an assumption);
- **pre-initialized capacity** (`initialCapacity`, `-c emrPreInitializedExecutors=N`):
  workers kept ready, "jobs start immediately", "ready to respond in seconds"; billed
  while the application is started, idle or not, and released when it auto-stops
  (https://docs.aws.amazon.com/emr/latest/EMR-Serverless-UserGuide/pre-init-capacity.html);
  5 s (`PRE_INITIALIZED_START_S`). With a pre-initialized driver the application only
  reaches STARTED once that capacity is ready, so a cold start stays a cold start.

An application that is started without pre-initialized workers costs nothing (EMR
Serverless bills workers only), so a longer auto-stop time alone is free.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.pricing import EMR_SERVERLESS_PRICES

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


# ---- the start-up model (see the module docstring) -------------------------------------

COLD_START_S = 120.0  # assumption: application start + workers
WARM_START_S = 30.0  # assumption: workers on demand
PRE_INITIALIZED_START_S = 5.0  # "in seconds" (AWS)
WORKER_VCPU, WORKER_GB = 4, 16  # the default worker (and DeploySettings' pre-initialized one)
DAY_S = 86400.0
# (label, seconds between arrivals): one file a minute or an hour, and a daily burst (its
# first file runs alone, the others queue into one batch that starts warm right after).
PATTERNS = (("1 file/min", 60.0), ("1 file/h", 3600.0), ("a burst a day", DAY_S))


@dataclass(frozen=True)
class StartupSetting:
    """The deploy settings that decide how a run starts: `emrIdleStopMinutes` and the
    pre-initialized workers (`emrPreInitializedExecutors` plus one driver; 0: none)."""

    label: str
    idle_stop_minutes: int
    pre_initialized_workers: int = 0


SETTINGS = (
    StartupSetting("default: auto-stop 15 min", 15),
    StartupSetting("auto-stop 75 min", 75),
    StartupSetting("pre-init 1+1, auto-stop 15 min", 15, 2),
    StartupSetting("pre-init 1+1, auto-stop 24 h", 1440, 2),
)


@dataclass(frozen=True)
class Startup:
    """A day of one arrival pattern under one setting."""

    runs: float
    start_s: float  # the start-up the first run of an arrival waits
    cold_runs: float
    idle_worker_hours: float  # pre-initialized workers billed while no job used them

    def idle_usd(self, region: str = "us-east-1") -> float:
        """What the idle pre-initialized workers cost a day at `region`'s table prices."""
        prices = EMR_SERVERLESS_PRICES[region]
        per_worker_hour = WORKER_VCPU * prices.vcpu_hour + WORKER_GB * prices.memory_gb_hour
        return self.idle_worker_hours * per_worker_hour


def startup(interval: float, setting: StartupSetting, *, run_s: float = 60.0) -> Startup:
    """One day of arrivals `interval` seconds apart under `setting`, each run `run_s` long
    once started. Steady state: a run starts when the previous one ended or its file
    arrives, whichever is later (files arriving meanwhile queue into the next run: a
    batch); each gap between a run's end and the next arrival either outlasts the
    auto-stop time (the application stops; the next run starts cold) or not (warm, or at
    once with pre-initialized workers, which are billed through the gap up to the
    auto-stop)."""
    idle_stop = setting.idle_stop_minutes * 60.0
    warm = PRE_INITIALIZED_START_S if setting.pre_initialized_workers else WARM_START_S
    busy = warm + run_s
    cycle = max(interval, busy)  # a run, then the wait for the next arrival
    runs = DAY_S / cycle
    gap = cycle - busy
    cold = gap > idle_stop
    start = COLD_START_S if cold else warm
    idle = min(gap, idle_stop) * setting.pre_initialized_workers / 3600.0 * runs
    return Startup(runs, start, runs if cold else 0.0, idle)


def render_startup(region: str = "us-east-1") -> str:
    """The markdown table of docs/deploy.md ("Start-up time and cost")."""
    lines = [
        f"Start-up: cold {COLD_START_S:.0f} s, warm application {WARM_START_S:.0f} s, "
        f"pre-initialized {PRE_INITIALIZED_START_S:.0f} s (bench/cost_model.py: sources and "
        f"assumptions); runs of 60 s; workers of {WORKER_VCPU} vCPU and {WORKER_GB} GB at "
        f"{region} prices (contracts/pricing.py).",
        "",
        "| arrivals | setting | runs/day | start-up | idle worker-h/day | idle $/day |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for label, interval in PATTERNS:
        for setting in SETTINGS:
            day = startup(interval, setting)
            lines.append(
                f"| {label} | {setting.label} | {day.runs:,.0f} | {day.start_s:.0f} s | "
                f"{day.idle_worker_hours:.1f} | ${day.idle_usd(region):.2f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_startup())
