"""Column metrics of the data files one snapshot added, read on the driver through py4j.

Iceberg keeps per-file record counts, null/NaN counts and lower/upper bounds in the
manifests, so many checks are settled without reading a single data file. Bounds are
only trusted for types Iceberg stores exactly (numbers, dates): string and binary
bounds are truncated (16 chars by default), so they are never used.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

EXACT_BOUND_TYPES = {"integer", "long", "float", "double", "decimal", "date", "timestamp"}
EPOCH = dt.date(1970, 1, 1)


@dataclass
class ColumnStats:
    """Merged metrics of one top-level column over the added files (None = unknown)."""

    null_count: int | None = 0
    nan_count: int | None = 0
    lower: Any = None
    upper: Any = None
    bounds_known: bool = True


@dataclass
class SnapshotStats:
    """What the manifests say about the rows one snapshot added."""

    record_count: int
    file_count: int
    columns: dict[str, ColumnStats]


def load_iceberg_table(spark, name: str):
    """The Java Iceberg `Table` behind a Spark table name (quoted multi-part)."""
    return spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, name)


def snapshot_stats(spark, table, snapshot_id: int,
                   columns: set[str] | None = None) -> SnapshotStats:
    """Merge the metrics of the data files `snapshot_id` added, per top-level column.

    `columns`: only these (the checked ones); every py4j call costs, tables are wide.
    """
    jvm = spark._jvm
    fields = {}
    for field in table.schema().columns():
        name = field.name()
        if columns is None or name in columns:
            type_ = field.type()
            fields[field.fieldId()] = (name, type_, type_.typeId().toString().lower())
    conversions = jvm.org.apache.iceberg.types.Conversions
    stats = {name: ColumnStats() for name, _, _ in fields.values()}
    records = files = 0
    for data_file in table.snapshot(snapshot_id).addedDataFiles(table.io()):
        files += 1
        rows = data_file.recordCount()
        records += rows
        if not fields:
            continue
        nulls, nans = data_file.nullValueCounts(), data_file.nanValueCounts()
        lowers, uppers = data_file.lowerBounds(), data_file.upperBounds()
        for field_id, (name, type_, type_name) in fields.items():
            col = stats[name]
            null_count = _get(nulls, field_id)
            col.null_count = _add(col.null_count, null_count)
            if type_name in ("float", "double"):
                col.nan_count = _add(col.nan_count, _get(nans, field_id))
            if type_name not in EXACT_BOUND_TYPES:
                col.bounds_known = False
                continue
            if null_count == rows:
                continue  # an all-null file has no bounds and needs none
            low, high = _get(lowers, field_id), _get(uppers, field_id)
            if low is None or high is None:
                col.bounds_known = False
                continue
            low = _to_python(conversions.fromByteBuffer(type_, low), type_name)
            high = _to_python(conversions.fromByteBuffer(type_, high), type_name)
            col.lower = low if col.lower is None else min(col.lower, low)
            col.upper = high if col.upper is None else max(col.upper, high)
    return SnapshotStats(record_count=records, file_count=files, columns=stats)


def _get(java_map, key: int):
    return None if java_map is None else java_map.get(key)


def _add(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + int(value)


def _to_python(value: Any, type_name: str) -> Any:
    if type_name == "date":
        return EPOCH + dt.timedelta(days=int(value))
    if type_name == "decimal":
        return Decimal(str(value))
    if type_name == "timestamp":
        # Micros since the epoch; compared as UTC (the session time zone of our jobs).
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))
    return value
