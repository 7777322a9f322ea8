"""What the benchmarks' timing loops share: a timed run (`Sample`), the order variants run
in within a repeat, the medians and paired ratios over repeats, and a ratio's verdict."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass
class Sample:
    """One timed run of one variant."""

    total_s: float
    parts: dict[str, float] = field(default_factory=dict)
    cpu_s: float = 0.0


def rotated(variants: Sequence[T], repeat: int) -> list[T]:
    """The order `variants` run in at `repeat` (0-based): rotated by one each repeat, so
    load that drifts over the run falls on each variant alike (two variants alternate)."""
    turn = repeat % len(variants)
    return [*variants[turn:], *variants[:turn]]


def medians(samples: Sequence[Sample]) -> dict[str, float]:
    """The median total and CPU seconds of `samples`, and of each part the first one has
    (a part another lacks counts 0)."""
    keys = samples[0].parts.keys()
    return {
        "total_s": statistics.median(s.total_s for s in samples),
        "cpu_s": statistics.median(s.cpu_s for s in samples),
        **{k: statistics.median(s.parts.get(k, 0.0) for s in samples) for k in keys},
    }


def paired_ratio(ours: Sequence[Sample], base: Sequence[Sample], of: str = "total_s") -> float:
    """The median over repeats of ours / base within the same repeat (`of`: `total_s` or
    `cpu_s`): load that drifts over minutes cancels out of each pair."""
    return statistics.median(
        getattr(o, of) / getattr(b, of) for o, b in zip(ours, base, strict=True)
    )


def print_sample(repeat: int, label: str, sample: Sample) -> None:
    """A progress line for one timed run (`repeat` 0-based, shown from 1)."""
    print(
        f"    repeat {repeat + 1} {label}: {sample.total_s:.2f}s ({sample.cpu_s:.1f} cpu-s)",
        flush=True,
    )


def met(ratio: float, target: float) -> str:
    """The verdict on a ratio whose target is at most `target`."""
    return "met" if ratio <= target else "**missed**"
