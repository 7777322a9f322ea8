"""Schema policy decisions on Spark schemas (no data, no catalog)."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from spark_jobs.errors import SchemaPolicyError
from spark_jobs.schema_policy import plan_schema

TABLE = T.StructType(
    [
        T.StructField("id", T.LongType(), False),
        T.StructField("amount", T.FloatType(), True),
        T.StructField("price", T.DecimalType(10, 2), True),
        T.StructField("note", T.StringType(), True),
    ]
)


def _file(*fields: tuple[str, T.DataType]) -> T.StructType:
    return T.StructType([T.StructField(name, type_, True) for name, type_ in fields])


SAME = _file(
    ("id", T.LongType()),
    ("amount", T.FloatType()),
    ("price", T.DecimalType(10, 2)),
    ("note", T.StringType()),
)


@pytest.mark.parametrize("policy", ["strict", "additive", "any"])
def test_identical_schema_changes_nothing(policy):
    plan = plan_schema(TABLE, SAME, policy)
    assert plan.changes == [] and plan.target == TABLE and not plan.create


def test_strict_rejects_new_missing_and_retyped_columns_naming_each():
    file = _file(("id", T.IntegerType()), ("amount", T.FloatType()), ("extra", T.StringType()))
    with pytest.raises(SchemaPolicyError) as error:
        plan_schema(TABLE, file, "strict")
    message = str(error.value)
    for part in (
        "'price' is missing",
        "'note' is missing",
        "'extra' is new",
        "'id' is int in the file but bigint in the table",
    ):
        assert part in message


def test_additive_adds_new_columns_as_optional_and_fills_missing_optional_ones():
    file = _file(("id", T.LongType()), ("extra", T.IntegerType()))
    plan = plan_schema(TABLE, file, "additive")
    assert plan.changes == [{"change": "add_column", "column": "extra", "type": "int"}]
    assert [f.name for f in plan.target.fields] == ["id", "amount", "price", "note", "extra"]
    assert plan.target["extra"].nullable is True


@pytest.mark.parametrize(
    ("column", "file_type", "old", "new"),
    [
        ("amount", T.DoubleType(), "float", "double"),
        ("price", T.DecimalType(18, 2), "decimal(10,2)", "decimal(18,2)"),
    ],
)
def test_additive_widens_where_iceberg_allows(column, file_type, old, new):
    fields = [(f.name, file_type if f.name == column else f.dataType) for f in TABLE.fields]
    plan = plan_schema(TABLE, _file(*fields), "additive")
    assert plan.changes == [{"change": "widen_type", "column": column, "from": old, "type": new}]
    assert plan.target[column].dataType == file_type


@pytest.mark.parametrize(
    ("column", "file_type"),
    [
        ("price", T.DecimalType(12, 4)),  # scale change
        ("note", T.IntegerType()),
        ("amount", T.StringType()),
        ("id", T.DoubleType()),
        ("note", T.ArrayType(T.StringType())),
    ],
)
def test_type_changes_iceberg_cannot_make_are_rejected(column, file_type):
    fields = [(f.name, file_type if f.name == column else f.dataType) for f in TABLE.fields]
    for policy in ("additive", "any"):
        with pytest.raises(SchemaPolicyError, match=f"'{column}' is"):
            plan_schema(TABLE, _file(*fields), policy)


def test_narrower_file_types_are_cast_on_write_without_changing_the_table():
    file = _file(
        ("id", T.IntegerType()),
        ("amount", T.FloatType()),
        ("price", T.DecimalType(8, 2)),
        ("note", T.StringType()),
    )
    plan = plan_schema(TABLE, file, "additive")
    assert plan.changes == [] and plan.target == TABLE


def test_missing_required_column_rejected_by_additive_relaxed_by_any():
    file = _file(("amount", T.FloatType()))
    with pytest.raises(SchemaPolicyError, match="required column 'id' is missing"):
        plan_schema(TABLE, file, "additive")
    plan = plan_schema(TABLE, file, "any")
    assert plan.changes == [{"change": "make_optional", "column": "id"}]
    assert plan.target["id"].nullable is True


def test_case_only_difference_is_rejected():
    fields = [("ID" if f.name == "id" else f.name, f.dataType) for f in TABLE.fields]
    with pytest.raises(SchemaPolicyError, match="different case"):
        plan_schema(TABLE, _file(*fields), "any")


def test_new_table_takes_file_columns_as_optional():
    file = T.StructType([T.StructField("id", T.LongType(), False)])
    plan = plan_schema(None, file, "strict")
    assert plan.create is True
    assert plan.target == T.StructType([T.StructField("id", T.LongType(), True)])


def test_projection_casts_fills_and_orders(spark):
    file = _file(("note", T.StringType()), ("id", T.IntegerType()))
    plan = plan_schema(TABLE, file, "additive")
    frame = spark.createDataFrame([("x", 7)], file)
    row = frame.select(*plan.projection(file)).first()
    assert row.asDict() == {"id": 7, "amount": None, "price": None, "note": "x"}
    assert frame.select(*plan.projection(file)).schema["id"].dataType == T.LongType()
