"""Shared fixtures: one SparkSession per test session, one Nessie server per module."""

from __future__ import annotations

import gc
import os

import pytest

from contracts.catalog_authorization import JOB

pytest_plugins = ["tests.plugins.xdist_support", "tests.plugins.file_order"]


def pytest_configure(config):
    """Subprocesses the tests start (`python -m bench --quick`, the demo) inherit the
    suite's JVM options (tests/fixtures/suite_jvm.py)."""
    from local.aws.botocore_data import share_botocore_data
    from local.spark import ENV_JVM_OPTIONS
    from tests.fixtures.suite_jvm import SUITE_JVM_OPTIONS

    os.environ.setdefault(ENV_JVM_OPTIONS, SUITE_JVM_OPTIONS)
    share_botocore_data()  # also what tests with mock_aws() but no local stack create
    # A test process holds millions of long-lived objects (botocore's models, moto's
    # backends, pyspark), which each full collection walks again: at Python's default
    # thresholds collecting took 18% of the CPU of the ledger and flow tests (6.6 of
    # 37.6 s), at these 5% (1.9 s). Cyclic garbage waits a little longer.
    gc.set_threshold(10_000, 20, 100)


def pytest_collection_modifyitems(config, items):
    """Tests marked `suite_end` judge what the whole run did: run them last."""
    items.sort(key=lambda item: item.get_closest_marker("suite_end") is not None)


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory) -> str:
    return tmp_path_factory.mktemp("warehouse").as_uri()


@pytest.fixture(scope="module")
def nessie(tmp_path_factory):
    """Our Nessie-compatible server on a free port with its own SQLite file."""
    from local.nessie.runner import start_server

    server = start_server(str(tmp_path_factory.mktemp("nessie") / "nessie.db"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark(warehouse):
    """The one SparkSession of the test run (JVM start-up is the expensive part)."""
    from local.spark import build_local_spark
    from tests.fixtures.suite_jvm import SUITE_SPARK_CONF

    # The module's Nessie URI is set by `lake` below; this placeholder is never contacted.
    session = build_local_spark(
        warehouse, "http://127.0.0.1:9/api/v2", app_name="wap-tests", extra_conf=SUITE_SPARK_CONF
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def lake(spark, nessie):
    """Point the `lake` catalog template at this module's Nessie server, as the harness.

    Per-run catalogs are copies of `spark.sql.catalog.lake.*` made when a run
    starts, so changing the template between modules is safe. The job's runs call
    Nessie as wap-job: its client is in the process environment, where the job reads
    it (spark_jobs/catalog.py), as the local EMR stand-in sets it.
    """
    from spark_jobs.conf import catalog_auth_conf
    from tests.fixtures.catalog_auth import harness_credentials

    spark.conf.set("spark.sql.catalog.lake.uri", nessie.api_v2)
    harness = catalog_auth_conf(harness_credentials(nessie), "spark.sql.catalog.lake")
    for key, value in harness.items():
        spark.conf.set(key, value)
    job_env = nessie.credentials(JOB).environment()
    saved = {name: os.environ.get(name) for name in job_env}
    os.environ.update(job_env)
    # Spark caches catalog instances by name: drop them so `lake` reconnects to this server.
    spark._jsparkSession.sessionState().catalogManager().reset()
    yield spark
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
