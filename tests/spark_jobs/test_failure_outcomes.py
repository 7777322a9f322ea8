"""Infrastructure failures are `error`, input failures `rejected`: the real job, real Spark,
our Nessie server made to refuse or vanish, sources and configs whose filesystem fails."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from contracts.table_config import TableConfigError as ContractTableConfigError
from local.nessie.exceptions import ReferenceConflictError
from spark_jobs import wap_job
from spark_jobs.catalog import nessie_branch_hash
from spark_jobs.conf import catalog_auth_conf
from spark_jobs.errors import (
    INFRASTRUCTURE,
    INPUT,
    CatalogError,
    InfrastructureError,
    TableConfigError,
    classify,
)
from spark_jobs.jvm import java_iterable
from spark_jobs.report import Report
from spark_jobs.wap_job import main, run_ingest
from tests.fixtures.catalog_auth import harness_credentials
from tests.fixtures.spark_files import write_parquet
from tests.spark_jobs.test_wap_job import ORDERS, _read_report

LAKE = "spark.sql.catalog.lake"
LAKE_URI = f"{LAKE}.uri"


def _assert_error(report: dict, *named: str) -> None:
    assert report["outcome"] == "error", report
    assert report["reason"].startswith("job error: ")
    for text in named:
        assert text in report["reason"], report["reason"]
    assert report["report_version"] == 1


@pytest.fixture
def dead_nessie_uri():
    """A Nessie API v2 URI on a port that refuses connections (bound, never listening)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/api/v2"
    sock.close()


@pytest.fixture
def seeded(lake, nessie, nessie_api, ingest, tmp_path):
    """Publish `ORDERS` as `table` on main, so a later ingest only appends to it."""

    def seed(table: str) -> None:
        args = ingest(table, [write_parquet(tmp_path / f"{table}-seed.parquet", ORDERS)])
        assert run_ingest(lake, args)["outcome"] == "passed"
        nessie_api.merge(args.branch)
        # Iceberg retries a refused commit with backoff (seconds): once is enough here.
        prefix = "spark.sql.catalog.outcomes_main"
        for key, value in {
            prefix: "org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.catalog-impl": "org.apache.iceberg.nessie.NessieCatalog",
            f"{prefix}.uri": nessie.api_v2,
            f"{prefix}.ref": "main",
            f"{prefix}.warehouse": lake.conf.get(f"{LAKE}.warehouse"),
            f"{prefix}.cache-enabled": "false",
            **catalog_auth_conf(harness_credentials(nessie), prefix),  # the harness's client
        }.items():
            lake.conf.set(key, value)
        lake.sql(
            f"ALTER TABLE outcomes_main.{table} "
            "SET TBLPROPERTIES ('commit.retry.num-retries' = '0')"
        )

    return seed


def _locked(*_args, **_kwargs):
    raise sqlite3.OperationalError("database is locked")  # the server answers 503


def _crash(*_args, **_kwargs):
    raise RuntimeError("disk on fire")  # the server answers 500


def _conflict(*_args, **_kwargs):
    raise ReferenceConflictError.unexpected_hash("x", "0" * 16, "1" * 16)  # 409


# --- Nessie refusing or unreachable ------------------------------------------------------------


@pytest.mark.parametrize(
    ("refuse", "named"),
    [
        (
            _locked,
            "HTTP/503): The repository is busy (database locked), retry later "
            "[NessieUnavailableException]",
        ),
        (_crash, "HTTP/500"),
        (_conflict, "[NessieReferenceConflictException]"),
    ],
    ids=["503", "500", "409-conflict"],
)
def test_nessie_refusing_the_append_commit_is_an_error(
    lake, nessie, nessie_api, ingest, seeded, tmp_path, monkeypatch, refuse, named
):
    seeded("down.append")
    source = write_parquet(tmp_path / "orders.parquet", ORDERS)
    args = ingest("down.append", [source])
    before = nessie_api.ref(args.branch)["hash"]
    monkeypatch.setattr(nessie.store, "commit", refuse)

    code = main(args.to_args())

    assert code == 0
    report = _read_report(args)
    _assert_error(report, "the rows could not be written", named)
    assert report["reason_code"] == "infrastructure_error"
    assert (report["rows_written"], report["branch_hash"]) == (0, None)
    monkeypatch.undo()
    assert nessie_api.ref(args.branch)["hash"] == before


