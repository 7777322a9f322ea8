"""The browser the UI tests drive: found on the machine, or installed by the test itself.

`make setup` installs nothing system-wide. A machine that has Chromium (or Chrome) is
used as it is (`WAP_CHROMIUM` names one explicitly). On Debian as root, as in CI, the
first browser test installs Debian's chromium with apt-get. Elsewhere the browser tests
skip, saying what to install; Playwright's own browser download is never used (this
network does not reach it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MAC_CHROME = "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"
APT_TIMEOUT_S = 900


class NoBrowser(Exception):
    """No browser here and none could be installed (the message says what to do)."""


def find_browser() -> str | None:
    """The path of a Chromium-family browser on this machine, or None."""
    named = os.environ.get("WAP_CHROMIUM")
    if named:
        if not Path(named).is_file():
            raise NoBrowser(f"WAP_CHROMIUM={named} is not a file")
        return named
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return MAC_CHROME if Path(MAC_CHROME).is_file() else None


def browser_path() -> str:
    """A browser to launch: found, else installed (Debian as root), else `NoBrowser`."""
    found = find_browser()
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise NoBrowser("no Chromium or Chrome found: install one (Debian: apt-get install "
                        "chromium; macOS: Google Chrome) or set WAP_CHROMIUM to its path")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=APT_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise NoBrowser(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    found = find_browser()
    if not found:
        raise NoBrowser("apt-get installed chromium, yet no chromium is on PATH")
    return found
