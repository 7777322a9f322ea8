"""CPU seconds this process and its children (the py4j JVM) have used: the work a run
does, against which a wall time on this machine's cores can be judged (Linux /proc)."""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone between the listing and the read
        return None
    return text[text.rindex(")") + 2 :].split()  # fields after the command name


def _cpu_seconds(fields: list[str]) -> float:
    # After the name: state, ppid, ..., utime (14th field overall), stime (15th).
    return (int(fields[11]) + int(fields[12])) / _TICKS


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process `pid` (0.0 once it is gone)."""
    fields = _stat(pid)
    return 0.0 if fields is None else _cpu_seconds(fields)


def tree_cpu_seconds(root: int | None = None) -> float:
    """User plus system CPU seconds of `root` (this process) and its live descendants."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is None:
            continue
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = _cpu_seconds(fields)
    total, frontier = 0.0, [root]
    while frontier:
        pid = frontier.pop()
        total += used.get(pid, 0.0)
        frontier += [child for child, parent in parents.items() if parent == pid]
    return total


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))
