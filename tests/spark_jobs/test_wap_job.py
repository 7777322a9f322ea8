"""The WAP job end to end: real Spark, real Iceberg NessieCatalog, our Nessie server."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from spark_jobs.audit import job_group_ids
from spark_jobs.errors import TableConfigError
from spark_jobs.wap_job import (
    DEFAULT_OBSERVE_MAX_BYTES,
    OBSERVE_CONF,
    OBSERVE_MAX_BYTES_CONF,
    main,
    observe_on_write,
    parse_args,
    run_ingest,
)
from tests.fixtures.spark_files import read_on_ref, write_parquet

ORDERS = {
    "order_id": list(range(1, 21)),
    "status": ["NEW", "PAID"] * 10,
    "amount": [float(i) for i in range(1, 21)],
    "email": [f"user{i}@example.com" for i in range(1, 21)],
}
SCAN_CHECKS = """
checks:
  - {kind: accepted_values, column: status, values: [NEW, PAID, SHIPPED]}
  - {kind: regex, column: email, pattern: '^[^@]+@[^@]+$'}
  - {kind: expression, name: amount_positive, sql: "amount > 0"}
  - {kind: not_null, column: order_id}
"""


def _check(report: dict, name: str) -> dict:
    return next(check for check in report["checks"] if check["name"] == name)


def _read_report(args) -> dict:
    return json.loads(Path(urlparse(args.report_uri).path).read_text())


def test_clean_file_passes_and_lands_on_the_branch_only(lake, nessie, nessie_api, ingest, tmp_path):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    args = ingest("sales.clean", [source])
    main_before = nessie_api.ref("main")["hash"]

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["rows_written"] == 20
    assert report == _read_report(args)
    assert report["branch_hash"] == nessie_api.ref(args.branch)["hash"]
    assert read_on_ref(lake, nessie, args.branch, "sales.clean").count() == 20
    assert "sales.clean" in nessie_api.table_keys(args.branch)
    assert "sales.clean" not in nessie_api.table_keys("main")
    assert nessie_api.ref("main")["hash"] == main_before
    row_count = _check(report, "row_count")
    assert (row_count["status"], row_count["observed"], row_count["settled_by"]) == (
        "passed",
        20,
        "metrics",
    )


def test_snapshot_summary_carries_the_ingest(lake, nessie, ingest, tmp_path):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    args = ingest("sales.stamped", [source])
    report = run_ingest(lake, args)
    snapshots = (
        read_on_ref(lake, nessie, args.branch, "sales.stamped")
        .sparkSession.sql(
            f"SELECT snapshot_id, summary FROM `wap_{args.ingest_id[:8]}`.sales.stamped.snapshots"
        )
        .collect()
    )
    assert [(s.snapshot_id, s.summary["wap.ingest-id"]) for s in snapshots] == [
        (report["snapshot_id"], args.ingest_id)
    ]
    assert snapshots[0].summary["wap.source"] == source


def _summaries(lake, nessie, args) -> list[dict]:
    return [
        s.summary
        for s in read_on_ref(lake, nessie, args.branch, args.table)
        .sparkSession.sql(f"SELECT summary FROM `wap_{args.ingest_id[:8]}`.{args.table}.snapshots")
        .collect()
    ]


def _with_origins(args, origins: list[str]):
    """`args` as the pipeline submits them: each `--source` (the copy the job reads) with
    the uploaded object version it is a copy of."""
    # Written out, not JobArgs.to_args(): the model refuses the unpaired list one test needs.
    argv = [a for uri in args.sources for a in ("--source", uri)]
    argv += [a for uri in origins for a in ("--source-origin", uri)]
    argv += [
        "--table",
        args.table,
        "--branch",
        args.branch,
        "--ingest-id",
        args.ingest_id,
        "--report-uri",
        args.report_uri,
    ]
    return parse_args(argv)


def test_the_snapshot_names_the_uploaded_object_version_not_the_copy_it_read(
    lake, nessie, ingest, tmp_path
):
    copy = write_parquet(tmp_path / "0-orders.parquet", ORDERS)  # as the EMR double hands it
    origin = "s3://wap-source/sales/orders/2026-11-22 orders.parquet?versionId=3sL4kqtJlcpX"
    args = _with_origins(ingest("sales.origin", [copy]), [origin])

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert [s["wap.source"] for s in _summaries(lake, nessie, args)] == [origin]


def test_a_batch_snapshot_names_each_written_upload_in_order(lake, nessie, ingest, tmp_path):
    first = write_parquet(tmp_path / "0-a.parquet", ORDERS)
    renamed = tmp_path / "1-b.parquet"  # not parquet: left out of the batch, so not named
    renamed.write_bytes(b"order_id,amount\n1,2.0\n" * 5)
    last = write_parquet(tmp_path / "2-c.parquet", {k: v[:5] for k, v in ORDERS.items()})
    origins = [
        f"s3://wap-source/sales/orders/{name}.parquet?versionId=v{i}"
        for i, name in enumerate(("a", "b", "c"))
    ]
    args = _with_origins(ingest("sales.origins", [first, renamed.as_uri(), last]), origins)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["rows_written"] == 25
    assert [s["wap.source"] for s in _summaries(lake, nessie, args)] == [
        f"{origins[0]},{origins[2]}"
    ]


def test_a_source_origin_per_source_or_none(ingest, tmp_path, capsys):
    args = ingest("sales.unpaired", ["file:///a.parquet", "file:///b.parquet"])
    with pytest.raises(SystemExit) as exited:
        _with_origins(args, ["s3://wap-source/a.parquet"])
    assert exited.value.code == 2
    assert "--source-origin" in capsys.readouterr().err


def test_nulls_in_not_null_column_fail_with_exact_count_and_samples(lake, ingest, tmp_path):
    ids = list(range(1, 21))
    for position in (2, 7, 11):
        ids[position] = None
    source = write_parquet(tmp_path / "nulls.parquet", {**ORDERS, "order_id": ids})
    args = ingest("sales.nulls", [source], config=SCAN_CHECKS)

    report = run_ingest(lake, args)

    assert report["outcome"] == "failed"
    check = _check(report, "order_id_not_null")
    assert (check["status"], check["violations"], check["settled_by"]) == ("failed", 3, "metrics")
    assert len(check["samples"]) == 3
    assert all(sample["order_id"] is None for sample in check["samples"])
    assert {sample["amount"] for sample in check["samples"]} == {3.0, 8.0, 12.0}
    assert "order_id_not_null" in report["reason"]
    assert _check(report, "email_regex")["status"] == "passed"


def test_warn_failures_alone_still_pass(lake, ingest, tmp_path):
    emails = [*ORDERS["email"][:18], "not-an-email", "also-bad"]
    source = write_parquet(tmp_path / "warn.parquet", {**ORDERS, "email": emails})
    config = """
