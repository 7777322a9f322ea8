"""A local SparkSession wired like EMR Serverless: Iceberg + NessieCatalog as `lake`."""

from __future__ import annotations

import os
from pathlib import Path

ICEBERG_JAR_NAME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
DEFAULT_CATALOG = "lake"


def iceberg_runtime_jar() -> Path:
    """Path of the Iceberg Spark runtime jar shipped by `snowpark-connect-deps-iceberg`."""
    import snowpark_connect_deps_iceberg

    jar = Path(snowpark_connect_deps_iceberg.__file__).parent / "jars" / ICEBERG_JAR_NAME
    if not jar.is_file():
        raise FileNotFoundError(
            f"{jar} is missing: install snowpark-connect-deps-iceberg==1.0.2 (see requirements.txt)"
        )
    return jar


def lake_catalog_conf(nessie_uri_v2: str, warehouse_uri: str, catalog: str = DEFAULT_CATALOG,
                      ref: str = "main") -> dict[str, str]:
    """Spark conf of an Iceberg catalog backed by Nessie (the same keys EMR gets)."""
    prefix = f"spark.sql.catalog.{catalog}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": "org.apache.iceberg.nessie.NessieCatalog",
        f"{prefix}.uri": nessie_uri_v2,
        f"{prefix}.ref": ref,
        f"{prefix}.warehouse": warehouse_uri,
        # Tables on a branch move under us (other runs, merges): never serve a stale copy.
        f"{prefix}.cache-enabled": "false",
    }


def build_local_spark(warehouse_uri: str, nessie_uri_v2: str, *, app_name: str = "wap-local",
                      cores: int = 2, driver_memory: str = "4g",
                      extra_conf: dict[str, str] | None = None):
    """Create (or return) the process-wide local SparkSession with the `lake` catalog."""
    from pyspark.sql import SparkSession

    # Keep the driver on loopback: the machines here (and laptops on VPNs) resolve the
    # hostname to an address other processes should not be talking to.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.jars", str(iceberg_runtime_jar()))
        .config("spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(max(cores * 2, 2)))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=WARN")
    )
    for key, value in {**lake_catalog_conf(nessie_uri_v2, warehouse_uri),
                       **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
