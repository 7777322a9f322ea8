"""The dashboard's command line (after `streamlit run app.py --`): the same switches as `wap`.

`launch()` writes these arguments; the Streamlit script reads them back. Missing
options fall back to the same environment variables the CLI reads.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from wap.ops.backends import DEFAULT_STACK, Target
from wap.runtime.home import ENV_HOME

ENV_STACK = "WAP_STACK"
ENV_NESSIE_URL = "WAP_NESSIE_URL"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wap dashboard", add_help=False, exit_on_error=False, allow_abbrev=False
    )
    parser.add_argument("--home")
    parser.add_argument("--aws", action="store_true")
    parser.add_argument("--profile")
    parser.add_argument("--region")
    parser.add_argument("--stack")
    parser.add_argument("--nessie-url")
    return parser


def parse_args(argv: Sequence[str]) -> Target:
    """The backend target from `argv`, then `$WAP_HOME`/`$WAP_STACK`/`$WAP_NESSIE_URL`."""
    try:
        args = _parser().parse_args(list(argv))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise ValueError(f"bad dashboard arguments {list(argv)!r}: {exc}") from None
    return Target(
        home=args.home or os.environ.get(ENV_HOME) or None,
        aws=args.aws,
        profile=args.profile,
        region=args.region,
        stack=args.stack or os.environ.get(ENV_STACK) or DEFAULT_STACK,
        nessie_url=args.nessie_url or os.environ.get(ENV_NESSIE_URL) or None,
    )


def to_args(target: Target) -> list[str]:
    """`argv` that `parse_args` turns back into `target`."""
    argv: list[str] = []
    if target.home:
        argv += ["--home", target.home]
    if target.aws:
        argv.append("--aws")
    for flag, value in (
        ("--profile", target.profile),
        ("--region", target.region),
        ("--nessie-url", target.nessie_url),
    ):
        if value:
            argv += [flag, value]
    if target.stack != DEFAULT_STACK:
        argv += ["--stack", target.stack]
    return argv
