"""CSV and JSON Lines sources: typed rows, and every row that does not parse accounted for.

Text values are parsed to the table's types (the table's schema, or the config's
`schema:` for a table this run creates; nothing is inferred). A row that does not parse
(a wrong number of fields, a value not of its column's type, invalid JSON, a JSON key
the schema does not have) is not written: its raw text is in the `PARSE_ERROR` column
of the rows `read_text` returns, so the write counts such rows in the same pass that
writes the others (`writer.append`), and the audit reports them (`parse_error_samples`)
with their file and line.

Spark converts only the columns a query reads, so a value that does not fit its type
is an error only when its column is read: every query that counts parse errors must
read every column (the write does; `every_column` makes an aggregation do).
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import re
import zlib
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from contracts.formats import (
    CSV,
    JSONL,
    PARQUET,
    UTF8_BOM,
    SourceFormat,
    format_of,
    unsupported_format_text,
)
from contracts.layout import table_config_key
from contracts.table_config import CsvOptions, ParseOptions
from spark_jobs import hadoop_fs
from spark_jobs.errors import InputRejectedError, TableConfigError, as_job_error, describe
from spark_jobs.identifiers import quote

log = logging.getLogger(__name__)
PARSE_ERROR = "__wap_parse_error"
REPLACED_TEXT = "__wap_replaced_text"
LINE_BREAK_TEXT = "__wap_line_break_text"
REPLACEMENT = "\ufffd"
# Samples of unparsable rows kept in the report (all of them are counted).
PARSE_ERROR_SAMPLES = 20
SAMPLE_TEXT = 500
HEADER_BYTES = 64 * 1024
# How far the failure path reads a file to number the lines of its samples.
LOCATE_MAX_BYTES = 1024**3
# How much of a file the stream checks (gzip, encoding) and the text readers (the line
# numbers of samples, the unclosed-quote scan) read per call to the JVM.
STREAM_CHUNK = 8 * 1024 * 1024
# Spark prunes `from_json` to the fields a query reads; a value of an unread field that
# does not fit its type would then not count as a parse error.
JSON_PRUNING_CONF = "spark.sql.optimizer.enableJsonExpressionOptimization"


@dataclass(frozen=True)
class SourceReader:
    """How one run reads its sources: each file's format (the config's `format:`, else
    its extension) and, for text, the options and the schema values are parsed to."""

    configured: str | None = None
    csv: CsvOptions = field(default_factory=CsvOptions)
    parse: ParseOptions = field(default_factory=ParseOptions)
    # The types of text values: None while the table has no schema (not created, none
    # declared), when a text source is refused (`text_schema`).
    schema: T.StructType | None = None
    table: str = "the table"
    config_name: str = table_config_key("<namespace>.<table>")
    # Each CSV's header columns, read once: a run reads a source more than once (the
    # plan, the strict write, the counting write, the per-file verdicts).
    headers: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)

    def by_format(self, files: list[str]) -> dict[str, list[str]]:
        """`files` grouped by the format each is read as (`parquet`, `csv`, `jsonl`)."""
        grouped: dict[str, list[str]] = {}
        for uri in files:
            grouped.setdefault(self.format(uri).kind, []).append(uri)
        return grouped

    def format(self, uri: str) -> SourceFormat:
        """The format `uri` is read as; InputRejectedError when it has none."""
        name = file_name(uri)
        found = format_of(name, self.configured)
        if found is None:
            raise InputRejectedError(unsupported_format_text(name))
        return found

    def text_schema(self, uri: str, fmt: SourceFormat) -> T.StructType:
        """The schema values of a text source parse to; InputRejectedError without one."""
        if self.schema is None or not self.schema.fields:
            raise InputRejectedError(
                f"{file_name(uri)} is {fmt.label}: its values need declared types, and "
                f"{self.table} has no schema yet (nothing is inferred). Declare its columns "
                f"under `schema:` in {self.config_name}, e.g.\n"
                "  schema:\n    - {name: id, type: bigint}\n"
                "    - {name: amount, type: 'decimal(10,2)'}"
            )
        return self.schema


def file_name(uri: str) -> str:
    """The last path segment of a URI."""
    return uri.rstrip("/").rsplit("/", 1)[-1]


def has_parse_errors_column(frame: DataFrame) -> bool:
    """True when `frame` was read from text sources (it carries `PARSE_ERROR`)."""
    return PARSE_ERROR in frame.columns


def data_schema(frame: DataFrame) -> T.StructType:
    """The frame's columns that go to the table (without `PARSE_ERROR`)."""
    return T.StructType([f for f in frame.schema.fields if f.name != PARSE_ERROR])


