"""The quality dashboard (Streamlit): ingests, audits and failed branches at a glance.

`wap dashboard` calls `launch()`, which runs `streamlit run` on `app.py` in a
subprocess so the CLI itself never imports Streamlit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from wap.dashboard.options import to_args
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
    """Run the dashboard until interrupted; return Streamlit's exit code (0 after Ctrl-C)."""
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
    process = subprocess.Popen(command)  # noqa: S603 (our own interpreter and script)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()  # Streamlit got the same SIGINT; make sure it is gone
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return 0
    finally:
        if catalog is not None:
            catalog.stop()


def serve_catalog(home: str | None) -> Any:
    """The home's catalog UI on its fixed address while the dashboard runs (the ingest pages
    link there); None, with a note on stderr, when it cannot be served (taken port, no state)."""
    from wap.runtime.catalog_server import catalog_port, start_catalog
    from wap.runtime.home import HomeError, WapHome

    try:
        server = start_catalog(WapHome.resolve(home), catalog_port())
    except HomeError as exc:
        print(f"The dashboard does not serve the catalog UI: {exc}", file=sys.stderr)
        return None
    print(f"Catalog UI (the ingest pages link to it) on {server.url}/tree/main", flush=True)
    return server


__all__ = ["APP_PATH", "build_command", "launch", "serve_catalog"]
