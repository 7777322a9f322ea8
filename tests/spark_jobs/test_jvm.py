"""py4j collection helpers: same elements as iteration, without a Java exception."""

from __future__ import annotations

import pyspark.errors.exceptions.captured as captured
import pytest

from spark_jobs.jvm import java_iterable, java_list, java_map


@pytest.fixture
def java_exceptions(monkeypatch) -> list[str]:
    """Names of the Java exceptions PySpark converted while the test ran."""
    seen: list[str] = []
    convert = captured.convert_exception

    def counting(java_exception):
        seen.append(java_exception.getClass().getName())
        return convert(java_exception)

    monkeypatch.setattr(captured, "convert_exception", counting)
    return seen


def _array_list(spark, values):
    items = spark._jvm.java.util.ArrayList()
    for value in values:
        items.add(value)
    return items


def test_plain_iteration_of_a_java_list_throws_at_its_end(spark, java_exceptions):
    # Why the helpers exist: this is what they avoid.
    assert list(_array_list(spark, ["a", "b"])) == ["a", "b"]
    assert java_exceptions == ["java.util.NoSuchElementException"]


def test_java_list_reads_lists_and_arrays_without_exceptions(spark, java_exceptions):
    assert java_list(_array_list(spark, ["a", "b", "c"])) == ["a", "b", "c"]
    assert java_list(_array_list(spark, [])) == []
    assert java_list(spark._jvm.java.lang.String("x,y").split(",")) == ["x", "y"]
    assert java_exceptions == []


def test_java_iterable_walks_any_iterable(spark, java_exceptions):
    items = spark._jvm.java.util.TreeSet(_array_list(spark, [3, 1, 2]))
    assert java_iterable(items) == [1, 2, 3]
    assert java_iterable(_array_list(spark, [])) == []
    assert java_exceptions == []


def test_java_map_fetches_only_the_kept_keys(spark, java_exceptions):
    mapping = spark._jvm.java.util.HashMap()
    for key, value in {"spark.a": "1", "spark.a.b": "2", "other": "3"}.items():
        mapping.put(key, value)
    assert java_map(mapping) == {"spark.a": "1", "spark.a.b": "2", "other": "3"}
    assert java_map(mapping, lambda key: key.startswith("spark.")) == {
        "spark.a": "1",
        "spark.a.b": "2",
    }
    assert java_exceptions == []
