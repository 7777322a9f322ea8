"""Compare the file's schema with the table's and decide under the schema policy.

`strict` rejects any difference; `additive` adds new columns (as optional), fills
missing optional columns with null and widens types where Iceberg allows it
(int->long, float->double, decimal precision up); `any` also relaxes a missing
required column to optional. Type changes Iceberg cannot make are rejected by all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.errors import SchemaPolicyError
from spark_jobs.identifiers import quote

# Iceberg has no 8/16-bit integers: tables store them as int, so they are the same type.
_INT_LIKE = (T.ByteType, T.ShortType, T.IntegerType)


@dataclass
class SchemaPlan:
    """What the write does to the table and how the file's rows are shaped for it."""

    target: T.StructType
    changes: list[dict] = field(default_factory=list)
    create: bool = False

    def projection(self, file_schema: T.StructType) -> list[Column]:
        """Select list turning file rows into target rows (casts, nulls, order)."""
        present = {f.name: f.dataType for f in file_schema.fields}
        columns = []
        for target in self.target.fields:
            if target.name not in present:
                columns.append(F.lit(None).cast(target.dataType).alias(target.name))
            elif present[target.name].simpleString() == target.dataType.simpleString():
                columns.append(F.col(quote(target.name)))
            else:
                columns.append(F.col(quote(target.name)).cast(target.dataType).alias(target.name))
        return columns


def plan_schema(table: T.StructType | None, file: T.StructType, policy: str) -> SchemaPlan:
    """Decide how `file` is written into `table` (None: the table is created from it).

    Raises SchemaPolicyError naming every column that violates the policy.
    """
    if table is None:
        return _new_table(file)
    decisions = _decide_columns(table, file, policy)
    problems = [d.problem for d in decisions if d.problem is not None]
    if problems:
        raise SchemaPolicyError(
            f"schema policy {policy!r} rejects the file: " + "; ".join(problems)
        )
    return SchemaPlan(
        target=T.StructType([d.field for d in decisions if d.field is not None]),
        changes=[d.change for d in decisions if d.change is not None],
    )


@dataclass(frozen=True)
class _Decision:
    """One column's fate: the field the target keeps, the change that makes to the table,
    or why the policy rejects the file (then nothing is written, so no field is needed)."""

    field: T.StructField | None = None
    change: dict | None = None
    problem: str | None = None


def _new_table(file: T.StructType) -> SchemaPlan:
    # New tables take the file's columns as optional: a later file may lack values.
    target = T.StructType([T.StructField(f.name, f.dataType, True) for f in file.fields])
    return SchemaPlan(
        target=target,
        create=True,
        changes=[
            {"change": "create_table", "column": f.name, "type": f.dataType.simpleString()}
            for f in file.fields
        ],
    )


def _decide_columns(table: T.StructType, file: T.StructType, policy: str) -> list[_Decision]:
    """A decision per table column (table order), then per column new to the table (file
    order): the target's column order."""
    table_fields = {f.name: f for f in table.fields}
    file_fields = {f.name: f for f in file.fields}
    file_lower = {name.lower() for name in file_fields}
    table_lower = {name.lower() for name in table_fields}
    kept = [
        _shared_column(tfield, file_fields[name], policy)
        if name in file_fields
        else _missing_column(tfield, file_lower, policy)
        for name, tfield in table_fields.items()
    ]
    # A name differing from a table column only in case is reported as that column's problem.
    added = [
        _new_column(ffield, policy)
        for name, ffield in file_fields.items()
        if name.lower() not in table_lower
    ]
    return kept + added


def _missing_column(tfield: T.StructField, file_lower: set[str], policy: str) -> _Decision:
    name = tfield.name
    if name.lower() in file_lower:
        return _Decision(problem=f"column {name!r} appears in the file with different case")
    if policy == "strict":
        return _Decision(problem=f"column {name!r} is missing from the file")
    if tfield.nullable:
        return _Decision(tfield)
    if policy == "additive":
        return _Decision(problem=f"required column {name!r} is missing from the file")
    return _Decision(
        T.StructField(name, tfield.dataType, True),
        change={"change": "make_optional", "column": name},
    )


def _shared_column(tfield: T.StructField, ffield: T.StructField, policy: str) -> _Decision:
    name, have, got = tfield.name, tfield.dataType, ffield.dataType
    if _same(got, have):
        return _Decision(tfield)
    mismatch = (
        f"column {name!r} is {got.simpleString()} in the file "
        f"but {have.simpleString()} in the table"
    )
    if policy == "strict":
        return _Decision(problem=mismatch)
    if _widens(got, have):
        # The file is narrower than the table: cast on write, the table stays.
        return _Decision(tfield)
    if _widens(have, got):
        return _Decision(
            T.StructField(name, got, tfield.nullable),
            change={
                "change": "widen_type",
                "column": name,
                "from": have.simpleString(),
                "type": got.simpleString(),
            },
        )
    return _Decision(problem=f"{mismatch}; Iceberg cannot change that type")


def _new_column(ffield: T.StructField, policy: str) -> _Decision:
    if policy == "strict":
        return _Decision(problem=f"column {ffield.name!r} is new (not in the table)")
    return _Decision(
        T.StructField(ffield.name, ffield.dataType, True),
        change={
            "change": "add_column",
            "column": ffield.name,
            "type": ffield.dataType.simpleString(),
        },
    )


def _same(a: T.DataType, b: T.DataType) -> bool:
    if isinstance(a, _INT_LIKE) and isinstance(b, _INT_LIKE):
        return True
    # Nested nullability differences are not type changes (parquet writers disagree on them).
    return a.simpleString() == b.simpleString()


def _widens(narrow: T.DataType, wide: T.DataType) -> bool:
    """True when Iceberg can promote a `narrow` column to `wide`."""
    if isinstance(narrow, _INT_LIKE) and isinstance(wide, T.LongType):
        return True
    if isinstance(narrow, T.FloatType) and isinstance(wide, T.DoubleType):
        return True
    if isinstance(narrow, T.DecimalType) and isinstance(wide, T.DecimalType):
        return narrow.scale == wide.scale and wide.precision > narrow.precision
    return False
