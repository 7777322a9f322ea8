"""Audits that learn from history (issue 39, docs/metric-history.md): the job records its
metrics beside the table on the branch, the merge publishes them with the data, and
history bounds and anomaly checks judge a drop against what main published before."""

from __future__ import annotations

import datetime as dt

import pytest

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import read_on_ref, write_parquet

ANOMALY = """
checks:
  - kind: anomaly
    name: rows_as_usual
    metric: row_count
    window: 10
    min_history: 4
  - kind: anomaly
    name: email_nulls_as_usual
    metric: null_fraction
    column: email
    min_history: 4
    min_spread: 0.05
  - kind: row_count
    name: rows_from_history
    min: 0.5 * avg(last(10))
"""


def _rows(count: int, null_every: int = 0, seed: int = 0) -> dict:
    return {
        "id": list(range(seed, seed + count)),
        "email": [
            None if null_every and i % null_every == 0 else f"u{i}@x.io" for i in range(count)
        ],
        "amount": [float(i % 97) for i in range(count)],
    }


@pytest.fixture
def drop(lake, ingest, nessie_api, tmp_path):
    """Factory: ingest one parquet drop into `table`; merge it into main when it passed
    (as the state machine does) unless `publish` says otherwise; return the report."""
    counter = iter(range(10_000))

    def run(table: str, columns: dict, config: str = ANOMALY, publish: bool | None = None):
        path = write_parquet(tmp_path / f"drop{next(counter)}.parquet", columns)
        args = ingest(table, [path], config=config)
        report = run_ingest(lake, args)
        if publish if publish is not None else report["outcome"] == "passed":
            nessie_api.merge(args.branch)
        return report

    return run


def _check(report: dict, name: str) -> dict:
    return next(check for check in report["checks"] if check["name"] == name)


def test_a_drop_far_below_its_published_history_fails_with_the_band_in_the_reason(drop):
    table = "hist.orders"
    for n in range(12):
        report = drop(table, _rows(10_000 + 37 * (n % 5) - 70, seed=n * 20_000))
        assert report["outcome"] == "passed", report["reason"]
    report = drop(table, _rows(500, seed=999_000))
    assert report["outcome"] == "failed"
    check = _check(report, "rows_as_usual")
    assert check["status"] == "failed"
    assert check["observed"] == 500
    assert "row_count 500; expected" in check["message"]
    assert "from the last 10 published drops" in check["message"]
    assert 9_600 < check["threshold"]["low"] < 10_000 < check["threshold"]["high"] < 10_400
    history = _check(report, "rows_from_history")
    assert history["status"] == "failed"
    assert "expected at least" in history["message"]
    assert "rows_as_usual" in report["reason"]


def test_a_null_fraction_spike_fails(drop):
    table = "hist.nulls"
    for n in range(5):
        assert drop(table, _rows(1_000, null_every=100, seed=n * 5_000))["outcome"] == "passed"
    report = drop(table, _rows(1_000, null_every=2, seed=77_000))
    assert report["outcome"] == "failed"
    check = _check(report, "email_nulls_as_usual")
    assert check["status"] == "failed"
    assert check["message"].startswith("null_fraction(email) 0.5; expected")


def test_the_first_drops_warn_and_publish_until_min_history(drop):
    table = "hist.young"
    for n in range(4):
        report = drop(table, _rows(100 * (n + 1), seed=n * 1_000))
        assert report["outcome"] == "passed"
        check = _check(report, "rows_as_usual")
        assert check["severity"] == "warn"
        assert check["status"] == "failed"
        assert f"{n} published drop(s), 4 needed" in check["message"]
    report = drop(table, _rows(250, seed=50_000))
    assert _check(report, "rows_as_usual")["severity"] == "error"
    assert _check(report, "rows_as_usual")["status"] == "passed"


def test_a_failed_drop_does_not_move_the_band_and_a_published_one_does(drop):
    table = "hist.band"
    for n in range(5):
        drop(table, _rows(1_000 + n, seed=n * 5_000))
    low_before = _check(drop(table, _rows(1_002, seed=90_000), publish=False), "rows_as_usual")
    failed = drop(table, _rows(10, seed=91_000))
    assert failed["outcome"] == "failed"  # not merged: main's history stays as it was
    after_failed = _check(drop(table, _rows(1_002, seed=92_000), publish=False), "rows_as_usual")
    assert after_failed["threshold"] == low_before["threshold"]
    # A person reviews the failed drop and publishes it (`wap publish` merges the branch).
    drop(table, _rows(10, seed=93_000), publish=True)
    after_published = _check(drop(table, _rows(1_002, seed=94_000), publish=False), "rows_as_usual")
    assert after_published["threshold"]["drops"] == 6
    assert after_published["threshold"]["low"] < low_before["threshold"]["low"]