def parsed_rows(frame: DataFrame) -> DataFrame:
    """The rows that parsed, without `PARSE_ERROR` (the frame itself for parquet)."""
    if not has_parse_errors_column(frame):
        return frame
    return frame.where(F.col(PARSE_ERROR).isNull()).drop(PARSE_ERROR)


def parse_error_count() -> Column:
    """Aggregate: how many rows did not parse."""
    return F.count_if(F.col(PARSE_ERROR).isNotNull())


def replaced_text_count(frame: DataFrame) -> Column:
    """Aggregate: how many parsed rows hold U+FFFD in a string column, the character
    Spark's CSV reader puts in place of bytes its encoding does not allow (the one sign
    of them it leaves). Only then are the files' bytes checked (`encoding_error`)."""
    seen = F.lit(False)
    for f in frame.schema.fields:
        if isinstance(f.dataType, T.StringType) and f.name != PARSE_ERROR:
            seen = seen | F.col(quote(f.name)).contains(REPLACEMENT)
    if has_parse_errors_column(frame):
        seen = F.col(PARSE_ERROR).isNull() & seen
    return F.count_if(seen)


def line_break_count(frame: DataFrame) -> Column:
    """Aggregate: how many rows hold a line break in a string value (or in the raw text
    of a row that did not parse). Only then can a quoted value that is never closed
    have taken in the lines after it, and only then are the CSVs scanned
    (`unclosed_quote_error`). A line feed alone (it ends LF and CRLF lines): testing for
    a lone CR too cost another 4% of a clean CSV's write (bench.csv_bench, 1M rows), for
    files with classic-Mac line ends only."""
    seen = F.lit(False)
    for f in frame.schema.fields:
        if isinstance(f.dataType, T.StringType):
            value = F.col(quote(f.name))
            seen = seen | value.contains("\n")
    return F.count_if(seen)


def every_column(frame: DataFrame) -> Column:
    """An aggregate that reads every column of `frame`, so that Spark parses (and counts
    errors in) each value of a text source, however few columns the rest reads."""
    columns = [F.col(quote(name)) for name in frame.columns]
    return F.bit_xor(F.xxhash64(*columns))


def read_text(
    spark: SparkSession, reader: SourceReader, fmt_files: dict[str, list[str]]
) -> DataFrame:
    """The rows of CSV (`csv`) and JSON Lines (`jsonl`) files as one frame, typed by the
    reader's schema, with `PARSE_ERROR` (the raw text of a row that did not parse)."""
    frames = [_read_csv(spark, reader, uri) for uri in fmt_files.get(CSV, [])]
    jsonl = fmt_files.get(JSONL, [])
    if jsonl:
        frames.append(_read_jsonl(spark, reader, jsonl))
    return union_all(frames)


def union_all(frames: list[DataFrame]) -> DataFrame:
    """The frames' rows by column name (a missing column is null); a text frame's
    `PARSE_ERROR` is null in the rows of the others. InputRejectedError when two
    frames give one column types that do not reconcile."""
    result = frames[0]
    try:
        for frame in frames[1:]:
            result = result.unionByName(frame, allowMissingColumns=True)
        _ = result.schema  # analysed here, where an error gets its reason
    except Exception as exc:
        raise as_job_error(exc, f"the sources' columns do not line up: {describe(exc)}") from exc
    return result


