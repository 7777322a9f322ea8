"""The local SparkSession's JVM view remembers what names resolve to (local/jvm_names.py)."""

from __future__ import annotations

import pytest
from py4j.java_gateway import JavaClass, JavaPackage
from py4j.protocol import Py4JError


@pytest.fixture
def round_trips(spark, monkeypatch) -> list[str]:
    """The reflection commands py4j sends to the JVM while a test runs."""
    client = spark._jvm._gateway_client
    sent: list[str] = []
    send = client.send_command

    def counting(command, *args, **kwargs):
        sent.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counting)
    return sent


def _lookups(sent: list[str]) -> list[str]:
    # py4j's "get unknown member" command: "r\nu\n<name>\n..." (REFLECTION, UNKNOWN).
    return [command.split("\n")[2] for command in sent if command.startswith("r\nu\n")]


def test_a_class_name_is_asked_of_the_jvm_once(spark, round_trips):
    first = spark._jvm.org.apache.iceberg.spark.Spark3Util
    again = spark._jvm.org.apache.iceberg.spark.Spark3Util
    assert isinstance(first, JavaClass) and again is first
    assert first._fqn == "org.apache.iceberg.spark.Spark3Util"
    # Each segment at most once (an earlier test may have resolved some already).
    asked = _lookups(round_trips)
    assert len(asked) == len(set(asked)) <= 5, asked


def test_pysparks_functions_resolve_once(spark, round_trips):
    from pyspark.sql import functions as F

    F.col("a")
    F.col("b")
    assert _lookups(round_trips).count("functions") <= 1


def test_packages_still_lead_to_classes_and_a_missing_name_still_fails(spark):
    package = spark._jvm.java.util
    assert isinstance(package, JavaPackage)
    assert list(package.ArrayList()) == []
    with pytest.raises(Py4JError):
        spark._jvm.java.util.ArrayList.noSuchMethod()
    # A name that is neither is answered as a package by py4j, never remembered as a class.
    assert isinstance(spark._jvm.no_such.thing, JavaPackage)


def _member_lookups(sent: list[str]) -> list[str]:
    # py4j's "get member" command: "r\nm\n<class>\n<name>\n..." (REFLECTION, MEMBER).
    return [".".join(c.split("\n")[2:4]) for c in sent if c.startswith("r\nm\n")]


def test_a_static_method_is_asked_once_a_static_field_every_time(spark, round_trips):
    integer = spark._jvm.java.lang.Integer
    assert integer.parseInt("42") == 42 and integer.parseInt("7") == 7
    assert integer.MAX_VALUE == 2**31 - 1 and integer.MAX_VALUE == 2**31 - 1
    asked = _member_lookups(round_trips)
    assert asked.count("java.lang.Integer.parseInt") <= 1, asked
    assert asked.count("java.lang.Integer.MAX_VALUE") == 2, asked