def test_metrics_are_recorded_beside_the_table_and_published_with_it(drop, lake, nessie):
    table = "hist.recorded"
    report = drop(table, _rows(300, null_every=3))
    assert report["outcome"] == "passed"
    metrics = [
        r.asDict()
        for r in read_on_ref(lake, nessie, "main", "hist.recorded__audit_metrics").collect()
    ]
    rows = {(r["scope"], r["column_name"], r["metric"], r["check_name"]): r for r in metrics}
    assert rows[("table", None, "row_count", None)]["value"] == 300
    assert rows[("table", "email", "null_fraction", None)]["value"] == pytest.approx(100 / 300)
    assert rows[("table", "amount", "mean", None)]["value"] == pytest.approx(
        sum(i % 97 for i in range(300)) / 300
    )
    assert 280 <= rows[("table", "id", "distinct_count", None)]["value"] <= 320
    assert rows[("table", None, "check", "rows_from_history")]["value"] == 300
    file_rows = [r for r in metrics if r["scope"] == "file"]
    assert [r["value"] for r in file_rows] == [300]
    assert {r["ingest_id"] for r in metrics} == {report["ingest_id"]}
    assert all(isinstance(r["recorded_at"], dt.datetime) for r in metrics)


def test_a_batch_records_the_run_as_one_drop_and_each_file_on_its_own(
    lake, nessie, ingest, tmp_path
):
    """docs/metric-history.md: a batch is one drop of the table's history (its table
    metrics cover all its files); each file's row count is recorded with scope `file`."""
    sources = [
        write_parquet(tmp_path / f"part{n}.parquet", _rows(count, seed=n * 1_000))
        for n, count in enumerate((120, 80))
    ]
    args = ingest("hist.batch", sources, config=ANOMALY)
    report = run_ingest(lake, args)
    assert report["outcome"] == "passed", report["reason"]
    metrics = read_on_ref(lake, nessie, args.branch, "hist.batch__audit_metrics").collect()
    table_rows = [
        m["value"] for m in metrics if m["scope"] == "table" and m["metric"] == "row_count"
    ]
    assert table_rows == [200]
    per_file = {m["source"]: m["value"] for m in metrics if m["scope"] == "file"}
    assert per_file == {sources[0]: 120, sources[1]: 80}


def test_a_drop_too_large_to_observe_takes_exact_file_metrics_and_scans_watched_columns(
    lake, nessie, ingest, tmp_path
):
    """Without the write's observation (a large drop), every column's null fraction and a
    number's min/max come from the snapshot's column metrics; distinct count, mean and
    deviation only where a learning check watches them, in the audit's one scan."""
    config = ANOMALY + "  - {kind: anomaly, metric: mean, column: amount}\n"
    path = write_parquet(tmp_path / "large.parquet", _rows(400, null_every=4))
    args = ingest("hist.large", [path], config=config)
    lake.conf.set("spark.wap.audit.observe-on-write", "false")
    try:
        report = run_ingest(lake, args)
    finally:
        lake.conf.unset("spark.wap.audit.observe-on-write")
    assert report["outcome"] == "passed", report["reason"]
    metrics = read_on_ref(lake, nessie, args.branch, "hist.large__audit_metrics").collect()
    recorded = {
        (m["column_name"], m["metric"]): m["value"] for m in metrics if m["scope"] == "table"
    }
    assert recorded[(None, "row_count")] == 400
    assert recorded[("email", "null_fraction")] == 0.25  # file metrics, exact
    assert recorded[("id", "null_fraction")] == 0
    assert (recorded[("id", "min")], recorded[("id", "max")]) == (0, 399)
    # The one metric file metrics lack that a check watches: scanned, and nothing more.
    assert recorded[("amount", "mean")] == pytest.approx(sum(i % 97 for i in range(400)) / 400)
    assert ("amount", "stddev") not in recorded
    assert not [key for key in recorded if key[1] == "distinct_count"]
