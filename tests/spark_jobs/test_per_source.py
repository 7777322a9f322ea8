"""A run over several source files (a batch, docs/batches.md): a verdict per file, bad
files left out on their own, and the run's outcome from both. Real Spark and Iceberg."""

from __future__ import annotations

import pytest

from contracts.report import AuditReport, SourceVerdict
from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import read_on_ref, write_parquet

CHECKS = """
checks:
  - {kind: range, name: amount_positive, column: amount, min: 0}
  - {kind: unique, column: order_id}
"""


def orders(first: int, count: int = 4, amount: float = 1.0) -> dict:
    return {"order_id": list(range(first, first + count)), "amount": [amount] * count}


def verdicts(report: dict) -> list[tuple[str, str, int | None, list[str]]]:
    return [
        (v["uri"].rsplit("/", 1)[-1], v["status"], v["rows"], v["failed_checks"])
        for v in report["sources"]
    ]


def test_clean_sources_pass_each_with_its_rows_in_one_snapshot(lake, nessie, ingest, tmp_path):
    sources = [write_parquet(tmp_path / f"p{i}.parquet", orders(10 * i, 2 + i)) for i in range(3)]
    args = ingest("batch.clean", sources, config=CHECKS)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert verdicts(report) == [
        ("p0.parquet", "passed", 2, []),
        ("p1.parquet", "passed", 3, []),
        ("p2.parquet", "passed", 4, []),
    ]
    assert report["rows_written"] == 9
    assert "audit_per_source_s" in report["timings"]
    assert read_on_ref(lake, nessie, args.branch, "batch.clean").count() == 9


def test_one_failing_source_fails_the_run_and_is_named(lake, ingest, tmp_path):
    sources = [
        write_parquet(tmp_path / "ok-a.parquet", orders(0)),
        write_parquet(tmp_path / "bad.parquet", orders(100, amount=-5.0)),
        write_parquet(tmp_path / "ok-b.parquet", orders(200)),
    ]
    report = run_ingest(lake, ingest("batch.mixed", sources, config=CHECKS))

    assert report["outcome"] == "failed"
    assert verdicts(report) == [
        ("ok-a.parquet", "passed", 4, []),
        ("bad.parquet", "failed", 4, ["amount_positive"]),
        ("ok-b.parquet", "passed", 4, []),
    ]


def test_a_source_that_passes_the_batch_check_but_not_its_own_fails(lake, ingest, tmp_path):
    # 1 null in 10 rows is 10%: the file alone breaks max 5%, the batch of 40 rows does not.
    config = "checks:\n  - {kind: null_fraction, column: amount, max: 0.05}\n"
    nulls = {"order_id": list(range(10)), "amount": [None] + [1.0] * 9}
    sources = [write_parquet(tmp_path / "nulls.parquet", nulls)] + [
        write_parquet(tmp_path / f"full-{i}.parquet", orders(100 * (i + 1), 10)) for i in range(3)
    ]
    report = run_ingest(lake, ingest("batch.fraction", sources, config=config))

    assert report["outcome"] == "failed", report["reason"]
    assert [v[1] for v in verdicts(report)] == ["failed", "passed", "passed", "passed"]
    assert "nulls.parquet" in report["reason"]


def test_unusable_sources_are_left_out_and_the_rest_is_written(
    lake, nessie, nessie_api, ingest, tmp_path
):
    # The table exists with amount as double: a file with amount as text is refused.
    seed = ingest("batch.leftout", [write_parquet(tmp_path / "seed.parquet", orders(0))])
    assert run_ingest(lake, seed)["outcome"] == "passed"
    nessie_api.merge(seed.branch)
    csv = tmp_path / "renamed.parquet"
    csv.write_bytes(b"order_id,amount\n1,2.0\n" * 5)
    sources = [
        write_parquet(tmp_path / "good.parquet", orders(10)),
        csv.as_uri(),
        write_parquet(tmp_path / "text.parquet", {"order_id": [50], "amount": ["1.0"]}),
    ]
    args = ingest("batch.leftout", sources)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    got = {v["uri"].rsplit("/", 1)[-1]: v for v in report["sources"]}
    assert got["good.parquet"]["status"] == "passed"
    assert got["renamed.parquet"]["status"] == "rejected"
    assert "not a parquet file" in got["renamed.parquet"]["reason"]
    assert got["text.parquet"]["status"] == "rejected"
    assert "'amount' is string in the file but double in the table" in got["text.parquet"]["reason"]
    assert report["rows_written"] == 4
    assert read_on_ref(lake, nessie, args.branch, "batch.leftout").count() == 4 + 4


def test_all_or_nothing_rejects_the_run_for_one_unusable_source(lake, ingest, tmp_path):
    csv = tmp_path / "renamed.parquet"
    csv.write_bytes(b"order_id,amount\n1,2.0\n" * 5)
    args = ingest(
        "batch.dataset", [write_parquet(tmp_path / "good.parquet", orders(0)), csv.as_uri()]
    )
    from dataclasses import replace

    report = run_ingest(lake, replace(args, all_or_nothing=True))

    assert report["outcome"] == "rejected" and "not a parquet file" in report["reason"]
    assert report["rows_written"] == 0


def test_a_key_repeated_across_files_fails_the_run_but_no_file_alone(lake, ingest, tmp_path):
    sources = [
        write_parquet(tmp_path / "a.parquet", orders(0)),
        write_parquet(tmp_path / "b.parquet", orders(2)),
    ]  # ids 2 and 3 in both
    report = run_ingest(lake, ingest("batch.crossdup", sources, config=CHECKS))

    assert report["outcome"] == "failed"
    assert [v[1] for v in verdicts(report)] == ["passed", "passed"]


