"""The local SparkSession's driver JVM runs with the options the environment names."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from local.spark import ENV_JVM_OPTIONS, SESSION_WAREHOUSE
from tests.fixtures.suite_jvm import SUITE_JVM_OPTIONS, SUITE_SPARK_CONF


def test_the_suite_jvm_runs_with_its_options(spark):
    arguments = list(
        spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert set(SUITE_JVM_OPTIONS.split()) <= set(arguments), arguments
    assert "-Dlog4j2.level=WARN" in arguments


def test_the_suite_session_runs_with_its_settings(spark):
    for key, value in SUITE_SPARK_CONF.items():
        assert spark.conf.get(key) == value, key


def test_spark_s_own_warehouse_is_not_made_where_wap_runs(spark):
    """A `wap` command leaves no `spark-warehouse/` in the user's working folder."""
    where = urlparse(spark.conf.get("spark.sql.warehouse.dir"))
    assert (where.scheme, Path(where.path)) == ("file", SESSION_WAREHOUSE)


def test_the_options_come_from_the_environment(monkeypatch):
    from local import spark as local_spark

    monkeypatch.setenv(ENV_JVM_OPTIONS, " -XX:+UseSerialGC ")
    assert local_spark._driver_java_options() == "-Dlog4j2.level=WARN -XX:+UseSerialGC"
    monkeypatch.delenv(ENV_JVM_OPTIONS)
    assert local_spark._driver_java_options() == "-Dlog4j2.level=WARN"