def test_nessie_refusing_create_table_is_an_error_not_a_config_error(
    lake, nessie, ingest, seeded, tmp_path, monkeypatch
):
    seeded("down.seed")  # the namespace exists, so CREATE TABLE is the first commit
    args = ingest("down.created", [write_parquet(tmp_path / "orders.parquet", ORDERS)])
    monkeypatch.setattr(nessie.store, "commit", _locked)

    report = run_ingest(lake, args)

    _assert_error(report, "cannot create table down.created", "HTTP/503")
    assert report["reason_code"] == "infrastructure_error"


def test_unreachable_nessie_is_an_error(lake, ingest, tmp_path, dead_nessie_uri):
    args = ingest("down.unreachable", [write_parquet(tmp_path / "orders.parquet", ORDERS)])
    live = lake.conf.get(LAKE_URI)
    lake.conf.set(LAKE_URI, dead_nessie_uri)  # the run's catalog is a copy of `lake`
    try:
        report = run_ingest(lake, args)
    finally:
        lake.conf.set(LAKE_URI, live)

    _assert_error(report, dead_nessie_uri, "ConnectException")
    assert report["reason_code"] == "infrastructure_error"


def test_nessie_unreachable_for_the_branch_hash_is_an_error(
    lake, ingest, tmp_path, dead_nessie_uri, monkeypatch
):
    real = nessie_branch_hash

    def unreachable(conf, catalog, branch):
        return real(
            {**conf, f"spark.sql.catalog.{catalog}.uri": dead_nessie_uri},
            catalog,
            branch,
            timeout_s=5,
        )

    monkeypatch.setattr(wap_job, "nessie_branch_hash", unreachable)
    args = ingest("down.hash", [write_parquet(tmp_path / "orders.parquet", ORDERS)])

    report = run_ingest(lake, args)

    _assert_error(report, "cannot read the hash of branch", "Connection refused")
    assert report["reason_code"] == "catalog_error"


# --- sources and configs whose filesystem fails --------------------------------------------------


@pytest.mark.parametrize(
    ("make_uri", "named"),
    [
        (
            lambda tmp: "nosuchfs://bucket/sales/orders.parquet",
            'No FileSystem for scheme "nosuchfs"',
        ),
        # No hadoop-aws jar here: the FileSystem class for s3a:// is missing.
        (lambda tmp: "s3a://bucket/sales/orders.parquet", "[ClassNotFoundException]"),
        (lambda tmp: (tmp / "staged-then-gone.parquet").as_uri(), "does not exist"),
        (
            lambda tmp: (tmp.joinpath("empty-dir").mkdir() or tmp / "empty-dir").as_uri(),
            "contains no files",
        ),
    ],
    ids=["unknown-scheme", "missing-class", "missing-staged-file", "empty-directory"],
)
def test_source_whose_filesystem_fails_is_an_error(
    lake, nessie_api, ingest, tmp_path, make_uri, named
):
    uri = make_uri(tmp_path)
    args = ingest("down.source", [uri])

    code = main(args.to_args())

    assert code == 0
    report = _read_report(args)
    _assert_error(report, uri, named)
    assert report["reason_code"] == "infrastructure_error"


def test_table_config_that_cannot_be_read_is_an_error(lake, ingest, tmp_path):
    args = ingest("down.config", [write_parquet(tmp_path / "orders.parquet", ORDERS)])
    args = type(args)(
        **{**args.__dict__, "table_config_uri": "nosuchfs://artifacts/tables/down.config.yaml"}
    )
    report = run_ingest(lake, args)

    _assert_error(report, "cannot read the table config", 'No FileSystem for scheme "nosuchfs"')
    assert report["reason_code"] == "infrastructure_error"


