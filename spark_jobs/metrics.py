"""Column metrics of the data files one snapshot added, read on the driver through py4j.

Iceberg keeps per-file record counts, null/NaN counts and lower/upper bounds in the
manifests, so many checks are settled without reading a single data file. Bounds are
only trusted for types Iceberg stores exactly (numbers, dates): string and binary
bounds are truncated (16 chars by default), so they are never used.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from spark_jobs.jvm import java_iterable, java_list

log = logging.getLogger(__name__)
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
    #: Every distinct non-null value, from parquet dictionaries (None = unknown).
    values: set | None = None


@dataclass
class SnapshotStats:
    """What the manifests say about the rows one snapshot added."""

    record_count: int
    file_count: int
    columns: dict[str, ColumnStats]


def load_iceberg_table(spark, name: str):
    """The Java Iceberg `Table` behind a Spark table name (quoted multi-part), from any
    thread.

    A Python thread's py4j calls run in a JVM thread of their own, which has no active
    session; Spark's own API sets it, this call does not. A catalog the session had not
    loaded yet was then not found (`lake.ns` read as a namespace of spark_catalog): the
    history read, in its thread, failed so on a fresh process's first job."""
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    return spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, name
    )


def snapshot_stats(
    spark,
    table,
    snapshot_id: int,
    columns: set[str] | None = None,
    dictionary_columns: set[str] = frozenset(),
) -> SnapshotStats:
    """Merge the metrics of the data files `snapshot_id` added, per top-level column.

    `columns`: only these (the checked ones); every py4j call costs, tables are wide.
    `dictionary_columns`: string columns whose distinct values to read from the files'
    parquet dictionary pages (a few KB each, no data pages).
    """
    jvm = spark._jvm
    fields = {}
    for field in java_list(table.schema().columns()):
        name = field.name()
        if columns is None or name in columns:
            type_ = field.type()
            fields[field.fieldId()] = (name, type_, type_.typeId().toString().lower())
    conversions = jvm.org.apache.iceberg.types.Conversions
    stats = {name: ColumnStats() for name, _, _ in fields.values()}
    records = files = 0
    distinct: dict[str, set | None] = {name: set() for name in dictionary_columns}
    for data_file in java_iterable(table.snapshot(snapshot_id).addedDataFiles(table.io())):
        files += 1
        if distinct and any(v is not None for v in distinct.values()):
            _add_dictionary_values(spark, str(data_file.location()), distinct)
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
    for name, values in distinct.items():
        if name in stats:
            stats[name].values = values
    return SnapshotStats(record_count=records, file_count=files, columns=stats)


def _add_dictionary_values(spark, location: str, distinct: dict[str, set | None]) -> None:
    """Add each wanted column's dictionary values of one parquet file to `distinct`.

    A column becomes unknown (None) unless every data page of every row group is
    dictionary-encoded: only then is the dictionary the complete set of values.
    """
    jvm = spark._jvm
    try:
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
            jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
                jvm.org.apache.hadoop.fs.Path(location), spark._jsc.hadoopConfiguration()
            )
        )
    except Exception:
        log.warning("cannot open %s for its dictionaries", location, exc_info=True)
        distinct.update(dict.fromkeys(distinct))
        return
    try:
        footer = reader.getFooter()
        # Only top-level primitive columns: their leaf index is fixed for every row group.
        leaves = {}
        for index, descriptor in enumerate(
            java_list(footer.getFileMetaData().getSchema().getColumns())
        ):
            path = list(descriptor.getPath())
            if len(path) == 1 and path[0] in distinct:
                leaves[index] = (path[0], descriptor)
        for name in distinct.keys() - {name for name, _ in leaves.values()}:
            distinct[name] = None  # not a flat column of this file
        for block in java_list(footer.getBlocks()):
            dictionaries = reader.getNextDictionaryReader()
            chunks = block.getColumns()
            for index, (name, descriptor) in leaves.items():
                if distinct[name] is not None:
                    distinct[name] = _chunk_values(
                        chunks.get(index), descriptor, dictionaries, distinct[name]
                    )
    except Exception:
        log.warning("cannot read the dictionaries of %s", location, exc_info=True)
        distinct.update(dict.fromkeys(distinct))
    finally:
        reader.close()


def _chunk_values(chunk, descriptor, dictionaries, values: set) -> set | None:
    chunk_stats = chunk.getStatistics()
    if (
        chunk_stats is not None
        and chunk_stats.isNumNullsSet()
        and chunk_stats.getNumNulls() == chunk.getValueCount()
    ):
        return values  # only nulls in this row group
    encodings = chunk.getEncodingStats()
    if encodings is None or encodings.hasNonDictionaryEncodedPages():
        return None
    page = dictionaries.readDictionaryPage(descriptor)
    if page is None:
        return None
    dictionary = page.getEncoding().initDictionary(descriptor, page)
    values.update(
        dictionary.decodeToBinary(i).toStringUsingUTF8() for i in range(dictionary.getMaxId() + 1)
    )
    return values


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
