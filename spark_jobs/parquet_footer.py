"""What a parquet footer says that Spark cannot take, column by column.

Read only after Spark refused a file (its messages rarely name the column): parquet-mr,
on Spark's classpath, reads the footer on the driver.
"""

from __future__ import annotations

import re

from spark_jobs.hadoop_fs import literal_path

MAX_DECIMAL_PRECISION = 38
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*\d+\)")
READABLE_CODECS = frozenset({"UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD", "LZ4_RAW", "LZ4"})


def footer_problems(spark, uri: str) -> list[str]:
    """The columns (and codecs) of `uri` that Spark cannot read, each in a few words;
    [] when the footer itself cannot be read or shows none."""
    try:
        jvm = spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(literal_path(uri))
        conf = spark._jsc.hadoopConfiguration()
        input_file = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(path, conf)
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(input_file)
    except Exception:
        return []
    try:
        footer = reader.getFooter()
        schema = footer.getFileMetaData().getSchema()
        problems, names = [], []
        for index in range(schema.getFieldCount()):
            names.append(str(schema.getFieldName(index)))
        for name in sorted({name for name in names if names.count(name) > 1}):
            problems.append(f"column {name!r} appears {names.count(name)} times")
        for column in schema.getColumns():
            name = ".".join(str(part) for part in column.getPath())
            annotation = column.getPrimitiveType().getLogicalTypeAnnotation()
            logical = str(annotation) if annotation is not None else ""
            decimal = _DECIMAL.fullmatch(logical)
            if logical.startswith("TIMESTAMP(NANOS"):
                problems.append(f"column {name!r} is a nanosecond timestamp")
            elif logical.startswith("TIME("):
                problems.append(f"column {name!r} is a time of day ({logical})")
            elif decimal and int(decimal.group(1)) > MAX_DECIMAL_PRECISION:
                problems.append(f"column {name!r} is {logical.lower()}")
            elif logical in ("DATE",) or logical.startswith("TIMESTAMP("):
                problems.append(f"column {name!r} holds dates or timestamps")
        codecs = {
            str(chunk.getCodec().name())
            for block in footer.getBlocks()
            for chunk in block.getColumns()
        }
        problems += [
            f"compressed with {codec.lower()}"
            for codec in sorted(codecs)
            if codec not in READABLE_CODECS
        ]
        return problems
    except Exception:
        return []
    finally:
        reader.close()


def named_columns(spark, exc: BaseException, uris: list[str]) -> str:
    """` (file: column ... is ...)` for an input error Spark gave without naming them."""
    from spark_jobs.errors import classify

    verdict = classify(exc)
    if not verdict.is_input:
        return ""
    return explain(spark, uris, only_dates=verdict.cause == "INCONSISTENT_BEHAVIOR_CROSS_VERSION")


def explain(spark, uris: list[str], only_dates: bool = False) -> str:
    """` (file: problem; ...)` for the files whose footers show problems, else ''."""
    parts = []
    for uri in uris[:20]:
        problems = [
            p
            for p in footer_problems(spark, uri)
            if only_dates == p.endswith("holds dates or timestamps")
        ]
        if problems:
            parts.append(f"{uri.rsplit('/', 1)[-1]}: {', '.join(problems)}")
    return f" ({'; '.join(parts)})" if parts else ""
