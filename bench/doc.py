"""Each benchmark's section of docs/benchmarks.md, replaced in place between its markers."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def write_section(name: str, title: str, command: str, text: str) -> None:
    """Replace (or append) the section between `<!-- name:start -->` and `<!-- name:end -->`;
    text outside the markers (hand-written analysis) is kept."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    section = (
        f"{start}\n## {title}\n\n"
        f"`{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
        f"{text}\n{end}"
    )
    current = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    if start in current and end in current:
        before, rest = current.split(start, 1)
        current = before + section + rest.split(end, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + section + "\n"
    DOC.write_text(current)


def command_line(module: str, argv: list[str] | None) -> str:
    """The command a benchmark was run by, for its section: `python -m module` and its
    arguments (this process's own when `argv` is None, as under `python -m`)."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", module, *args])


def publish(
    args: argparse.Namespace,
    argv: list[str] | None,
    *,
    module: str,
    section: str,
    title: str,
    text: str,
    started: float | None = None,
) -> None:
    """Print a benchmark's `text` (and how long it took, from `started`); unless it ran
    `--quick` or `--no-doc`, write it to its section under the command it was run by."""
    print(text)
    if started is not None:
        print(f"(bench took {time.perf_counter() - started:.0f}s)")
    if not args.no_doc and not args.quick:
        write_section(section, title, command_line(module, argv), text)


def finish(
    args: argparse.Namespace,
    argv: list[str] | None,
    module: str,
    title: str,
    text: str,
    started: float | None = None,
    *,
    section: str = "",
) -> int:
    """publish() a benchmark's run of `python -m module` under `title`, in its section
    (by default the module's own name: `bench.csv_bench` -> `csv_bench`); the exit
    status of a run that got this far, 0."""
    section = section or module.rsplit(".", 1)[-1]
    publish(args, argv, module=module, section=section, title=title, text=text, started=started)
    return 0
