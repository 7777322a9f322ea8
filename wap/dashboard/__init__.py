"""The quality dashboard (Streamlit): ingests, audits and failed branches at a glance.

`wap dashboard` calls `launch()`, which runs `streamlit run` on `app.py` in a
subprocess so the CLI itself never imports Streamlit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contracts.catalog_authorization import READER
from wap.dashboard.options import to_args
from wap.ops.backend import ENV_CATALOG_ROLE
from wap.ops.backends import DEFAULT_STACK, Target

APP_PATH = Path(__file__).with_name("app.py")
DEFAULT_PORT = 8501
DEFAULT_ADDRESS = "127.0.0.1"  # no login in front of it: reachable from this machine only


def build_command(
    home: str | None = None,
    *,
    aws: bool = False,
    profile: str | None = None,
    region: str | None = None,
    stack: str = DEFAULT_STACK,
    nessie_url: str | None = None,
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    address: str = DEFAULT_ADDRESS,
) -> list[str]:
    """The `streamlit run` command line `launch` starts."""
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1-65535, got {port}")
    if home is not None and not (aws or profile):
        home = str(Path(home).expanduser().resolve())
    target = Target(
        home=home, aws=aws, profile=profile, region=region, stack=stack, nessie_url=nessie_url
    )
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP_PATH),
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--server.headless",
        "false" if open_browser else "true",
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
        "--",
        *to_args(target),
    ]


def launch(
    home: str | None = None,
    *,
    aws: bool = False,
    profile: str | None = None,
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    region: str | None = None,
    stack: str = DEFAULT_STACK,
    nessie_url: str | None = None,
    address: str = DEFAULT_ADDRESS,
) -> int:
    """Run the dashboard until a stop signal; return Streamlit's exit code (0 after Ctrl-C,
    128 + the signal's number after SIGTERM or SIGHUP). Streamlit and whatever it started
    stop with it, and so does the catalog UI it serves."""
    command = build_command(
        home,
        aws=aws,
        profile=profile,
        region=region,
        stack=stack,
        nessie_url=nessie_url,
        port=port,
        open_browser=open_browser,
        address=address,
    )
    catalog = None if (aws or profile) else serve_catalog(home)
    process: subprocess.Popen[Any] | None = None
    try:
        with _stop_on_signals() as stopped:
            try:
                # Its own process group: Ctrl-C in a terminal reaches `wap` alone, which
                # then stops the group (Streamlit and whatever it started), as for SIGTERM.
                # The dashboard only looks: it reads the local catalog as wap-reader.
                env = {ENV_CATALOG_ROLE: READER, **os.environ}
                process = subprocess.Popen(command, start_new_session=True, env=env)  # noqa: S603
                return process.wait()
            except _Stopped:
                if process is not None:
                    _stop_group(process)
        return 0 if stopped[0] == signal.SIGINT else 128 + stopped[0]
    finally:
        if catalog is not None:
            catalog.stop()


# SIGINT (Ctrl-C), SIGTERM (kill, a service manager), SIGHUP (the terminal went away).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_SECONDS = 10  # then SIGKILL


class _Stopped(Exception):
    """A stop signal arrived while waiting for Streamlit."""


@contextmanager
def _stop_on_signals() -> Iterator[list[int]]:
    """Turn each stop signal into `_Stopped` once (the list holds the signal that came).

    A signal the process was started with ignored stays ignored (`nohup`, or SIGINT of a
    command run in the background with `&`): SIGTERM still stops it."""
    received: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        if received:  # already stopping: a second Ctrl-C does not cut the clean-up short
            return
        received.append(signum)
        raise _Stopped

    previous = {}
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) == signal.SIG_IGN:
            continue
        previous[sig] = signal.signal(sig, on_signal)
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop_group(process: subprocess.Popen[Any]) -> None:
    """SIGTERM to Streamlit's process group, SIGKILL after STOP_SECONDS; wait for it."""
    for sig, wait in ((signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:  # the group is gone already
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    process.wait()


def serve_catalog(home: str | None) -> Any:
    """The home's catalog UI on its fixed address while the dashboard runs (the ingest pages
    link there); None, with a note on stderr, when it cannot be served (taken port, no state)."""
    from contracts.catalog_ui import branch_url
    from wap.runtime.catalog_server import catalog_port, start_catalog
    from wap.runtime.home import HomeError, WapHome

    try:
        server = start_catalog(WapHome.resolve(home), catalog_port())
    except HomeError as exc:
        print(f"The dashboard does not serve the catalog UI: {exc}", file=sys.stderr)
        return None
    print(
        f"Catalog UI (the ingest pages link to it) on {branch_url(server.url, 'main')}", flush=True
    )
    return server


__all__ = ["APP_PATH", "build_command", "launch", "serve_catalog"]
