"""The Spark conf the job runs with, one definition for EMR Serverless and local runs.

`infra.compute` renders `job_spark_conf` into the job's `sparkSubmitParameters`;
`local.spark` builds the local SparkSession from the same function. Only the
locations differ: the jar (its S3 copy or the local file), Nessie and the warehouse.
Kept free of imports beyond the standard library: it ships in the job's zip too.
"""

from __future__ import annotations

CATALOG = "lake"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# The upstream runtime jar carries S3FileIO's classes but not the AWS SDK v2 they load;
# Hadoop's FileSystem is on every Spark classpath (EMRFS for s3:// on EMR, file:// locally).
HADOOP_FILE_IO = "org.apache.iceberg.hadoop.HadoopFileIO"
# Timestamps without a zone and date checks read the same on every machine.
SESSION_TIME_ZONE = "UTC"


def lake_catalog_conf(
    nessie_uri_v2: str, warehouse_uri: str, catalog: str = CATALOG, ref: str = "main"
) -> dict[str, str]:
    """Spark conf of an Iceberg catalog backed by Nessie (API v2 base URI)."""
    prefix = f"spark.sql.catalog.{catalog}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": "org.apache.iceberg.nessie.NessieCatalog",
        f"{prefix}.uri": nessie_uri_v2,
        f"{prefix}.ref": ref,
        f"{prefix}.warehouse": warehouse_uri,
        f"{prefix}.io-impl": HADOOP_FILE_IO,
        # Tables on a branch move under us (other runs, merges): never serve a stale copy.
        f"{prefix}.cache-enabled": "false",
    }


def job_spark_conf(
    *, iceberg_jar: str, nessie_uri_v2: str, warehouse_uri: str, catalog: str = CATALOG
) -> dict[str, str]:
    """Everything the job needs from Spark: the Iceberg jar alone, its extensions, the catalog."""
    return {
        # Only this jar: EMR Serverless adds its own Iceberg build only when spark.jars names it.
        "spark.jars": iceberg_jar,
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        "spark.sql.session.timeZone": SESSION_TIME_ZONE,
        **lake_catalog_conf(nessie_uri_v2, warehouse_uri, catalog=catalog),
    }


def spark_submit_parameters(conf: dict[str, str]) -> str:
    """EMR Serverless `sparkSubmitParameters`: one `--conf k=v` per entry."""
    for key, value in conf.items():
        if any(ch.isspace() for ch in f"{key}{value}"):
            # The service splits the parameters on whitespace, unquoted.
            raise ValueError(f"Spark conf {key}={value!r} contains whitespace")
    return " ".join(f"--conf {key}={value}" for key, value in conf.items())
