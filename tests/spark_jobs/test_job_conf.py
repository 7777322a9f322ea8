"""The local SparkSession runs with the job's Spark conf, and that conf's FileIO loads."""

from __future__ import annotations

import pytest
from pyspark.errors import IllegalArgumentException

from local.spark import iceberg_runtime_jar
from spark_jobs.conf import HADOOP_FILE_IO, job_spark_conf

S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"


def test_local_session_starts_with_the_conf_emr_gets(spark):
    expected = job_spark_conf(
        iceberg_jar=str(iceberg_runtime_jar()),
        nessie_uri_v2="<per module>",
        warehouse_uri="<per session>",
    )
    started_with = dict(spark.sparkContext.getConf().getAll())
    for key, value in expected.items():
        if not key.endswith((".uri", ".warehouse")):
            assert started_with.get(key) == value, key
    assert started_with["spark.sql.catalog.lake.io-impl"] == HADOOP_FILE_IO
    assert started_with["spark.sql.session.timeZone"] == "UTC"


def test_with_the_runtime_jar_hadoop_file_io_loads_and_s3_file_io_does_not(spark):
    jvm = spark._jvm
    hadoop_conf = spark._jsc.hadoopConfiguration()

    def load(impl: str):
        return jvm.org.apache.iceberg.CatalogUtil.loadFileIO(
            impl, jvm.java.util.HashMap(), hadoop_conf
        )

    assert load(HADOOP_FILE_IO).getClass().getName() == HADOOP_FILE_IO
    # The jar carries S3FileIO's classes, not the AWS SDK v2 they are written against.
    with pytest.raises(
        IllegalArgumentException, match=r"NoClassDefFoundError: software/amazon/awssdk/"
    ):
        load(S3_FILE_IO)
