"""Every key S3 allows is read literally: Hadoop globs `* ? [ ] { } \\` in the paths Spark
reads, so a file named like a pattern read other files' rows, or nothing (issue 30)."""

from __future__ import annotations

import pytest

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import read_on_ref, write_parquet

ODD_NAMES = [
    "f*.parquet",
    "q?.parquet",
    "export[1].parquet",
    "d{a,b}.parquet",
    "back\\slash.parquet",
    "all {[*?]}.parquet",
]


def _raw_uri(path) -> str:
    # As the trigger stages them on S3: the name as uploaded, not %-encoded.
    return f"file://{path}"


@pytest.fixture
def odd_dir(tmp_path):
    """Files whose names a glob of each odd name would match, then the odd ones."""
    folder = tmp_path / "odd"
    folder.mkdir()
    for name, first in (
        ("fa.parquet", 100),
        ("fb.parquet", 200),
        ("q1.parquet", 300),
        ("export1.parquet", 400),
        ("da.parquet", 500),
        ("db.parquet", 600),
    ):
        write_parquet(folder / name, {"order_id": [first, first + 1], "amount": [1.0, 2.0]})
    for number, name in enumerate(ODD_NAMES):
        write_parquet(folder / name, {"order_id": [number], "amount": [9.0]})
    return folder


@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_file_named_like_a_glob_is_read_as_exactly_that_file(lake, nessie, ingest, odd_dir, name):
    table = "odd.names_" + str(ODD_NAMES.index(name))
    args = ingest(table, [_raw_uri(odd_dir / name)])

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["rows_written"] == 1
    rows = read_on_ref(lake, nessie, args.branch, table).collect()
    assert [row.order_id for row in rows] == [ODD_NAMES.index(name)]


def test_odd_names_in_one_batch_each_get_their_own_verdict(lake, ingest, odd_dir):
    sources = [_raw_uri(odd_dir / name) for name in ODD_NAMES]
    args = ingest("odd.batch", sources)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["rows_written"] == len(ODD_NAMES)
    assert [(v["uri"], v["status"], v["rows"]) for v in report["sources"]] == [
        (uri, "passed", 1) for uri in sources
    ]
