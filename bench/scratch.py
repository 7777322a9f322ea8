"""A benchmark's own local stack over a scratch directory (a SparkSession and a Nessie
server, or the whole embedded stack), and what the benchmarks that run ingests on it
share: their client of its Nessie, waiting for their outcomes and reading their jobs'
timings."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contracts.catalog_tokens import CatalogCredentials

# A SparkSession lent by the caller (the test suite's smoke runs, `lend_spark`): benchmarks
# then run in it, in the JVM that is already up and warm, instead of starting their own.
_lent_spark: Any = None
# The benchmarks' own client of their Nessie (spark_and_catalog).
BENCH_CLIENT = "wap-bench"


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
def bench_spark(
    warehouse_uri: str,
    nessie_api: str | None,
    app_name: str,
    credentials: CatalogCredentials | None = None,
) -> Iterator[Any]:
    """A SparkSession whose `lake` catalog is on `nessie_api` (None: no catalog used), as
    the client of `credentials`: its own, stopped afterwards, or the lent one
    (`lend_spark`), its catalog restored."""
    from local.spark import build_local_spark
    from spark_jobs.conf import CATALOG, catalog_auth_conf, lake_catalog_conf

    if _lent_spark is None:
        # build_local_spark sets the catalog; only its client's credentials are added here.
        auth = catalog_auth_conf(credentials, f"spark.sql.catalog.{CATALOG}") if credentials else {}
        placeholder = "http://127.0.0.1:9/api/v2"  # never contacted: no catalog used
        spark = build_local_spark(
            warehouse_uri, nessie_api or placeholder, app_name=app_name, extra_conf=auth
        )
        try:
            yield spark
        finally:
            spark.stop()
        return
    if nessie_api is None:
        yield _lent_spark
        return
    conf = lake_catalog_conf(nessie_api, warehouse_uri, credentials=credentials)
    with _catalog_conf(_lent_spark, conf):
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


class Nessie:
    """A benchmark's Nessie, API v2 at `base`: branch, merge and delete (what publish
    does). `headers`: what each call adds (a token: a benchmark's own Nessie authenticates
    as the deployed one does)."""

    def __init__(self, base: str, headers: Callable[[], dict[str, str]] | None = None):
        self.base = base
        self.headers = headers or dict

    def _call(self, method: str, path: str, body=None) -> dict:
        request = urllib.request.Request(
            self.base + path,
            method=method,
            data=json.dumps(body).encode() if body else None,
            headers={"Content-Type": "application/json", **self.headers()},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
        return json.loads(text) if text else {}

    def ref(self, name: str) -> dict:
        return self._call("GET", f"/trees/{urllib.parse.quote(name, safe='')}")["reference"]

    def branch(self, name: str) -> None:
        query = urllib.parse.urlencode({"name": name, "type": "BRANCH"})
        self._call("POST", f"/trees?{query}", self.ref("main"))

    def publish(self, name: str, audited_hash: str) -> None:
        main = self.ref("main")
        self._call(
            "POST",
            f"/trees/main@{main['hash']}/history/merge",
            {"fromRefName": name, "fromHash": audited_hash},
        )
        self._call("DELETE", f"/trees/{name}@{self.ref(name)['hash']}")


@contextmanager
def spark_and_catalog(prefix: str, app_name: str) -> Iterator[tuple[Any, Nessie, Path]]:
    """A SparkSession (`bench_spark`) and a Nessie server of the benchmark's own over a
    fresh directory: (session, the benchmark's client of the server, directory); stopped
    and removed afterwards.

    The server authenticates and authorizes as every local one does: the session calls it
    as a client holding every role (as the test harness does: benchmarks create tables on
    main), the job's runs as the job, through the environment as the local EMR does."""
    from contracts.catalog_authorization import JOB, ROLES
    from local.nessie.runner import start_server

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    server = start_server(str(scratch / "nessie.db"))
    bench = server.idp.register(BENCH_CLIENT, ROLES)
    client = Nessie(server.api_v2, _bearer(server.idp))
    try:
        with (
            _environment(server.credentials(JOB).environment()),
            bench_spark(
                (scratch / "warehouse").as_uri(), server.api_v2, app_name, credentials=bench
            ) as spark,
        ):
            yield spark, client, scratch
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _bearer(idp: Any) -> Callable[[], dict[str, str]]:
    """Headers with a token of BENCH_CLIENT, renewed every five minutes (a benchmark's
    calls are timed: they must not each sign a token)."""
    issued: list[tuple[float, str]] = []

    def headers() -> dict[str, str]:
        if not issued or time.monotonic() - issued[0][0] > 300:
            issued[:] = [(time.monotonic(), idp.issue(BENCH_CLIENT))]
        return {"Authorization": f"Bearer {issued[0][1]}"}

    return headers


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in os.environ meanwhile (where the job's runs find their catalog client)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def local_lake(prefix: str, configs: dict[str, str]) -> Iterator[Any]:
    """The backend of an embedded stack over a fresh directory, which runs ingests for real
    (upload, trigger, state machine, Spark job, publish) and lets uploads create the tables
    they name. Its table configs are `configs` (a name under `tables/`: a table, or
    `datasets/<name>` -> YAML text), found through WAP_TABLES_DIR meanwhile. Stopped, the
    variable restored and the directory removed afterwards."""
    from wap.ops.backends import Target, open_backend
    from wap.runtime.embedded_stack import ENV_TABLES_DIR

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    tables = scratch / "tables"
    try:
        tables.mkdir()
        for name, text in configs.items():
            path = tables / f"{name}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        target = Target(home=str(scratch / "home"))
        with (
            _environment({ENV_TABLES_DIR: str(tables)}),
            open_backend(
                target, run_ingests=True, mutates=True, create=True, create_tables=True
            ) as backend,
        ):
            yield backend
    finally:
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
