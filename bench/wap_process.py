"""A cold `wap` command as a person types it: a new process (interpreter start, imports,
the local stack restored from the home, the command's own work), timed start to exit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WAP = [sys.executable, "-c", "from wap.cli import main; main()"]


def cold_wap(home: Path, *args: str) -> float:
    """Seconds one `wap --home HOME ARGS` process takes, start to exit (output discarded);
    RuntimeError with the end of its stderr when it fails."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    done = subprocess.run(
        [*WAP, "--home", str(home), *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"wap {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return elapsed
