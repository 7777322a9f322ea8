"""The Lambdas and the job read one table config with one parser (contracts/table_config.py):
a config the job would refuse is refused at once by the Lambdas, in the same words."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

URI = "s3://artifacts/tables/sales.orders.yaml"

BAD = {
    "unknown check kind": "checks:\n  - {kind: no_such_check, column: a}\n",
    "check option": "checks:\n  - {kind: regex, column: a}\n",
    "unknown key": "colums: []\n",
    "partitioning": "partition_by: ['fortnight(ts)']\n",
    "not YAML": "checks:\n  - name: x\n    kind: range\n   columns: [amount]\n",
    "not a mapping": "- just a list\n",
    "batch": "batch: {max_files: many}\n",
    "arrival": "arrival: sometimes\n",
    "maintenance": "maintenance: {target_file_size: huge}\n",
    "not UTF-8": b"checks: []\n# \xff\xfe\n",
    "too large": "# " + "x" * (1024 * 1024) + "\n",
    "format": "format: xlsx\n",
    "csv option": "csv: {seperator: ';'}\n",
    "csv delimiter": "csv: {delimiter: ';;'}\n",
    "csv encoding": "csv: {encoding: utf-16}\n",
    "csv section": "csv: semicolons\n",
    "parse option": "parse: {timestamp_format: ''}\n",
    "parse_errors max": "checks:\n  - {kind: parse_errors, max: -1}\n",
    "parse_errors column": "checks:\n  - {kind: parse_errors, column: a}\n",
}


@pytest.fixture
def lambda_reads(monkeypatch):
    """`table_intake` reading `data` as the table's config from S3."""
    from ingestion import aws
    from ingestion.batching import table_intake

    def intake(data: bytes):
        class S3:
            def get_object(self, Bucket, Key, Range=None):
                assert f"s3://{Bucket}/{Key}" == URI
                end = int(Range.rsplit("-", 1)[1]) + 1 if Range else None
                return {"Body": io.BytesIO(data[:end])}

        monkeypatch.setattr(aws, "client", lambda service: S3())
        return table_intake(SimpleNamespace(table_config_uri=lambda table: URI), "sales.orders")

    return intake


@pytest.fixture
def job_reads(monkeypatch):
    """The job's verdict on `data` as the table's config: (outcome, reason_code, reason),
    or the config when it loads."""
    from spark_jobs import hadoop_fs, wap_job
    from spark_jobs.errors import TooLargeError
    from spark_jobs.report import Report

    def verdict(data: bytes):
        def read_bytes(spark, uri, max_bytes):
            if len(data) > max_bytes:
                raise TooLargeError(f"{uri} is {len(data)} bytes, more than {max_bytes}")
            return data

        monkeypatch.setattr(hadoop_fs, "exists", lambda spark, uri: True)
        monkeypatch.setattr(hadoop_fs, "read_bytes", read_bytes)
        try:
            return wap_job.load_table_config(None, URI, "sales.orders")
        except Exception as exc:
            report = Report(
                ingest_id="0123456789abcdef",
                table="sales.orders",
                source_uris=["s3://x/a.parquet"],
                branch="b",
            )
            report.fail(exc)
            return report.outcome, report.reason_code, report.reason

    return verdict


@pytest.mark.parametrize("bad", BAD.values(), ids=list(BAD))
def test_a_config_the_job_refuses_is_refused_by_the_lambdas_in_the_same_words(
    bad, lambda_reads, job_reads
):
    data = bad if isinstance(bad, bytes) else bad.encode()
    outcome, reason_code, reason = job_reads(data)
    assert (outcome, reason_code) == ("rejected", "config_error")
    assert reason.startswith(URI)

    intake = lambda_reads(data)
    assert intake.config_error == reason
    assert intake.limits.max_files == 1  # meanwhile, one file per run


def test_both_take_a_good_config_and_its_batch_settings(lambda_reads, job_reads):
    data = (
        b"batch: {max_files: 3, max_bytes: 1MB}\narrival: marker\n"
        b"checks:\n  - {kind: not_null, column: id}\n"
    )
    config = job_reads(data)
    intake = lambda_reads(data)
    assert intake.config_error is None
    assert (intake.limits, intake.arrival) == (config.batch, config.arrival)
    assert (config.batch.max_files, config.arrival) == (3, "marker")


@pytest.mark.parametrize(
    ("bad", "fragments"),
    [
        ("format: xlsx\n", ["format must be one of parquet, csv, jsonl", "'xlsx'"]),
        ("csv: {seperator: ';'}\n", ["unknown option(s) ['seperator']", "delimiter"]),
        ("csv: {delimiter: ';;'}\n", ["delimiter must be one character", "\\t"]),
        ("csv: {encoding: utf-16}\n", ["encoding must be utf-8 or latin-1", "'utf-16'"]),
        ("csv: {delimiter: '\"'}\n", ["cannot be the quote"]),
        ("csv: {header: 'yes'}\n", ["header must be true or false"]),
        ("parse: {time_zone: 3}\n", ["time_zone must be a non-empty string"]),
        (
            "checks:\n  - {kind: parse_errors, max: -1}\n",
            ["parse_errors max must be a non-negative integer"],
        ),
    ],
)
def test_a_bad_format_section_is_refused_saying_what_is_allowed(bad, fragments, lambda_reads):
    reason = lambda_reads(bad.encode()).config_error
    assert reason is not None and reason.startswith(URI)
    for fragment in fragments:
        assert fragment in reason, reason


def test_both_take_the_format_sections(job_reads):
    import yaml

    from contracts.table_config import CsvOptions, ParseOptions, parse_table_config_text

    data = (
        "format: csv\ncsv: {delimiter: ';', encoding: latin-1, header: false}\n"
        "parse: {timestamp_format: 'dd.MM.yyyy HH:mm', time_zone: Europe/Berlin}\n"
        "checks:\n  - {kind: parse_errors, max: 5, severity: warn}\n"
    )
    config = job_reads(data.encode())
    assert config == parse_table_config_text(data, URI, yaml=yaml)
    assert config.format == "csv"
    assert config.csv == CsvOptions(header=False, delimiter=";", encoding="ISO-8859-1")
    assert config.parse == ParseOptions(
        timestamp_format="dd.MM.yyyy HH:mm", time_zone="Europe/Berlin"
    )
    [check] = config.checks
    assert (check.kind, check.params.get("max"), check.severity) == ("parse_errors", 5, "warn")


def test_both_take_the_maintenance_section(lambda_reads, job_reads):
    data = b"maintenance: {target_file_size: 64MiB, min_files: 3, retention: 2d, grace: 6h}\n"
    config = job_reads(data)
    assert lambda_reads(data).config_error is None
    assert (
        config.maintenance.target_file_size,
        config.maintenance.min_files,
        config.maintenance.retention,
        config.maintenance.grace,
    ) == (64 * 1024 * 1024, 3, 2 * 86400, 6 * 3600)