checks:
  - {kind: regex, column: email, pattern: '^[^@]+@[^@]+$', severity: warn}
  - {kind: not_null, column: order_id}
"""
    report = run_ingest(lake, ingest("sales.warned", [source], config=config))

    assert report["outcome"] == "passed"
    assert report["reason"] is None
    regex = _check(report, "email_regex")
    assert (regex["status"], regex["violations"], regex["severity"]) == ("failed", 2, "warn")
    assert sorted(s["email"] for s in regex["samples"]) == ["also-bad", "not-an-email"]


def _jobs(spark, group: str) -> list[int]:
    # The status tracker learns of jobs from the listener bus, asynchronously: under load
    # a job that just ran may not be known yet.
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def _one_aggregation_jobs(spark, table_sql: str, *aggregates: str) -> int:
    """Jobs one plain global aggregation over a table takes in this session (AQE splits it)."""
    group = f"baseline-one-agg-{table_sql}-{len(aggregates)}"
    spark.sparkContext.setJobGroup(group, "baseline")
    spark.table(table_sql).selectExpr("count(*)", *aggregates).collect()
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(_jobs(spark, group))


def _clean_scan_checks_ingest(lake, ingest, tmp_path, table: str):
    """Ingest the clean ORDERS into `table` under SCAN_CHECKS, which must pass: its job
    arguments, its Spark job groups, and what settled each check (by check name)."""
    source = write_parquet(tmp_path / "clean.parquet", ORDERS)
    args = ingest(table, [source], config=SCAN_CHECKS)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed"
    settled = {c["name"]: c["settled_by"] for c in report["checks"]}
    return args, job_group_ids(args.ingest_id), settled


def _scan_checks_settled(row_checks_by: str) -> dict[str, str]:
    """SCAN_CHECKS settled on clean ORDERS: accepted_values on a string and not_null by the
    metrics (the parquet dictionaries hold every value), the row checks by `row_checks_by`."""
    return {
        "status_accepted_values": "metrics",
        "email_regex": row_checks_by,
        "amount_positive": row_checks_by,
        "order_id_not_null": "metrics",
    }


def test_clean_audit_settles_from_metrics_and_the_write_without_reading(lake, ingest, tmp_path):
    _, groups, settled = _clean_scan_checks_ingest(lake, ingest, tmp_path, "sales.jobs")

    assert _jobs(lake, groups["scan"]) == []
    assert _jobs(lake, groups["samples"]) == []
    assert _jobs(lake, groups["main"]) == []
    assert settled == _scan_checks_settled("write")


@pytest.fixture
def spark_conf(lake):
    """Set Spark conf keys for one test, then unset them."""
    keys = []

    def set_conf(values: dict[str, str]) -> None:
        for key, value in values.items():
            lake.conf.set(key, value)
            keys.append(key)

    yield set_conf
    for key in keys:
        lake.conf.unset(key)


@pytest.mark.parametrize(
    ("conf", "table"),
    [
        ({OBSERVE_CONF: "false"}, "sales.jobs_scan"),
        ({OBSERVE_MAX_BYTES_CONF: "1"}, "sales.jobs_scan_large"),  # `auto`, source above it
    ],
    ids=["off", "auto-above-limit"],
)
def test_without_observation_the_audit_is_one_aggregation_pass(
    lake, ingest, tmp_path, spark_conf, conf, table
):
    spark_conf(conf)
    args, groups, settled = _clean_scan_checks_ingest(lake, ingest, tmp_path, table)

    one_pass = _one_aggregation_jobs(
        lake, f"`wap_{args.ingest_id[:8]}`.{args.table}", "max(amount)"
    )
    assert one_pass >= 1
    assert len(_jobs(lake, groups["scan"])) == one_pass
    assert _jobs(lake, groups["samples"]) == []
    assert settled == _scan_checks_settled("scan")


def test_observation_on_write_depends_on_the_source_size(lake, spark_conf):
    assert observe_on_write(lake, DEFAULT_OBSERVE_MAX_BYTES)
    assert not observe_on_write(lake, DEFAULT_OBSERVE_MAX_BYTES + 1)
    spark_conf({OBSERVE_MAX_BYTES_CONF: "10"})
    assert observe_on_write(lake, 10) and not observe_on_write(lake, 11)
    spark_conf({OBSERVE_CONF: "TRUE"})
    assert observe_on_write(lake, 10**12)
    spark_conf({OBSERVE_CONF: "false"})
    assert not observe_on_write(lake, 1)


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({OBSERVE_CONF: "sometimes"}, "must be auto, true or false, not 'sometimes'"),
        ({OBSERVE_MAX_BYTES_CONF: "64MB"}, "must be a number of bytes, not '64MB'"),
    ],
)
def test_bad_observation_settings_are_config_errors(
    lake, ingest, tmp_path, spark_conf, conf, message
):
    with pytest.raises(TableConfigError, match=message):
        spark_conf(conf)
        observe_on_write(lake, 1)
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    args = ingest("sales.bad_conf", [source])
    report = run_ingest(lake, args)
    assert (report["outcome"], report["reason_code"]) == ("rejected", "config_error")
    assert message in report["reason"]
    assert report["rows_written"] == 0


def test_unique_is_counted_in_one_aggregation_pass(lake, ingest, tmp_path):
    source = write_parquet(tmp_path / "clean.parquet", ORDERS)
    config = SCAN_CHECKS + "  - {kind: unique, column: order_id}\n"
    args = ingest("sales.jobs_unique", [source], config=config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed"
    groups = job_group_ids(args.ingest_id)
    one_pass = _one_aggregation_jobs(
        lake,
        f"`wap_{args.ingest_id[:8]}`.sales.jobs_unique",
        "count_if(order_id IS NOT NULL)",
        "count(DISTINCT order_id)",
    )
    assert len(_jobs(lake, groups["scan"])) == one_pass
    assert _check(report, "order_id_unique")["settled_by"] == "scan"
    assert _jobs(lake, groups["samples"]) == []


def test_failed_audit_adds_one_sampling_query(lake, ingest, tmp_path):
    emails = [*ORDERS["email"][:19], "nobody"]
    source = write_parquet(tmp_path / "dirty.parquet", {**ORDERS, "email": emails})
    args = ingest("sales.jobs_dirty", [source], config=SCAN_CHECKS)

    report = run_ingest(lake, args)

    assert report["outcome"] == "failed"
    check = _check(report, "email_regex")
    assert (check["violations"], check["settled_by"]) == (1, "write")
    assert check["samples"] == [
        {"order_id": 20, "status": "PAID", "amount": 20.0, "email": "nobody"}
    ]
    groups = job_group_ids(args.ingest_id)
    assert _jobs(lake, groups["scan"]) == []
    assert len(_jobs(lake, groups["samples"])) >= 1


def test_value_outside_the_dictionary_is_counted_by_one_scan(lake, ingest, tmp_path):
    bad = [*ORDERS["status"][:19], "LOST"]
    source = write_parquet(tmp_path / "lost.parquet", {**ORDERS, "status": bad})
    args = ingest("sales.lost", [source], config=SCAN_CHECKS)

    report = run_ingest(lake, args)

    check = _check(report, "status_accepted_values")
    assert (check["status"], check["violations"], check["settled_by"]) == ("failed", 1, "scan")
    assert check["samples"] == [{"order_id": 20, "status": "LOST", "amount": 20.0}]
    groups = job_group_ids(args.ingest_id)
    one_pass = _one_aggregation_jobs(lake, f"`wap_{args.ingest_id[:8]}`.sales.lost", "max(amount)")
    assert len(_jobs(lake, groups["scan"])) == one_pass


def test_metrics_settle_clean_checks_without_any_job(lake, ingest, tmp_path):
    source = write_parquet(tmp_path / "clean.parquet", ORDERS)
    config = """
