"""What a local job run really used: CPU seconds and peak memory, as EMR Serverless'
GetJobRun reports a run's resources (vCPU-hours, memory GB-hours).

A run executes on one worker thread of this process, and the real job in the local JVM
Spark runs (a child process that outlives the run). Its CPU is the thread's own
(`getrusage(RUSAGE_THREAD)`) plus the CPU the JVM used meanwhile (`/proc/<pid>/stat`;
with several runs at once each is charged the JVM's whole CPU of its time: an upper
bound). Its memory is the peak resident size of both processes as of the run's end
(`ru_maxrss`, the JVM's `VmHWM`): the processes' high-water mark, which, like the memory
EMR bills (what its workers hold, used or not), never falls below what the run needed.
Linux only (/proc); elsewhere the JVM's share is left out.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Usage:
    """A run's resources as GetJobRun's `billedResourceUtilization` counts them."""

    cpu_seconds: float
    peak_memory_bytes: int
    wall_seconds: float

    @property
    def vcpu_hours(self) -> float:
        return self.cpu_seconds / 3600

    @property
    def memory_gb_hours(self) -> float:
        return self.peak_memory_bytes / 1e9 * self.wall_seconds / 3600


def _thread_cpu() -> float:
    usage = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds of process `pid` (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # Fields after the command name (which may hold spaces, in parentheses).
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def _process_peak_bytes(pid: int) -> int:
    """The peak resident size (VmHWM) of process `pid` (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class UsageMeter:
    """Measures one run on the thread that runs it, from `start` to `stop`."""

    def __init__(self, pids: Iterable[int]) -> None:
        self._pids = list(pids)
        self._started = time.monotonic()
        self._thread = _thread_cpu()
        self._processes = {pid: _process_cpu(pid) for pid in self._pids}

    @classmethod
    def start(cls, pids: Iterable[int] = ()) -> UsageMeter:
        """Start measuring this thread and the processes `pids` (the job's JVM)."""
        return cls(pids)

    def stop(self) -> Usage:
        """What the run used since `start` (call on the same thread)."""
        cpu = max(0.0, _thread_cpu() - self._thread)
        cpu += sum(max(0.0, _process_cpu(pid) - before) for pid, before in self._processes.items())
        own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        peak = own_peak + sum(_process_peak_bytes(pid) for pid in self._pids)
        return Usage(
            cpu_seconds=cpu,
            peak_memory_bytes=peak,
            wall_seconds=time.monotonic() - self._started,
        )
