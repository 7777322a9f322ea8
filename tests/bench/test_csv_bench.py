"""The CSV bench (issue 26) still runs every variant, and its baseline still reads a CSV
the way the job does.

Unlike the other benchmarks' smoke tests (test_benchmarks_run.py), this one runs in the
test session's SparkSession and this module's Nessie server: a process of its own
would spend most of its time starting a JVM. The bench itself refuses a run that did
not write every row, or whose audit did not pass.
"""

from __future__ import annotations

import pytest

from bench.csv_bench import FORMATS, generate, measure, render
from bench.scratch import Nessie
from tests.fixtures.catalog_auth import harness_headers

ROWS = 2_000


@pytest.mark.slow
def test_csv_bench_measures_every_source_and_reads_csv_with_the_jobs_options(
    lake, nessie, tmp_path, monkeypatch
):
    from pyspark.sql.readwriter import DataFrameReader

    calls: list[dict] = []
    real = DataFrameReader.options

    def spy(self, **options):
        calls.append(options)
        return real(self, **options)

    monkeypatch.setattr(DataFrameReader, "options", spy)

    results, sizes = measure(
        lake,
        Nessie(nessie.api_v2, lambda: harness_headers(nessie)),
        tmp_path,
        generate(ROWS, tmp_path),
        ROWS,
        repeats=1,
    )

    # For csv and csv.gz: the job's counting read (with the corrupt-record column), its
    # strict read (FAILFAST: what a clean file is written from) and the baseline's plain
    # read: the same options but for those, or the ratio compares two readers.
    job = [c for c in calls if "columnNameOfCorruptRecord" in c]
    strict = [c for c in calls if c.get("mode") == "FAILFAST"]
    plain = [
        c for c in calls if c.get("mode") == "PERMISSIVE" and "columnNameOfCorruptRecord" not in c
    ]
    assert len(job) == len(strict) == len(plain) == 2
    expected = {k: v for k, v in job[0].items() if k != "columnNameOfCorruptRecord"}
    assert plain == [expected, expected]
    assert strict == [{**expected, "mode": "FAILFAST"}] * 2
    by = {row["format"]: row for row in results}
    assert list(by) == list(FORMATS)
    # parse_errors is judged for the text sources only, from the count the write observed.
    assert [by[fmt]["wap"]["parse_checked"] for fmt in FORMATS] == [1.0, 1.0, 0.0]
    text = render(results, sizes, ROWS, 1)
    assert text.startswith(f"{ROWS:,} rows; files: csv ")
    for fmt in FORMATS:
        assert f"\n| {fmt} | " in text
    assert "| csv / parquet | " in text and "| csv.gz / parquet | " in text
