"""CSV and JSON Lines sources, gzip or not (contracts/formats.py): the trigger takes a file
by its table's `format:` or its extension and refuses one whose bytes disagree, before
any branch or job, saying what to do. The stand-in job stands for the Spark job."""

from __future__ import annotations

import gzip
from typing import Any

from tests.fixtures.local_stack import fake_parquet, record_for_key, wait_for_key
from tests.fixtures.standin_job import standin_job

CONFIGS = {
    # `format:` makes any name of the table a CSV; a gzip one when it ends in .gz.
    "fmt.typed": "format: csv\nschema:\n  - {name: id, type: bigint}\n",
    "fmt.broken": "format: xlsx\n",
}


def _stack(make_stack, nessie, tmp_path, calls: list[dict[str, Any]] | None = None):
    for table, config in CONFIGS.items():
        (tmp_path / f"{table}.yaml").write_text(config)
    return make_stack(job=standin_job(nessie.api_v1, calls), tables_dir=tmp_path)


BAD = {
    "fmt/orders/renamed.csv": (fake_parquet("p"), ["not a csv file", "is a parquet file"]),
    "fmt/orders/array.jsonl": (
        b'[{"id": 1}, {"id": 2}]\n',
        ["JSON array", "one JSON object per line"],
    ),
    "fmt/orders/binary.csv": (b"id,amount\n\x00\x01\x02\x03\n", ["binary data"]),
    "fmt/orders/fake.csv.gz": (b"id,amount\n1,2.5\n", ["not a gzip file"]),
    "fmt/orders/notes.txt": (
        b"id\n1\n",
        ["unsupported file type 'notes.txt'", ".csv.gz", ".jsonl", "format:"],
    ),
    # A config the job would refuse keeps its own path: the file is refused for it.
    "fmt/broken/export.txt": (b"id\n1\n", ["format must be one of parquet, csv, jsonl"]),
}


def test_a_file_whose_bytes_do_not_match_its_format_is_rejected_with_what_to_do(
    make_stack, nessie, slack, tmp_path
):
    stack = _stack(make_stack, nessie, tmp_path)
    for key, (body, _) in BAD.items():
        stack.drop_file(key, body)
    stack.wait_idle()

    for key, (body, fragments) in BAD.items():
        record = record_for_key(stack, key)
        assert record is not None and record.status == "REJECTED", (key, record)
        for fragment in fragments:
            assert fragment in record.error, (key, record.error)
        kept = stack.client("s3").get_object(Bucket=stack.settings.source_bucket, Key=key)
        assert kept["Body"].read() == body
    assert stack.emr.started_runs == []
    assert len(slack.messages) == len(BAD)


def test_csv_and_json_lines_pass_the_trigger_and_are_staged_under_their_own_name(
    make_stack, nessie, slack, tmp_path
):
    calls: list[dict[str, Any]] = []
    stack = _stack(make_stack, nessie, tmp_path, calls)
    good = {
        "fmt/plain/orders.csv": b"\xef\xbb\xbfid,amount\n1,2.5\n",
        "fmt/packed/orders.csv.gz": gzip.compress(b"id,amount\n1,2.5\n"),
        "fmt/lines/events.ndjson.gz": gzip.compress(b'{"id": 1}\n{"id": 2}\n'),
        "fmt/typed/export.txt": b"id\n1\n",
        "fmt/typed/export-2.dat.gz": gzip.compress(b"id\n2\n"),
    }
    for key, body in good.items():
        stack.drop_file(key, body)
    records = [wait_for_key(stack, key) for key in good]
    stack.wait_idle()

    assert [r.status for r in records] == ["PUBLISHED"] * len(good), stack.describe()
    read = {uri.rsplit("/", 1)[-1] for call in calls for uri in call["sources"]}
    assert read == {key.rsplit("/", 1)[-1] for key in good}  # the job sees `.csv.gz`
    staged = stack.client("s3")
    for record, (key, body) in zip(records, good.items(), strict=True):
        assert record.staged_uri.endswith(f"/{record.ingest_id}/{key.rsplit('/', 1)[-1]}")
        bucket, staged_key = record.staged_uri[5:].split("/", 1)
        assert staged.get_object(Bucket=bucket, Key=staged_key)["Body"].read() == body
