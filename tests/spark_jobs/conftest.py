"""Fixtures of the WAP job tests: a tiny Nessie v2 client (stdlib, independent of the
job's code) and unique branches/ingest ids (files: tests/fixtures/spark_files.py)."""

from __future__ import annotations

import itertools
import json
import urllib.parse
import urllib.request
import uuid

import pytest

from spark_jobs.wap_job import JobArgs, run_ingest
from tests.fixtures.catalog_auth import harness_headers
from tests.fixtures.spark_files import write_file

_counter = itertools.count()


class NessieV2:
    """Just enough of Nessie REST API v2 to set up and inspect a test."""

    def __init__(self, base: str, headers: dict[str, str] | None = None):
        self.base = base.rstrip("/")
        self.headers = dict(headers or {})  # the harness's token (tests/fixtures/catalog_auth.py)

    def _call(self, method: str, path: str, body=None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                **self.headers,
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else {}

    def ref(self, name: str) -> dict:
        return self._call("GET", f"/trees/{urllib.parse.quote(name, safe='')}")["reference"]

    def create_branch(self, name: str, source: str = "main") -> str:
        origin = self.ref(source)
        query = urllib.parse.urlencode({"name": name, "type": "BRANCH"})
        return self._call("POST", f"/trees?{query}", origin)["reference"]["hash"]

    def merge(self, branch: str, into: str = "main") -> dict:
        target, source = self.ref(into), self.ref(branch)
        return self._call(
            "POST",
            f"/trees/{into}@{target['hash']}/history/merge",
            {"fromRefName": branch, "fromHash": source["hash"]},
        )

    def table_keys(self, ref: str) -> set[str]:
        entries = self._call("GET", f"/trees/{urllib.parse.quote(ref, safe='')}/entries")
        return {
            ".".join(entry["name"]["elements"])
            for entry in entries.get("entries", [])
            if entry.get("type") == "ICEBERG_TABLE"
        }


@pytest.fixture(scope="module")
def nessie_api(nessie) -> NessieV2:
    return NessieV2(nessie.api_v2, harness_headers(nessie))


@pytest.fixture
def ingest(lake, nessie_api, tmp_path):
    """Factory: a fresh branch + ingest id for `table`, returning JobArgs."""

    def make(
        table: str,
        sources: list[str],
        config: str | None = None,
        branch: str | None = None,
        ingest_id: str | None = None,
    ) -> JobArgs:
        ingest_id = ingest_id or uuid.uuid4().hex[:16]
        if branch is None:
            branch = f"wap_{table.replace('.', '_')}_t{next(_counter)}_{ingest_id[:8]}"
            nessie_api.create_branch(branch)
        config_uri = None
        if config is not None:
            config_path = tmp_path / f"{table}.{ingest_id}.yaml"
            config_path.write_text(config)
            config_uri = config_path.as_uri()
        return JobArgs(
            sources=sources,
            table=table,
            branch=branch,
            ingest_id=ingest_id,
            report_uri=(tmp_path / f"report-{ingest_id}.json").as_uri(),
            table_config_uri=config_uri,
        )

    return make


@pytest.fixture
def ingest_file(lake, ingest, tmp_path):
    """Factory: write `data` to one file `name`, run the job on it into `table` (with the
    table config `config`) and return the job's report."""

    def run(table: str, name: str, data: bytes | str, config: str | None = None) -> dict:
        return run_ingest(lake, ingest(table, [write_file(tmp_path, name, data)], config=config))

    return run