checks:
  - {kind: not_null, column: order_id}
  - {kind: range, column: amount, min: 0, max: 100}
  - {kind: row_count, min: 10, max: 1000}
  - {kind: null_fraction, column: email, max: 0.1}
"""
    args = ingest("sales.metrics_only", [source], config=config)
    report = run_ingest(lake, args)

    assert report["outcome"] == "passed"
    assert {c["settled_by"] for c in report["checks"]} == {"metrics"}
    groups = job_group_ids(args.ingest_id)
    assert _jobs(lake, groups["scan"]) == [] and _jobs(lake, groups["samples"]) == []


def test_range_settled_by_metrics_when_every_value_is_outside(lake, ingest, tmp_path):
    source = write_parquet(tmp_path / "big.parquet", ORDERS)
    config = "checks:\n  - {kind: range, column: amount, max: 0.5}\n"
    report = run_ingest(lake, ingest("sales.all_out", [source], config=config))
    check = report["checks"][0]
    assert (check["status"], check["violations"], check["settled_by"]) == ("failed", 20, "metrics")
    assert len(check["samples"]) == 5


def test_odd_column_names_are_quoted_everywhere(lake, nessie, ingest, tmp_path):
    source = write_parquet(
        tmp_path / "odd.parquet",
        {
            "select": [1, 2, 3, None],
            "my col": ["a", "b", "c", "d"],
            "from`tick": [1.0, 2.0, 3.0, 4.0],
        },
    )
    config = """
