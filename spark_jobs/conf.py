"""The Spark conf the job runs with, one definition for EMR Serverless and local runs.

`infra.compute` renders `job_spark_conf` into the job's `sparkSubmitParameters`;
`local.spark` builds the local SparkSession from the same function. Only the
locations differ: the jar (its S3 copy or the local file), Nessie and the warehouse.
Kept free of imports beyond the standard library: it ships in the job's zip too.
"""

from __future__ import annotations

from contracts.catalog_tokens import CatalogCredentials

CATALOG = "lake"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# The upstream runtime jar carries S3FileIO's classes but not the AWS SDK v2 they load;
# Hadoop's FileSystem is on every Spark classpath (EMRFS for s3:// on EMR, file:// locally).
HADOOP_FILE_IO = "org.apache.iceberg.hadoop.HadoopFileIO"
# Timestamps without a zone and date checks read the same on every machine.
SESSION_TIME_ZONE = "UTC"


# The Nessie client's OAuth2 keys as an Iceberg catalog takes them (Nessie's
# `nessie.authentication.*` without the `nessie.` prefix).
AUTH_TYPE = "authentication.type"
OAUTH2_TOKEN_ENDPOINT = "authentication.oauth2.token-endpoint"  # noqa: S105 - a key
OAUTH2_CLIENT_ID = "authentication.oauth2.client-id"
OAUTH2_CLIENT_SECRET = "authentication.oauth2.client-secret"  # noqa: S105 - a key's name


def catalog_auth_conf(credentials: CatalogCredentials, prefix: str) -> dict[str, str]:
    """Conf keys under `prefix` (`spark.sql.catalog.<name>`) that make its Nessie client
    fetch tokens by OAuth2 client credentials. Set at run time, never submitted: the job's
    arguments and submitted conf carry no secret."""
    if not credentials.client_secret:
        raise ValueError(f"client {credentials.client_id!r}: its secret was not read")
    return {
        f"{prefix}.{AUTH_TYPE}": "OAUTH2",
        f"{prefix}.{OAUTH2_TOKEN_ENDPOINT}": credentials.token_endpoint,
        f"{prefix}.{OAUTH2_CLIENT_ID}": credentials.client_id,
        f"{prefix}.{OAUTH2_CLIENT_SECRET}": credentials.client_secret,
    }


def lake_catalog_conf(
    nessie_uri_v2: str,
    warehouse_uri: str,
    catalog: str = CATALOG,
    ref: str = "main",
    credentials: CatalogCredentials | None = None,
) -> dict[str, str]:
    """Spark conf of an Iceberg catalog backed by Nessie (API v2 base URI), as the client of
    `credentials` when given (local sessions; the deployed job's conf has none)."""
    prefix = f"spark.sql.catalog.{catalog}"
    auth = catalog_auth_conf(credentials, prefix) if credentials is not None else {}
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.catalog-impl": "org.apache.iceberg.nessie.NessieCatalog",
        f"{prefix}.uri": nessie_uri_v2,
        f"{prefix}.ref": ref,
        f"{prefix}.warehouse": warehouse_uri,
        f"{prefix}.io-impl": HADOOP_FILE_IO,
        # Tables on a branch move under us (other runs, merges): never serve a stale copy.
        f"{prefix}.cache-enabled": "false",
        **auth,
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