def read_csv_strict(spark: SparkSession, reader: SourceReader, uri: str) -> DataFrame:
    """The CSV's rows without `PARSE_ERROR`, read so that a row that does not parse fails
    the query (FAILFAST): without the corrupt-record column Spark skips its per-row
    bookkeeping, about 12% of a clean CSV write's CPU (docs/benchmarks.md, csv_bench)."""
    return _read_csv(spark, reader, uri, strict=True)


def is_malformed_row(exc: BaseException) -> bool:
    """True when a strict read failed on a row that does not parse."""
    from spark_jobs.errors import java_causes, java_throwable

    current: BaseException | None = exc
    while current is not None:
        throwable = java_throwable(current)
        if throwable is not None:
            for cause in java_causes(throwable):
                name = str(cause.getClass().getName())
                text = str(cause.getMessage() or "")
                if name.endswith(".BadRecordException") or "MALFORMED_RECORD_IN_PARSING" in text:
                    return True
        current = current.__cause__
    return False


def _read_csv(
    spark: SparkSession, reader: SourceReader, uri: str, strict: bool = False
) -> DataFrame:
    fmt = reader.format(uri)
    schema = reader.text_schema(uri, fmt)
    options = reader.csv
    names = schema.names
    if options.header:
        if uri not in reader.headers:
            reader.headers[uri] = _header(spark, uri, fmt, options, schema)
        names = reader.headers[uri]
    types = {f.name: f.dataType for f in schema.fields}
    read_schema = T.StructType(
        [T.StructField(name, types[name], True) for name in names]
        + ([] if strict else [T.StructField(PARSE_ERROR, T.StringType(), True)])
    )
    opts = {
        **csv_read_options(options, reader.parse),
        "enforceSchema": "true",
        **(
            {"mode": "FAILFAST"}
            if strict
            else {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": PARSE_ERROR}
        ),
    }
    try:
        frame = spark.read.schema(read_schema).options(**opts).csv(hadoop_fs.literal_path(uri))
        _ = frame.schema  # bad options fail here
    except Exception as exc:
        raise _option_error(exc, uri) from exc
    return frame


def csv_read_options(options: CsvOptions, parse: ParseOptions) -> dict[str, str]:
    """Spark's CSV reader options for the config's `csv:` and `parse:` sections (how the
    job splits and parses a CSV; `wap suggest` infers types with the same ones)."""
    return {
        "header": str(options.header).lower(),
        "sep": options.delimiter,
        "quote": options.quote,
        "escape": options.escape,
        "nullValue": options.null_value,
        "encoding": options.encoding,
        "multiLine": str(options.multiline).lower(),
        **datetime_options(parse),
    }


def _read_jsonl(spark: SparkSession, reader: SourceReader, uris: list[str]) -> DataFrame:
    schema = reader.text_schema(uris[0], reader.format(uris[0]))
    spark.conf.set(JSON_PRUNING_CONF, "false")
    with_error = T.StructType([*schema.fields, T.StructField(PARSE_ERROR, T.StringType())])
    lines = spark.read.text(*(hadoop_fs.literal_path(uri) for uri in uris))
    lines = lines.where(F.trim(F.col("value")) != "")  # blank lines hold no row
    parsed = F.from_json(
        F.col("value"),
        with_error,
        {
            "mode": "PERMISSIVE",
            "columnNameOfCorruptRecord": PARSE_ERROR,
            **datetime_options(reader.parse),
        },
    )
    known = F.array(*(F.lit(name) for name in schema.names))
    unknown = F.size(F.array_except(F.json_object_keys(F.col("value")), known)) > 0
    staged = lines.select(F.col("value"), parsed.alias("row"))
    # Bytes UTF-8 does not allow: decoding replaces them, so the round trip differs
    # (the line is an unparsable row, never written altered).
    invalid = F.encode(F.col("value"), "UTF-8") != F.col("value").cast("binary")
    failed = F.col("row").isNull() | F.col(f"row.{PARSE_ERROR}").isNotNull() | unknown | invalid
    try:
        frame = staged.select(
            *(F.col("row").getField(name).alias(name) for name in schema.names),
            F.when(failed, F.col("value")).alias(PARSE_ERROR),
        )
        _ = frame.schema  # bad options fail here
    except Exception as exc:
        raise _option_error(exc, uris[0]) from exc
    return frame


def check_parse_options(spark: SparkSession, parse: ParseOptions) -> None:
    """TableConfigError for a pattern or zone Java cannot use (checked before any write:
    Spark itself would only fail each value, turning every row into a parse error)."""
    jvm = spark._jvm
    checks = {
        "timestamp_format": jvm.java.time.format.DateTimeFormatter.ofPattern,
        "date_format": jvm.java.time.format.DateTimeFormatter.ofPattern,
        "time_zone": jvm.java.time.ZoneId.of,
    }
    for key, check in checks.items():
        value = getattr(parse, key)
        if value is None:
            continue
        try:
            check(value)
        except Exception as exc:
            raise TableConfigError(
                f"parse: {key} {value!r} cannot be used: {describe(exc)}"
            ) from exc


def datetime_options(parse: ParseOptions) -> dict[str, str]:
    """Spark's reader options for the config's `parse:` section (CSV and JSON alike)."""
    names = {
        "timestamp_format": "timestampFormat",
        "date_format": "dateFormat",
        "time_zone": "timeZone",
    }
    return {names[key]: value for key, value in vars(parse).items() if value is not None}


def _option_error(exc: BaseException, uri: str) -> Exception:
    """A reader that refuses its options (a bad pattern or zone) refuses the config."""
    error = as_job_error(exc, f"cannot read {uri}: {describe(exc)}")
    if isinstance(error, InputRejectedError):
        return TableConfigError(f"csv/parse options cannot read {file_name(uri)}: {describe(exc)}")
    return error


def _header(
    spark: SparkSession, uri: str, fmt: SourceFormat, options: CsvOptions, schema: T.StructType
) -> list[str]:
    """The table columns a CSV's header names, in its order; InputRejectedError when it
    names a column twice, or one the schema does not have."""
    name = file_name(uri)
    text = _decode(_head_bytes(spark, uri, fmt), options.encoding)
    try:
        header = next(csv.reader(io.StringIO(text), **_dialect(options)), [])
    except csv.Error as exc:
        raise InputRejectedError(f"{name}: the header line does not parse: {exc}") from exc
    if not header or all(not value.strip() for value in header):
        raise InputRejectedError(
            f"{name}: the first line is not a header (it is empty); "
            "a file without one needs `csv: {header: false}`"
        )
    by_name = {f.name: f.name for f in schema.fields}
    by_folded = {f.name.casefold(): f.name for f in schema.fields}
    columns, unknown = [], []
    for value in header:
        value = value.strip()
        column = by_name.get(value) or by_folded.get(value.casefold())
        (columns if column else unknown).append(column or value)
    if unknown:
        raise InputRejectedError(
            f"{name}: header column(s) {', '.join(map(repr, unknown))} are not in the "
            f"table's schema ({', '.join(schema.names)}); declare them "
            "under `schema:` in the table config (with `schema_policy: additive`), or "
            "rename them"
        )
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise InputRejectedError(f"{name}: the header names {', '.join(repeated)} twice")
    return columns


def _dialect(options: CsvOptions) -> dict:
    doubled = options.escape == options.quote
    return {
        "delimiter": options.delimiter,
        "quotechar": options.quote,
        "doublequote": doubled,
        "escapechar": None if doubled else options.escape,
    }


def _head_bytes(spark: SparkSession, uri: str, fmt: SourceFormat) -> bytes:
    try:
        size = hadoop_fs.list_files(spark, uri)[0].size
        data = hadoop_fs.read_range(spark, uri, 0, min(size, HEADER_BYTES))
    except Exception as exc:
        raise as_job_error(exc, f"source {uri} cannot be read: {describe(exc)}") from exc
    if fmt.gzip:
        data = zlib.decompressobj(wbits=31).decompress(data, HEADER_BYTES)
    return data


def _decode(data: bytes, encoding: str) -> str:
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    return data.decode("utf-8" if encoding == "UTF-8" else "latin-1", errors="replace")


def damaged_text_error(
    spark: SparkSession, reader: SourceReader, files: list[str]
) -> InputRejectedError | None:
    """After reading the sources failed for a cause that is not the input's (Hadoop says
    `Unexpected end of input stream [EOFException]` or `gzip stream CRC failure`, much as
    S3 says a read failed): the first gzip'd text source whose stream is damaged, as
    the input's rejection; None when every gzip stream is sound, and the failure stands.
    One streaming read of each gzip'd source, on this failure path only."""
    for uri in files:
        fmt = reader.format(uri)
        if fmt.kind == PARQUET or not fmt.gzip:
            continue
        try:
            problem = stream_problem(spark, uri, fmt, utf8=False)
        except Exception:  # the storage fails too: the original failure stands
            log.exception("cannot read %s to check its gzip stream", uri)
            return None
        if problem:
            return InputRejectedError(problem)
    return None


def encoding_error(
    spark: SparkSession, reader: SourceReader, files: list[str]
) -> InputRejectedError | None:
    """The first UTF-8 text source that holds bytes UTF-8 does not allow (Spark would
    have written U+FFFD in their place), as the input's rejection naming the line and the
    byte; None when every such file is valid (its U+FFFD are its own). Called only when
    the write saw a U+FFFD; one streaming read of each UTF-8 text source."""
    for uri in files:
        fmt = reader.format(uri)
        if fmt.kind == PARQUET or (fmt.kind == CSV and reader.csv.encoding != "UTF-8"):
            continue
        problem = stream_problem(spark, uri, fmt, utf8=True)
        if problem:
            return InputRejectedError(problem)
    return None


def stream_problem(spark: SparkSession, uri: str, fmt: SourceFormat, utf8: bool) -> str | None:
    """What is wrong with a text file's bytes, read once as a stream: a gzip stream that
    is damaged or ends early, or (`utf8`) a byte sequence UTF-8 does not allow, with
    where; None when the file is sound. Concatenated gzip members are one stream, as
    Hadoop reads them."""
    name = file_name(uri)
    size = hadoop_fs.list_files(spark, uri)[0].size
    inflate = zlib.decompressobj(wbits=31) if fmt.gzip else None
    decoder = codecs.getincrementaldecoder("utf-8")() if utf8 else None
    offset = text_bytes = 0
    line = 1
    while offset < size:
        chunk = hadoop_fs.read_range(spark, uri, offset, min(STREAM_CHUNK, size - offset))
        if not chunk:
            break
        offset += len(chunk)
        data = chunk
        if inflate is not None:
            try:
                data, inflate = _inflate(inflate, chunk)
            except zlib.error as exc:
                return (
                    f"{name}: the gzip stream is damaged ({exc}) within its first "
                    f"{offset} bytes, after {text_bytes} bytes of text (line {line}); "
                    "upload the file again"
                )
        if decoder is not None:
            pending = decoder.getstate()[0]  # a character's first bytes, from before
            try:
                decoder.decode(data)
            except UnicodeDecodeError as exc:
                bad = (pending + data)[exc.start]
                position = text_bytes - len(pending) + exc.start
                line += data.count(b"\n", 0, max(exc.start - len(pending), 0))
                hint = (
                    ("save it as UTF-8, or declare `csv: {encoding: latin-1}` if it is Latin-1")
                    if fmt.kind == CSV
                    else "JSON Lines are UTF-8: save it so"
                )
                return (
                    f"{name}: not valid UTF-8, its declared encoding: byte 0x{bad:02x} "
                    f"at line {line} (byte offset {position} of the text); {hint}"
                )
        line += data.count(b"\n")
        text_bytes += len(data)
    if inflate is not None and not inflate.eof:
        return (
            f"{name}: the gzip stream ends early after {offset} bytes ({text_bytes} "
            f"bytes of text, line {line}): the upload was cut short, or the file lacks "
            "gzip's 8-byte trailer; upload the whole file again"
        )
    if decoder is not None:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return (
                f"{name}: not valid UTF-8, its declared encoding: it ends inside a "
                f"character at line {line} (byte offset {text_bytes} of the text)"
            )
    return None


def _inflate(inflate, chunk: bytes):
    """The text in `chunk` and the decompressor for what follows (a new one for each
    gzip member after the first)."""
    data = inflate.decompress(chunk)
    while inflate.eof and inflate.unused_data:
        rest = inflate.unused_data
        inflate = zlib.decompressobj(wbits=31)
        data += inflate.decompress(rest)
    return data, inflate


def unclosed_quote_error(
    spark: SparkSession, reader: SourceReader, files: list[str]
) -> dict[str, str]:
    """Each CSV source (read with `multiline`) whose last quoted value is never closed,
    with the reason (file -> reason): Spark closes such a value at the end of the file,
    quietly, with every line after its quote inside it. Called only when the write saw
    a value holding a line break; one streaming read of each such CSV."""
    found = {}
    if not reader.csv.multiline:  # a value then ends with its line: none is taken in
        return found
    for uri in files:
        fmt = reader.format(uri)
        if fmt.kind != CSV:
            continue
        encoding = "utf-8" if reader.csv.encoding == "UTF-8" else "latin-1"
        line = unclosed_quote_line(_text(spark, uri, fmt, encoding), reader.csv)
        if line is not None:
            found[uri] = (
                f"{file_name(uri)}: the quoted value opened at line {line} is never closed: "
                f"its quote ({reader.csv.quote}) runs to the end of the file, taking in "
                "every line after it; close the value with a quote (a quote inside a value "
                f"is written as {reader.csv.escape}{reader.csv.quote})"
            )
    return found


def unclosed_quote_line(chunks, options: CsvOptions) -> int | None:
    """The line (1-based) where the quoted value still open at the end of `chunks` (the
    text of one CSV, in pieces) opens; None when every quoted value closes. A quote opens
    a value only at a value's start (elsewhere it is a character of the value, as Spark
    reads it); inside, the escape (RFC 4180: the quote itself, doubled) keeps the next
    quote. Reads the text in jumps between delimiters, quotes and line ends."""
    q, e, d = options.quote, options.escape, options.delimiter
    doubled = e == q
    value_end = re.compile("[" + re.escape(d) + "\r\n]")
    in_quoted = re.compile("[" + re.escape(q if doubled else q + e) + "]")
    start, in_quotes, after_quote, escaped = True, False, False, False
    line = opened = 1
    for text in chunks:
        pos = counted = 0
        while pos < len(text):
            if escaped:  # the character after an escape is the value's own
                escaped, pos = False, pos + 1
            elif after_quote:  # a quote inside quotes: doubled, or the value's end
                after_quote = False
                if text[pos] == q:
                    in_quotes, pos = True, pos + 1
            elif in_quotes:
                hit = in_quoted.search(text, pos)
                if hit is None:
                    break
                pos = hit.end()
                if hit.group() == q:
                    in_quotes, after_quote = False, True
                else:
                    escaped = True
            elif start and text[pos] == q:
                line += text.count("\n", counted, pos)
                counted = pos
                opened, in_quotes, start, pos = line, True, False, pos + 1
            else:  # an unquoted value (or what follows a closing quote): to its end
                hit = value_end.search(text, pos)
                if hit is None:
                    start = False
                    break
                start, pos = True, hit.end()
        line += text.count("\n", counted)
    return opened if in_quotes else None


def _text(
    spark: SparkSession, uri: str, fmt: SourceFormat, encoding: str, max_bytes: int | None = None
):
    """The file's text (its first `max_bytes` bytes as stored, when given), decompressed
    and decoded, in chunks (a BOM left out)."""
    size = hadoop_fs.list_files(spark, uri)[0].size
    end = size if max_bytes is None else min(size, max_bytes)
    inflate = zlib.decompressobj(wbits=31) if fmt.gzip else None
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    offset, first = 0, True
    while offset < end:
        chunk = hadoop_fs.read_range(spark, uri, offset, min(STREAM_CHUNK, size - offset))
        if not chunk:
            break
        offset += len(chunk)
        if inflate is not None:
            chunk, inflate = _inflate(inflate, chunk)
        text = decoder.decode(chunk)
        if first:
            text, first = text.lstrip("\ufeff"), False
        yield text


def parse_error_samples(
    spark: SparkSession,
    frame: DataFrame,
    origin: dict[str, str],
    reader: SourceReader,
    limit: int = PARSE_ERROR_SAMPLES,
) -> list[dict]:
    """Up to `limit` rows that did not parse, in file order, each with its file (as
    `origin` names it: file URI -> what the user uploaded), line number and raw text.
    Runs on the failure path only: one LIMITed query, then each file with samples read
    up to its last sample's line to number the lines."""
    # The hash keeps every column read (and so parsed), as in the write.
    every = F.xxhash64(*(F.col(quote(c)) for c in frame.columns)).alias("__every")
    picked = (
        frame.select("*", F.input_file_name().alias("__file"))
        .where(F.col(PARSE_ERROR).isNotNull())
        .select("__file", PARSE_ERROR, every)
        .limit(limit)
        .collect()
    )
    by_file: dict[str, list[str]] = {}
    for row in picked:
        by_file.setdefault(row["__file"], []).append(row[PARSE_ERROR])
    samples = []
    paths = {hadoop_fs.path_key(uri): uri for uri in origin}
    for file_uri, texts in by_file.items():
        source = paths.get(hadoop_fs.path_key(file_uri), file_uri)
        lines = _locate(spark, source, texts, reader)
        # One line per text (_locate). Not zip(strict=True): EMR runs Python 3.9.
        for text, line in zip(texts, lines):  # noqa: B905
            samples.append(
                {
                    "line": line,
                    "file": origin.get(source, source),
                    "text": text if len(text) <= SAMPLE_TEXT else text[:SAMPLE_TEXT] + "…",
                }
            )
    return samples


def _locate(
    spark: SparkSession, uri: str, texts: list[str], reader: SourceReader
) -> list[int | None]:
    """The line each text starts on in `uri` (1-based), matched in order by its first
    line; None for a text not found within LOCATE_MAX_BYTES."""
    fmt = reader.format(uri)
    encoding = "utf-8" if fmt.kind != CSV or reader.csv.encoding == "UTF-8" else "latin-1"
    wanted = [text.split("\n", 1)[0].rstrip("\r") for text in texts]
    found: list[int | None] = [None] * len(texts)
    position = 0
    for number, line in enumerate(_lines(spark, uri, fmt, encoding), start=1):
        if line.rstrip("\r\n").lstrip("\ufeff") == wanted[position]:
            found[position] = number
            position += 1
            if position == len(wanted):
                break
    return found


def _lines(spark: SparkSession, uri: str, fmt: SourceFormat, encoding: str):
    """The file's lines, decompressed and decoded, read in chunks up to LOCATE_MAX_BYTES."""
    pending = ""
    for text in _text(spark, uri, fmt, encoding, LOCATE_MAX_BYTES):
        pending += text
        *complete, pending = pending.split("\n")
        yield from complete
    if pending:
        yield pending


__all__ = [
    "CSV",
    "JSONL",
    "PARQUET",
    "PARSE_ERROR",
    "SourceReader",
    "data_schema",
    "every_column",
    "parse_error_count",
    "parse_error_samples",
    "parsed_rows",
    "read_text",
]