partition_by: ["my col"]
checks:
  - {kind: not_null, column: select, severity: warn}
  - {kind: regex, column: my col, pattern: '^[a-c]$'}
  - {kind: expression, name: tick_positive, sql: "`from``tick` > 0"}
  - {kind: unique, columns: [my col, select]}
"""
    args = ingest("odd.names", [source], config=config)
    report = run_ingest(lake, args)

    assert report["outcome"] == "failed", report["reason"]
    assert _check(report, "my col_regex")["violations"] == 1
    assert _check(report, "my col_regex")["samples"][0]["my col"] == "d"
    assert _check(report, "select_not_null")["violations"] == 1
    assert _check(report, "tick_positive")["status"] == "passed"
    assert _check(report, "my col_select_unique")["violations"] == 0
    rows = read_on_ref(lake, nessie, args.branch, "odd.names")
    assert sorted(rows.columns) == ["from`tick", "my col", "select"]


def test_duplicate_keys_are_counted_and_sampled(lake, ingest, tmp_path):
    ids = [*range(1, 18), 5, 5, 9]  # 5 three times, 9 twice: 3 duplicate rows
    source = write_parquet(tmp_path / "dups.parquet", {**ORDERS, "order_id": ids})
    config = "checks:\n  - {kind: unique, column: order_id}\n"
    report = run_ingest(lake, ingest("sales.dups", [source], config=config))
    check = report["checks"][0]
    assert (check["status"], check["violations"]) == ("failed", 3)
    assert sorted(s["order_id"] for s in check["samples"]) == [5, 5, 5, 9, 9]


def test_unique_against_main_finds_published_keys(lake, nessie_api, ingest, tmp_path):
    first = write_parquet(tmp_path / "first.parquet", ORDERS)
    config = "checks:\n  - {kind: unique, column: order_id, against_main: true}\n"
    published = ingest("sales.keys", [first], config=config)
    assert run_ingest(lake, published)["outcome"] == "passed"
    nessie_api.merge(published.branch)

    overlap = {**ORDERS, "order_id": list(range(19, 39))}  # 19 and 20 are on main
    second = ingest(
        "sales.keys", [write_parquet(tmp_path / "second.parquet", overlap)], config=config
    )
    report = run_ingest(lake, second)

    check = report["checks"][0]
    assert (check["status"], check["violations"]) == ("failed", 2)
    assert sorted(s["order_id"] for s in check["samples"]) == [19, 20]


def test_same_ingest_twice_appends_once(lake, nessie, nessie_api, ingest, tmp_path):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    args = ingest("sales.twice", [source])

    first = run_ingest(lake, args)
    second = run_ingest(lake, args)

    assert first["outcome"] == second["outcome"] == "passed"
    assert second["snapshot_id"] == first["snapshot_id"]
    assert (first["reused_snapshot"], second["reused_snapshot"]) == (False, True)
    assert second["branch_hash"] == first["branch_hash"] == nessie_api.ref(args.branch)["hash"]
    assert read_on_ref(lake, nessie, args.branch, "sales.twice").count() == 20


# --- schema policy -----------------------------------------------------------------------


def _seed(lake, nessie_api, ingest, tmp_path, table, config, columns):
    """Publish a first file to main so the table exists there."""
    args = ingest(
        table, [write_parquet(tmp_path / f"{table}-seed.parquet", columns)], config=config
    )
    report = run_ingest(lake, args)
    assert report["outcome"] == "passed", report["reason"]
    nessie_api.merge(args.branch)


def test_new_column_under_strict_is_rejected(lake, nessie_api, ingest, tmp_path):
    _seed(lake, nessie_api, ingest, tmp_path, "schema.strict", "schema_policy: strict\n", ORDERS)
    source = write_parquet(tmp_path / "extra.parquet", {**ORDERS, "discount": [0.5] * 20})
    args = ingest("schema.strict", [source], config="schema_policy: strict\n")
    branch_before = nessie_api.ref(args.branch)["hash"]

    report = run_ingest(lake, args)

    assert report["outcome"] == "rejected"
    assert report["reason_code"] == "schema_policy"
    assert "'discount' is new" in report["reason"]
    assert report["branch_hash"] is None
    assert nessie_api.ref(args.branch)["hash"] == branch_before


def test_new_column_under_additive_evolves_the_table(lake, nessie, nessie_api, ingest, tmp_path):
    _seed(lake, nessie_api, ingest, tmp_path, "schema.additive", None, ORDERS)
    source = write_parquet(tmp_path / "extra.parquet", {**ORDERS, "discount": [0.5] * 20})
    args = ingest("schema.additive", [source])

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["schema_changes"] == [
        {"change": "add_column", "column": "discount", "type": "double"}
    ]
    rows = read_on_ref(lake, nessie, args.branch, "schema.additive")
    assert rows.where("discount IS NULL").count() == 20  # the seed's rows
    assert rows.where("discount = 0.5").count() == 20


def test_missing_optional_column_becomes_null_and_int_widens(
    lake, nessie, nessie_api, ingest, tmp_path
):
    seed = {"id": pa.array(range(10), pa.int32()), "note": ["x"] * 10}
    _seed(lake, nessie_api, ingest, tmp_path, "schema.widen", None, seed)
    source = write_parquet(tmp_path / "wide.parquet", {"id": pa.array([10**12], pa.int64())})
    args = ingest("schema.widen", [source])

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["schema_changes"] == [
        {"change": "widen_type", "column": "id", "from": "int", "type": "bigint"}
    ]
    rows = read_on_ref(lake, nessie, args.branch, "schema.widen")
    assert rows.where("id = 1000000000000 AND note IS NULL").count() == 1


def test_type_change_is_rejected(lake, nessie_api, ingest, tmp_path):
    _seed(lake, nessie_api, ingest, tmp_path, "schema.retype", None, ORDERS)
    source = write_parquet(
        tmp_path / "retyped.parquet", {**ORDERS, "amount": [str(a) for a in ORDERS["amount"]]}
    )
    report = run_ingest(lake, ingest("schema.retype", [source]))

    assert report["outcome"] == "rejected"
    assert "'amount' is string in the file but double in the table" in report["reason"]


def test_missing_required_column_is_rejected(lake, nessie_api, ingest, tmp_path):
    config = """
