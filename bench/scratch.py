"""A scratch directory for a benchmark's own local stack, and what the benchmarks that run
ingests on it share: waiting for their outcomes and reading their jobs' timings."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def spark_and_catalog(prefix: str, app_name: str) -> Iterator[tuple[Any, str, Path]]:
    """A SparkSession and a Nessie server of the benchmark's own over a fresh directory:
    (session, the server's API v2 URI, directory); stopped and removed afterwards. The
    server does not authenticate: the benchmarks measure the job, not authentication."""
    from local.nessie.runner import start_server
    from local.spark import build_local_spark

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    server = start_server(str(scratch / "nessie.db"), secure=False)
    spark = build_local_spark((scratch / "warehouse").as_uri(), server.api_v2, app_name=app_name)
    try:
        yield spark, server.api_v2, scratch
    finally:
        spark.stop()
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def scratch_with_tables(prefix: str, configs: dict[str, str]) -> Iterator[Path]:
    """A fresh directory whose `tables/` holds `configs` (table -> YAML text), named by
    WAP_TABLES_DIR meanwhile; afterwards the variable is restored and the directory gone."""
    from wap.runtime.embedded_stack import ENV_TABLES_DIR

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    tables = scratch / "tables"
    tables.mkdir()
    for table, text in configs.items():
        (tables / f"{table}.yaml").write_text(text)
    previous = os.environ.get(ENV_TABLES_DIR)
    os.environ[ENV_TABLES_DIR] = str(tables)
    try:
        yield scratch
    finally:
        if previous is None:
            os.environ.pop(ENV_TABLES_DIR, None)
        else:
            os.environ[ENV_TABLES_DIR] = previous
        shutil.rmtree(scratch, ignore_errors=True)


def wait_final(
    backend: Any,
    ids: Sequence[str],
    timeout: float,
    *,
    poll: float,
    what: str,
    started: float | None = None,
) -> list[Any]:
    """The ledger records of `ids` once every one has a final status; TimeoutError (naming
    `what`) when some are not final `timeout` seconds after `started` (time.perf_counter(),
    default now)."""
    from ingestion import constants as c

    deadline = (time.perf_counter() if started is None else started) + timeout
    while True:
        records = [backend.ledger.get_ingest(i) for i in ids]
        if all(r is not None and r.status in c.TERMINAL_STATUSES for r in records):
            return records
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{what}: not final after {timeout:.0f} s")
        time.sleep(poll)


def job_timings(backend: Any, record: Any) -> dict[str, Any]:
    """The timings of the job run's report (`total_s` its own total seconds); {} when the
    record names no report or it is absent."""
    body = backend.read_object(record.report_uri) if record.report_uri else None
    return json.loads(body)["timings"] if body else {}
