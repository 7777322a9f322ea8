"""A local SparkSession wired like EMR Serverless: Iceberg + NessieCatalog as `lake`.

What the deployed job gets from its `sparkSubmitParameters` comes from the same
definition (`spark_jobs.conf.job_spark_conf`), with the same Iceberg jar as a local file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Re-exported: the tests and the CLI configure catalogs through these names.
from infra.bundling import iceberg_runtime_jar
from local.jvm_names import remember_jvm_names
from spark_jobs.conf import job_spark_conf, lake_catalog_conf

__all__ = ["ENV_JVM_OPTIONS", "build_local_spark", "iceberg_runtime_jar", "lake_catalog_conf"]

# Extra options for the local driver JVM, e.g. `-XX:TieredStopAtLevel=1` where many short
# jobs run (the test suite sets it). They change how fast the JVM runs, never what Spark
# computes; the benchmarks run without them, as EMR does.
ENV_JVM_OPTIONS = "WAP_LOCAL_JVM_OPTIONS"
# Spark's own catalog (never used: tables live in `lake`) still makes its warehouse folder
# at start-up, by default `spark-warehouse/` in whatever folder `wap` was run from.
SESSION_WAREHOUSE = Path(tempfile.gettempdir()) / "wap-spark-warehouse"


def build_local_spark(
    warehouse_uri: str,
    nessie_uri_v2: str,
    *,
    app_name: str = "wap-local",
    cores: int = 2,
    driver_memory: str = "4g",
    extra_conf: dict[str, str] | None = None,
    jvm_output: int | None = None,
):
    """Create (or return) the process-wide local SparkSession with the `lake` catalog.

    `jvm_output`: a file descriptor for the JVM's stdout and stderr (log4j's console
    appender, Hadoop's warnings, Spark's start-up lines), instead of this process's own.
    """
    from pyspark.sql import SparkSession

    # Keep the driver on loopback: the machines here (and laptops on VPNs) resolve the
    # hostname to an address other processes should not be talking to.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(max(cores * 2, 2)))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", SESSION_WAREHOUSE.as_uri())
        .config("spark.driver.extraJavaOptions", _driver_java_options())
    )
    job_conf = job_spark_conf(
        iceberg_jar=str(iceberg_runtime_jar()),
        nessie_uri_v2=nessie_uri_v2,
        warehouse_uri=warehouse_uri,
    )
    for key, value in {**job_conf, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    if jvm_output is not None:
        _launch_jvm(builder, jvm_output)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    remember_jvm_names(spark._jvm)
    return spark


def _driver_java_options() -> str:
    extra = os.environ.get(ENV_JVM_OPTIONS, "").strip()
    return f"-Dlog4j2.level=WARN {extra}".strip()


def _launch_jvm(builder, output: int) -> None:
    """Start the py4j gateway (the JVM) with its output on `output`, as `getOrCreate` would
    start it (spark-submit with the builder's conf), unless one runs already."""
    from subprocess import STDOUT

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False)
    for key, value in builder._options.items():
        conf.set(key, value)
    gateway = launch_gateway(conf, popen_kwargs={"stdout": output, "stderr": STDOUT})
    SparkContext._ensure_initialized(gateway=gateway)