schema:
  - {name: order_id, type: bigint, required: true}
  - {name: status, type: string}
"""
    seed = {"order_id": list(range(5)), "status": ["NEW"] * 5}
    _seed(lake, nessie_api, ingest, tmp_path, "schema.required", config, seed)
    source = write_parquet(tmp_path / "noid.parquet", {"status": ["NEW"] * 3})
    report = run_ingest(lake, ingest("schema.required", [source], config=config))

    assert report["outcome"] == "rejected"
    assert "required column 'order_id' is missing" in report["reason"]


def test_required_column_with_nulls_is_rejected_with_the_column_named(
    lake, nessie_api, ingest, tmp_path
):
    config = "schema:\n  - {name: order_id, type: bigint, required: true}\n"
    source = write_parquet(tmp_path / "nullid.parquet", {"order_id": [1, None, 3]})
    args = ingest("schema.required_nulls", [source], config=config)
    report = run_ingest(lake, args)

    assert report["outcome"] == "rejected"
    assert "required column 'order_id' has null values" in report["reason"]
    assert "schema.required_nulls" not in nessie_api.table_keys("main")


# --- input the job cannot read ---------------------------------------------------------------


def _corrupt(path: Path) -> None:
    path.write_bytes(b"PAR1" + b"\x00garbage-not-a-footer" * 10 + b"PAR1")


def _zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


def _csv(path: Path) -> None:
    path.write_text("order_id,status\n1,NEW\n2,PAID\n")


@pytest.mark.parametrize(
    ("make_file", "expected"),
    [
        (_corrupt, "cannot read the parquet footer/schema"),
        (_zero_bytes, "is empty (0 bytes)"),
        (
            _csv,
            "bad.parquet does not start and end with the parquet magic bytes PAR1 (is it a "
            "CSV or another format renamed .parquet?",
        ),
    ],
    ids=["corrupt", "zero-bytes", "csv-named-parquet"],
)
def test_unreadable_files_are_rejected_and_main_exits_zero(
    lake, nessie_api, ingest, tmp_path, make_file, expected
):
    path = tmp_path / "bad.parquet"
    make_file(path)
    args = ingest("bad.files", [path.as_uri()])
    main_before = nessie_api.ref("main")["hash"]

    code = main(args.to_args())

    assert code == 0
    report = _read_report(args)
    assert report["outcome"] == "rejected"
    assert report["reason_code"] == "unreadable_input"
    assert expected in report["reason"]
    assert nessie_api.ref("main")["hash"] == main_before
    assert nessie_api.ref(args.branch)["hash"] == main_before


def test_nested_type_the_table_cannot_take_is_rejected(lake, nessie_api, ingest, tmp_path):
    _seed(
        lake, nessie_api, ingest, tmp_path, "bad.nested", None, {"id": [1, 2], "tags": ["a", "b"]}
    )
    source = write_parquet(
        tmp_path / "nested.parquet",
        {"id": [3], "tags": pa.array([["x", "y"]], pa.list_(pa.string()))},
    )
    args = ingest("bad.nested", [source])
    code = main(args.to_args())

    assert code == 0
    report = _read_report(args)
    assert report["outcome"] == "rejected"
    assert "'tags' is array<string> in the file but string in the table" in report["reason"]


def test_config_error_is_reported_before_anything_is_written(lake, nessie_api, ingest, tmp_path):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    config = "checks:\n  - {kind: not_null, column: no_such_column}\n"
    args = ingest("sales.misconfigured", [source], config=config)
    before = nessie_api.ref(args.branch)["hash"]

    report = run_ingest(lake, args)

    assert report["outcome"] == "rejected"
    assert report["reason_code"] == "config_error"
    assert "'no_such_column' is not in the table" in report["reason"]
    assert nessie_api.ref(args.branch)["hash"] == before


def test_main_exits_non_zero_only_when_no_report_could_be_written(lake, ingest, tmp_path):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    args = ingest("sales.noreport", [source])
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    code = main(replace(args, report_uri=(blocker / "report.json").as_uri()).to_args())
    assert code == 1


def test_invalid_table_identifier_is_rejected(lake, ingest, tmp_path):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    args = ingest("sales.ok", [source])
    bad = type(args)(**{**args.__dict__, "table": "sales.orders; DROP TABLE x"})
    report = run_ingest(lake, bad)
    assert report["outcome"] == "rejected"
    assert report["reason_code"] == "invalid_argument"


def test_file_with_zero_rows_fails_the_row_count_default(lake, nessie, ingest, tmp_path):
    schema = pa.schema([("order_id", pa.int64()), ("status", pa.string())])
    source = write_parquet(
        tmp_path / "empty-rows.parquet",
        pa.table(
            {"order_id": pa.array([], pa.int64()), "status": pa.array([], pa.string())},
            schema=schema,
        ),
    )
    report = run_ingest(lake, ingest("sales.zero_rows", [source]))

    assert report["outcome"] == "failed"
    check = _check(report, "row_count")
    assert (check["status"], check["observed"]) == ("failed", 0)
    assert report["rows_written"] == 0


def test_range_metrics_cannot_settle_goes_to_one_scan_pass(lake, ingest, tmp_path):
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)  # amount 1..20
    config = SCAN_CHECKS + "  - {kind: range, column: amount, min: 5}\n"
    args = ingest("sales.straddle", [source], config=config)

    report = run_ingest(lake, args)

    check = _check(report, "amount_range")
    assert (check["status"], check["violations"], check["settled_by"]) == ("failed", 4, "scan")
    assert sorted(s["amount"] for s in check["samples"]) == [1.0, 2.0, 3.0, 4.0]
    assert _check(report, "email_regex")["settled_by"] == "write"
    groups = job_group_ids(args.ingest_id)
    one_pass = _one_aggregation_jobs(
        lake, f"`wap_{args.ingest_id[:8]}`.sales.straddle", "max(amount)"
    )
    assert len(_jobs(lake, groups["scan"])) == one_pass
