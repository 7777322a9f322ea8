"""The command line of `python -m bench.<name>`: the two flags every benchmark takes
(`--quick`, `--no-doc`) and its own options, each with a full run's default and, for a
size, the smaller value a `--quick` smoke run uses instead; and the run of a benchmark
from its command line to its published result."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.doc import finish

_SAME = object()  # Option.quick's default: --quick leaves the option as it is


@dataclass(frozen=True)
class Option:
    """`--<name>`: `default` in a full run, `quick` in a `--quick` run (which overrides a
    value given on the command line: a smoke run is always the same size); `parse` turns
    the command line's text into a value (default: the type of `default`)."""

    default: Any
    quick: Any = _SAME
    help: str | None = None
    parse: Callable[[str], Any] | None = None


class BenchParser(argparse.ArgumentParser):
    """The parser of `python -m module`: `--quick` (a smoke run; `quick_help` says what it
    runs), `--no-doc`, and one `--<name>` (underscores as dashes) per `options` entry."""

    def __init__(self, module: str, quick_help: str, **options: Option) -> None:
        super().__init__(prog=f"python -m {module}")
        self.add_argument("--quick", action="store_true", help=quick_help)
        self.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
        self._quick_values = {}
        for name, option in options.items():
            self.add_argument(
                f"--{name.replace('_', '-')}",
                type=option.parse or type(option.default),
                default=option.default,
                help=option.help,
            )
            if option.quick is not _SAME:
                self._quick_values[name] = option.quick

    def parse_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """The arguments, each option at its `quick` value when `--quick` is given."""
        parsed = super().parse_args(args, namespace)
        if parsed.quick:
            vars(parsed).update(self._quick_values)
        return parsed


def comma_separated(kind: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """An Option's `parse` for a comma-separated list of `kind` (`0.1,1`)."""

    def parse(text: str) -> list[Any]:
        return [kind(item) for item in text.split(",")]

    return parse


@dataclass(frozen=True)
class Benchmark:
    """`python -m module`: its command line (`quick_help` says what `--quick` runs; `options`
    by name) and `title`, the heading of its section in docs/benchmarks.md."""

    module: str
    title: str
    quick_help: str
    options: Mapping[str, Option] = field(default_factory=dict)

    def parser(self) -> BenchParser:
        """The parser of its command line."""
        return BenchParser(self.module, self.quick_help, **self.options)

    def main(self, argv: list[str] | None, measure: Callable[[argparse.Namespace], str]) -> int:
        """`measure` at the sizes `argv` asks for; its text (markdown) printed with the
        time the run took and, unless --quick or --no-doc, written to the section; 0."""
        args = self.parser().parse_args(argv)
        started = time.perf_counter()
        return finish(args, argv, self.module, self.title, measure(args), started)
