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

# A SparkSession lent by the caller (the test suite's smoke runs, `lend_spark`): benchmarks
# then run in it, in the JVM that is already up and warm, instead of starting their own.
_lent_spark: Any = None


@contextmanager
def lend_spark(spark: Any) -> Iterator[None]:
    """Benchmarks started meanwhile run in `spark` and leave it running: its `lake` catalog
    points at each benchmark's own Nessie while that runs, and is restored afterwards. What
    they measure is then measured in a warm JVM, so only smoke runs should lend one."""
    global _lent_spark
    from wap.ops import backends

    previous, previous_backend = _lent_spark, backends.SPARK_SESSION
    _lent_spark = backends.SPARK_SESSION = spark
    try:
        yield
    finally:
        _lent_spark, backends.SPARK_SESSION = previous, previous_backend


@contextmanager
def bench_spark(warehouse_uri: str, nessie_api: str | None, app_name: str) -> Iterator[Any]:
    """A SparkSession whose `lake` catalog is on `nessie_api` (None: no catalog used): its
    own, stopped afterwards, or the lent one (`lend_spark`), its catalog restored."""
    from local.spark import build_local_spark

    if _lent_spark is None:
        spark = build_local_spark(
            warehouse_uri, nessie_api or "http://127.0.0.1:9/api/v2", app_name=app_name
        )
        try:
            yield spark
        finally:
            spark.stop()
        return
    if nessie_api is None:
        yield _lent_spark
        return
    from spark_jobs.conf import lake_catalog_conf

    with _catalog_conf(_lent_spark, lake_catalog_conf(nessie_api, warehouse_uri)):
        yield _lent_spark


@contextmanager
def _catalog_conf(spark: Any, conf: dict[str, str]) -> Iterator[None]:
    """The `lake` catalog's conf replaced by `conf` meanwhile (its other keys, such as the
    lender's credentials, unset), catalogs reconnected at both ends."""
    prefix = next(iter(conf))  # spark.sql.catalog.<name>, the catalog's class
    saved = {
        key: value
        for key, value in spark.sql("SET").collect()
        if key == prefix or key.startswith(prefix + ".")
    }

    def use(values: dict[str, str]) -> None:
        for key in saved.keys() - values.keys():
            spark.conf.unset(key)
        for key, value in values.items():
            spark.conf.set(key, value)
        # Spark caches catalog instances by name: drop them so `lake` reconnects.
        spark._jsparkSession.sessionState().catalogManager().reset()

    use(conf)
    try:
        yield
    finally:
        for key in conf.keys() - saved.keys():
            spark.conf.unset(key)
        use(saved)


@contextmanager
def spark_and_catalog(prefix: str, app_name: str) -> Iterator[tuple[Any, str, Path]]:
    """A SparkSession (`bench_spark`) and a Nessie server of the benchmark's own over a
    fresh directory: (session, the server's API v2 URI, directory); stopped and removed
    afterwards. The server does not authenticate: the benchmarks measure the job, not
    authentication."""
    from local.nessie.runner import start_server

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    server = start_server(str(scratch / "nessie.db"), secure=False)
    try:
        with bench_spark(
            (scratch / "warehouse").as_uri(), server.api_v2, app_name=app_name
        ) as spark:
            yield spark, server.api_v2, scratch
    finally:
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
