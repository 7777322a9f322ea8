"""The Iceberg runtime the job runs with on EMR: the upstream jar the tests use, found at synth."""

from __future__ import annotations

import sys
import types
import zipfile

import pytest

from infra import bundling


def test_runtime_jar_has_nessie_and_hadoop_file_io_but_not_the_sdk_s3fileio_needs():
    """Why the lake catalog uses HadoopFileIO: S3FileIO's classes ship without AWS SDK v2."""
    names = set(zipfile.ZipFile(bundling.iceberg_runtime_jar()).namelist())
    assert "org/apache/iceberg/nessie/NessieCatalog.class" in names
    assert "org/apache/iceberg/hadoop/HadoopFileIO.class" in names
    assert "org/apache/iceberg/aws/s3/S3FileIO.class" in names
    assert not [n for n in names if n.startswith("software/amazon/awssdk/")]


def test_missing_wheel_fails_the_synth_with_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "snowpark_connect_deps_iceberg", None)
    with pytest.raises(bundling.BundlingError, match=r"snowpark-connect-deps-iceberg==1\.0\.2"):
        bundling.iceberg_runtime_jar()


def test_wheel_without_the_jar_fails_the_synth_naming_the_jar(monkeypatch, tmp_path):
    (tmp_path / "jars").mkdir()
    fake = types.ModuleType("snowpark_connect_deps_iceberg")
    fake.__file__ = str(tmp_path / "__init__.py")
    monkeypatch.setitem(sys.modules, "snowpark_connect_deps_iceberg", fake)
    with pytest.raises(
        bundling.BundlingError, match=r"iceberg-spark-runtime-3\.5_2\.12-1\.10\.2\.jar"
    ):
        bundling.iceberg_runtime_jar()
