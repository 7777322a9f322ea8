"""The job's arguments (contracts/job_args.py): rendered and parsed by one model."""

from __future__ import annotations

import pytest

from contracts.job_args import (
    CompactionArgs,
    JobArgs,
    JobArgsError,
    SmokeArgs,
    parse_run_args,
)

INGEST = JobArgs(
    sources=["s3://stage/a.csv", "s3://stage/b.csv"],
    table="sales.orders",
    branch="wap_sales_orders_20261122T101500_01234567",
    ingest_id="0123456789abcdef",
    report_uri="s3://reports/0123456789abcdef.json",
    table_config_uri="s3://artifacts/tables/sales.orders.yaml",
    source_origins=("s3://src/a.csv?versionId=1", "s3://src/b.csv?versionId=2"),
)
DATASET = JobArgs(
    sources=["s3://stage/o.csv", "s3://stage/l.csv"],
    table="shop.orders",
    branch="wap_b",
    ingest_id="0123456789abcdef",
    report_uri="s3://r/x.json",
    table_config_uri="s3://artifacts/tables/",
    all_or_nothing=True,
    dataset_config_uri="s3://artifacts/frozen/shop.yaml",
    source_tables=("shop.orders", "shop.lines"),
    catalog="other",
)
# What an ingest requires besides --source, and what a compaction requires.
INGEST_REQUIRED = ["--table", "a.b", "--branch", "b", "--ingest-id", "i", "--report-uri", "u"]
COMPACT_REQUIRED = [
    "--compact",
    "--table",
    "a.b",
    "--branch",
    "b",
    "--run-id",
    "r",
    "--report-uri",
    "u",
]


@pytest.mark.parametrize(
    "args",
    [
        INGEST,
        DATASET,
        JobArgs(
            sources=["file:///a.parquet"],
            table="a.b",
            branch="br",
            ingest_id="x",
            report_uri="file:///r.json",
        ),
        SmokeArgs(branch="wap_doctor_1", report_uri="s3://r/doctor.json"),
        CompactionArgs(
            table="a.b",
            branch="wap_c",
            run_id="0123456789abcdef",
            report_uri="s3://r/c.json",
            target_file_size=1024,
            min_files=2,
        ),
    ],
    ids=["ingest", "dataset", "minimal", "smoke", "compaction"],
)
def test_arguments_round_trip(args):
    assert parse_run_args(args.to_args()) == args
    assert type(args).from_args(args.to_args()) == args


def test_an_ingest_renders_as_emr_has_always_received_it():
    assert INGEST.to_args() == [
        "--source",
        "s3://stage/a.csv",
        "--source",
        "s3://stage/b.csv",
        "--source-origin",
        "s3://src/a.csv?versionId=1",
        "--source-origin",
        "s3://src/b.csv?versionId=2",
        "--table",
        "sales.orders",
        "--branch",
        "wap_sales_orders_20261122T101500_01234567",
        "--ingest-id",
        "0123456789abcdef",
        "--report-uri",
        "s3://reports/0123456789abcdef.json",
        "--table-config-uri",
        "s3://artifacts/tables/sales.orders.yaml",
    ]
    assert DATASET.to_args()[4:8] == [
        "--source-table",
        "shop.orders",
        "--source-table",
        "shop.lines",
    ]
    assert DATASET.to_args()[-3:] == ["--all-or-nothing", "--catalog", "other"]
    assert SmokeArgs(branch="b", report_uri="u").to_args() == [
        "--smoke",
        "--branch",
        "b",
        "--report-uri",
        "u",
    ]
    assert CompactionArgs(table="a.b", branch="b", run_id="r", report_uri="u").to_args() == [
        *COMPACT_REQUIRED,
        "--target-file-size",
        str(128 * 1024 * 1024),
        "--min-files",
        "5",
    ]


def test_the_origin_of_a_source():
    assert INGEST.origin("s3://stage/b.csv") == "s3://src/b.csv?versionId=2"
    assert DATASET.origin("s3://stage/o.csv") == "s3://stage/o.csv"  # no origins: itself
    assert INGEST.run_catalog == "wap_01234567"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (INGEST_REQUIRED, "--source"),
        (["--source", "s", "--branch", "b", "--ingest-id", "i", "--report-uri", "u"], "--table"),
        (["--source", "s", "--table", "a.b", "--branch", "b", "--ingest-id", "i"], "--report-uri"),
        (
            ["--source", "s", "--source", "t", "--source-origin", "o", *INGEST_REQUIRED],
            "--source-origin",
        ),
        (["--source", "s", "--source-table", "a.b", *INGEST_REQUIRED], "--dataset-config-uri"),
        (["--source", "s", *INGEST_REQUIRED, "--tabel-config-uri", "x"], "--tabel-config-uri"),
        (["--source", "s", "--table"], "--table"),
        (["--smoke", "--branch", "b"], "--report-uri"),
        ([*COMPACT_REQUIRED, "--min-files", "many"], "--min-files"),
        ([*COMPACT_REQUIRED, "--target-file-size", "0"], "--target-file-size"),
    ],
    ids=[
        "no-source",
        "no-table",
        "no-report",
        "origins-unpaired",
        "tables-without-config",
        "unknown",
        "no-value",
        "smoke-no-report",
        "compact-not-a-number",
        "compact-zero",
    ],
)
def test_malformed_arguments_are_refused_naming_the_argument(argv, named):
    with pytest.raises(JobArgsError, match=named):
        parse_run_args(argv)


def test_a_model_refuses_what_its_parser_refuses():
    with pytest.raises(JobArgsError, match="--source-origin"):
        JobArgs(
            sources=["a", "b"],
            table="a.b",
            branch="b",
            ingest_id="i",
            report_uri="u",
            source_origins=("o",),
        )
    with pytest.raises(JobArgsError, match="--source"):
        JobArgs(sources=[], table="a.b", branch="b", ingest_id="i", report_uri="u")


SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:WapIngestIdentityWapJob-AbCdEf"


@pytest.mark.parametrize(
    "args",
    [
        JobArgs(
            sources=["s3://s/a.csv"],
            table="a.b",
            branch="wap_b",
            ingest_id="0123456789abcdef",
            report_uri="s3://r/x.json",
            catalog_credentials_secret=SECRET,
        ),
        SmokeArgs(
            branch="wap-doctor-1", report_uri="s3://r/d.json", catalog_credentials_secret=SECRET
        ),
        CompactionArgs(
            table="a.b",
            branch="wap_c",
            run_id="0123456789abcdef",
            report_uri="s3://r/c.json",
            catalog_credentials_secret=SECRET,
        ),
    ],
    ids=["ingest", "smoke", "compaction"],
)
def test_every_kind_of_run_names_its_catalog_secret_by_arn_only(args):
    rendered = args.to_args()
    assert rendered[-2:] == ["--catalog-credentials-secret", SECRET]
    assert parse_run_args(rendered) == args