def test_a_file_whose_keys_are_already_on_main_fails_alone(lake, nessie_api, ingest, tmp_path):
    # A re-upload of published data is the usual case: only that file may be held back.
    config = "checks:\n  - {kind: unique, column: order_id, against_main: true}\n"
    seed = ingest(
        "batch.onmain", [write_parquet(tmp_path / "seed.parquet", orders(0))], config=config
    )
    assert run_ingest(lake, seed)["outcome"] == "passed"
    nessie_api.merge(seed.branch)
    sources = [
        write_parquet(tmp_path / "new-a.parquet", orders(100)),
        write_parquet(tmp_path / "again.parquet", orders(2)),  # 2 and 3 are on main
        write_parquet(tmp_path / "new-b.parquet", orders(200)),
    ]

    report = run_ingest(lake, ingest("batch.onmain", sources, config=config))

    assert report["outcome"] == "failed"
    assert verdicts(report) == [
        ("new-a.parquet", "passed", 4, []),
        ("again.parquet", "failed", 4, ["order_id_unique"]),
        ("new-b.parquet", "passed", 4, []),
    ]


def test_a_single_source_has_one_verdict_following_the_outcome(lake, ingest, tmp_path):
    source = write_parquet(tmp_path / "one.parquet", orders(0, amount=-1.0))
    report = run_ingest(lake, ingest("batch.single", [source], config=CHECKS))

    assert report["outcome"] == "failed"
    assert verdicts(report) == [("one.parquet", "failed", 4, ["amount_positive"])]
    assert "audit_per_source_s" not in report["timings"]  # no extra pass for one file


def test_source_verdicts_round_trip_and_old_reports_have_none():
    verdict = SourceVerdict(
        uri="s3://b/k.parquet", status="failed", rows=3, failed_checks=("amount_positive",)
    )
    assert SourceVerdict.from_dict(verdict.to_dict()) == verdict
    old = {
        "report_version": 1,
        "ingest_id": "a" * 16,
        "table": "s.t",
        "branch": "wap_x",
        "outcome": "passed",
    }
    assert AuditReport.from_dict(old).sources == ()
    with pytest.raises(ValueError, match="status"):
        SourceVerdict.from_dict({"uri": "s3://b/k", "status": "maybe"})


def test_the_table_config_takes_batch_limits_and_arrival_and_refuses_bad_ones():
    import yaml

    from contracts.table_config import TableConfigError, parse_table_config_text

    def parse_table_config(text):
        return parse_table_config_text(text, yaml=yaml)

    config = parse_table_config(
        "batch: {max_files: 1, max_bytes: 500MB, marker_timeout: 6h}\narrival: marker\n"
    )
    assert (config.batch.max_files, config.batch.max_bytes) == (1, 500 * 1000**2)
    assert (config.batch.marker_timeout_seconds, config.arrival) == (6 * 3600, "marker")
    assert parse_table_config("").batch.max_files == 500
    for bad, named in [
        ("batch: {max_files: 0}", "max_files"),
        ("batch: {max_bytes: lots}", "max_bytes"),
        ("batch: {files: 3}", "unknown"),
        ("arrival: sometimes", "arrival"),
        ("batch: 5", "mapping"),
    ]:
        with pytest.raises(TableConfigError, match=named):
            parse_table_config(bad)


def _bad_page(path) -> str:
    """A parquet file whose footer reads but whose first page header does not decode."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(orders(900)), path, compression="NONE")
    data = bytearray(path.read_bytes())
    data[4:40] = b"\xff" * 36  # magic bytes and footer intact
    path.write_bytes(bytes(data))
    return path.as_uri()


def test_a_file_whose_pages_do_not_decode_is_left_out_in_the_same_run(
    lake, nessie, ingest, tmp_path
):
    # Its footer reads, so only the write finds it: found there by halving, not by a run
    # per file (issue 30: 10 files took 11 runs).
    sources = [write_parquet(tmp_path / f"g{i}.parquet", orders(10 * i)) for i in range(6)]
    sources.insert(4, _bad_page(tmp_path / "bad-page.parquet"))
    args = ingest("batch.badpage", sources)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    got = {v["uri"].rsplit("/", 1)[-1]: v for v in report["sources"]}
    assert got["bad-page.parquet"]["status"] == "rejected"
    assert "PageHeader" in got["bad-page.parquet"]["reason"]
    assert [got[f"g{i}.parquet"]["status"] for i in range(6)] == ["passed"] * 6
    assert report["rows_written"] == 24
    assert read_on_ref(lake, nessie, args.branch, "batch.badpage").count() == 24


def test_a_repeated_batch_leaves_out_the_file_whose_pages_do_not_decode_again(
    lake, ingest, tmp_path
):
    # The first run's report was lost: the second reuses its snapshot, and must not
    # call passed a file whose rows that snapshot does not hold.
    sources = [write_parquet(tmp_path / f"g{i}.parquet", orders(10 * i)) for i in range(3)]
    sources.insert(1, _bad_page(tmp_path / "bad-page.parquet"))
    args = ingest("batch.badpageagain", sources)
    first = run_ingest(lake, args)

    second = run_ingest(lake, args)

    assert second["reused_snapshot"], second
    assert (second["outcome"], second["rows_written"]) == (
        first["outcome"],
        first["rows_written"],
    ), second
    assert second["sources"] == first["sources"]
