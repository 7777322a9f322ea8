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
                columns.append(F.col(quote(target.name)).cast(target.dataType)
                               .alias(target.name))
        return columns


def plan_schema(table: T.StructType | None, file: T.StructType, policy: str) -> SchemaPlan:
    """Decide how `file` is written into `table` (None: the table is created from it).

    Raises SchemaPolicyError naming every column that violates the policy.
    """
    if table is None:
        # New tables take the file's columns as optional: a later file may lack values.
        target = T.StructType([T.StructField(f.name, f.dataType, True) for f in file.fields])
        return SchemaPlan(target=target, create=True,
                          changes=[{"change": "create_table", "column": f.name,
                                    "type": f.dataType.simpleString()} for f in file.fields])
    problems: list[str] = []
    changes: list[dict] = []
    table_fields = {f.name: f for f in table.fields}
    file_fields = {f.name: f for f in file.fields}
    lower_table = {name.lower(): name for name in table_fields}
    target_fields = []
    for name, tfield in table_fields.items():
        ffield = file_fields.get(name)
        if ffield is None:
            if name.lower() in {n.lower() for n in file_fields}:
                problems.append(f"column {name!r} appears in the file with different case")
            elif policy == "strict":
                problems.append(f"column {name!r} is missing from the file")
            elif not tfield.nullable and policy == "additive":
                problems.append(f"required column {name!r} is missing from the file")
            elif not tfield.nullable:
                changes.append({"change": "make_optional", "column": name})
                tfield = T.StructField(name, tfield.dataType, True)
            target_fields.append(tfield)
            continue
        if _same(ffield.dataType, tfield.dataType):
            target_fields.append(tfield)
            continue
        if policy == "strict":
            problems.append(f"column {name!r} is {ffield.dataType.simpleString()} in the file "
                            f"but {tfield.dataType.simpleString()} in the table")
        elif _widens(ffield.dataType, tfield.dataType):
            # The file is narrower than the table: cast on write, the table stays.
            pass
        elif _widens(tfield.dataType, ffield.dataType):
            changes.append({"change": "widen_type", "column": name,
                            "from": tfield.dataType.simpleString(),
                            "type": ffield.dataType.simpleString()})
            tfield = T.StructField(name, ffield.dataType, tfield.nullable)
        else:
            problems.append(f"column {name!r} is {ffield.dataType.simpleString()} in the file "
                            f"but {tfield.dataType.simpleString()} in the table; Iceberg "
                            "cannot change that type")
        target_fields.append(tfield)
    for name, ffield in file_fields.items():
        if name in table_fields or name.lower() in lower_table:
            continue
        if policy == "strict":
            problems.append(f"column {name!r} is new (not in the table)")
            continue
        changes.append({"change": "add_column", "column": name,
                        "type": ffield.dataType.simpleString()})
        target_fields.append(T.StructField(name, ffield.dataType, True))
    if problems:
        raise SchemaPolicyError(f"schema policy {policy!r} rejects the file: "
                                + "; ".join(problems))
    return SchemaPlan(target=T.StructType(target_fields), changes=changes)


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
