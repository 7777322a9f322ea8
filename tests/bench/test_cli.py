"""A benchmark's command line: its options, what --quick makes of them, and its run."""

from __future__ import annotations

from bench.cli import Benchmark, BenchParser, Option, comma_separated


def _parser() -> BenchParser:
    return BenchParser(
        "bench.example",
        "a smoke run",
        rows=Option(1_000, 10),
        scales=Option([0.1, 1.0], [0.01], parse=comma_separated(float)),
        items_per_order=Option(3),
        timeout=Option(60.0),
    )


def test_options_default_to_a_full_run_and_parse_their_type():
    args = _parser().parse_args(["--scales", "0.5,2", "--items-per-order", "4", "--timeout", "9"])
    assert (args.quick, args.no_doc) == (False, False)
    assert (args.rows, args.scales) == (1_000, [0.5, 2.0])
    assert (args.items_per_order, args.timeout) == (4, 9.0)


def test_quick_sets_every_size_to_its_smoke_value_and_leaves_the_others():
    args = _parser().parse_args(["--quick", "--rows", "500", "--items-per-order", "4"])
    assert (args.rows, args.scales, args.items_per_order, args.timeout) == (10, [0.01], 4, 60.0)


def test_a_benchmark_publishes_what_it_measured_at_the_sizes_asked(capsys):
    benchmark = Benchmark("bench.example", "Example", "a smoke run", {"rows": Option(1_000, 10)})

    status = benchmark.main(["--quick"], lambda args: f"measured {args.rows} rows")

    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith("measured 10 rows\n(bench took ")  # --quick: no doc section written