# --- what the input decides stays rejected ------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "config", "reason"),
    [
        ("bad.yaml", "checks: [unclosed\n", "not valid YAML"),
        # Iceberg refuses day() on a double with a ValidationException at CREATE TABLE.
        (
            "bad.partitioning",
            "partition_by: ['day(amount)']\n",
            "Invalid source type double for transform: day",
        ),
    ],
)
def test_a_table_config_the_job_cannot_apply_is_rejected(
    lake, ingest, tmp_path, table, config, reason
):
    args = ingest(table, [write_parquet(tmp_path / "orders.parquet", ORDERS)], config=config)
    report = run_ingest(lake, args)
    assert (report["outcome"], report["reason_code"]) == ("rejected", "config_error")
    assert reason in report["reason"]


def test_corrupt_page_behind_a_valid_footer_is_rejected(lake, nessie_api, ingest, tmp_path):
    path = tmp_path / "bad-page.parquet"
    pq.write_table(pa.table(ORDERS), path, compression="NONE")
    data = bytearray(path.read_bytes())
    data[4:40] = b"\xff" * 36  # the first page header; magic bytes and footer stay intact
    path.write_bytes(bytes(data))
    args = ingest("bad.page", [path.as_uri()])

    report = run_ingest(lake, args)

    assert (report["outcome"], report["reason_code"]) == ("rejected", "unreadable_input")
    assert "can not read class org.apache.parquet.format.PageHeader" in report["reason"]
    assert (report["rows_written"], report["branch_hash"]) == (0, None)


def test_required_null_is_rejected_naming_the_column(lake, ingest, tmp_path):
    config = "schema:\n  - {name: order id, type: bigint, required: true}\n"
    source = write_parquet(tmp_path / "nulls.parquet", {"order id": [1, None, 3]})
    report = run_ingest(lake, ingest("bad.required", [source], config=config))

    assert (report["outcome"], report["reason_code"]) == ("rejected", "unreadable_input")
    assert "required column 'order id' has null values" in report["reason"]


# --- the audit ------------------------------------------------------------------------------------


def test_data_files_gone_before_the_audit_scan_is_an_error(lake, ingest, tmp_path, monkeypatch):
    real = wap_job.snapshot_stats

    def then_lose_the_data(spark, table, snapshot_id, *rest):
        stats = real(spark, table, snapshot_id, *rest)
        for task in java_iterable(table.snapshot(snapshot_id).addedDataFiles(table.io())):
            Path(str(task.location()).removeprefix("file:")).unlink()
        return stats

    monkeypatch.setattr(wap_job, "snapshot_stats", then_lose_the_data)
    config = "checks:\n  - {kind: unique, column: order_id}\n"  # always settled by the scan
    args = ingest("down.audit", [write_parquet(tmp_path / "orders.parquet", ORDERS)], config=config)

    report = run_ingest(lake, args)

    _assert_error(report, "not exist")
    assert report["rows_written"] == 20


# --- the classification itself ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (TableConfigError("bad"), INPUT),
        (ContractTableConfigError("bad"), INPUT),  # the config parser's (contracts/)
        (yaml.YAMLError("bad"), INPUT),
        (InfrastructureError("down"), INFRASTRUCTURE),
        (CatalogError("down"), INFRASTRUCTURE),
        (ConnectionRefusedError(111, "refused"), INFRASTRUCTURE),
        (TimeoutError("slow"), INFRASTRUCTURE),
        (RuntimeError("who knows"), INFRASTRUCTURE),
        (KeyError("bug"), INFRASTRUCTURE),
    ],
)
def test_python_causes_are_classified_by_type(exc, kind):
    assert classify(exc).kind == kind


def test_unknown_python_cause_is_an_error_in_the_report():
    report = Report(ingest_id="0" * 16, table="a.b", source_uris=[], branch="wap_x")
    report.fail(RuntimeError("who knows"))
    result = report.to_dict()
    assert (result["outcome"], result["reason_code"], result["reason"]) == (
        "error",
        "infrastructure_error",
        "job error: who knows",
    )
