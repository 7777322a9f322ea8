"""Small file I/O through Hadoop's FileSystem in the driver JVM.

The same calls reach `s3://` on EMR (EMRFS) and `file://` locally, so the job
needs no boto3 and no local credentials handling of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from contracts.layout import is_hidden_name
from contracts.table_config import MAX_CONFIG_BYTES
from spark_jobs.errors import TableConfigError, TooLargeError, as_job_error, describe

PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class FileInfo:
    """A file found under a source URI."""

    uri: str
    size: int


def _path_and_fs(spark, uri: str):
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path, path.getFileSystem(spark._jsc.hadoopConfiguration())


def exists(spark, uri: str) -> bool:
    """True when `uri` names an existing file or directory."""
    path, fs = _path_and_fs(spark, uri)
    return bool(fs.exists(path))


def read_bytes(spark, uri: str, max_bytes: int = 10 * 1024 * 1024) -> bytes:
    """The whole content of a small file (configs); TooLargeError above `max_bytes`."""
    path, fs = _path_and_fs(spark, uri)
    size = fs.getFileStatus(path).getLen()
    if size > max_bytes:
        raise TooLargeError(f"{uri} is {size} bytes, more than {max_bytes}")
    return read_range(spark, uri, 0, size)


def read_config(spark, uri: str, what: str, too_large: str) -> bytes | None:
    """The config file at `uri` (None when there is none), read whole (the table's and the
    dataset's config; each caller decides what no file means). TableConfigError `too_large`
    above MAX_CONFIG_BYTES; when reading fails, "cannot read the <what> <uri>: <cause>"
    (`as_job_error`: a TableConfigError, or an InfrastructureError when not the input's)."""
    try:
        if not exists(spark, uri):
            return None
        return read_bytes(spark, uri, max_bytes=MAX_CONFIG_BYTES)
    except TooLargeError as exc:
        raise TableConfigError(too_large) from exc
    except Exception as exc:
        raise as_job_error(
            exc, f"cannot read the {what} {uri}: {describe(exc)}", TableConfigError
        ) from exc


def read_range(spark, uri: str, offset: int, length: int) -> bytes:
    """`length` bytes of `uri` starting at `offset`."""
    path, fs = _path_and_fs(spark, uri)
    stream = fs.open(path)
    try:
        stream.seek(offset)
        # py4j returns a Java byte[] as Python bytes in one piece (not byte by byte).
        return bytes(spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream, length))
    finally:
        stream.close()


def write_bytes(spark, uri: str, data: bytes) -> None:
    """Create or overwrite `uri` with `data`."""
    path, fs = _path_and_fs(spark, uri)
    stream = fs.create(path, True)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


_GLOB_CHARACTERS = "\\*?[]{}"


def literal_path(uri: str) -> str:
    """`uri` with Hadoop's glob characters escaped: Spark's readers glob every path they
    get, so `f*.parquet` would read `fa.parquet` too and `export[1].parquet` nothing."""
    return "".join(f"\\{char}" if char in _GLOB_CHARACTERS else char for char in uri)


def list_files(spark, uri: str) -> list[FileInfo]:
    """`uri` itself when it is a file, else the visible files below it (recursive)."""
    path, fs = _path_and_fs(spark, uri)
    status = fs.getFileStatus(path)
    if status.isFile():
        return [FileInfo(uri, int(status.getLen()))]
    files = []
    iterator = fs.listFiles(path, True)
    while iterator.hasNext():
        item = iterator.next()
        name = item.getPath().getName()
        if is_hidden_name(name):
            continue  # Hadoop/Spark markers such as _SUCCESS and .crc files
        files.append(FileInfo(item.getPath().toString(), int(item.getLen())))
    return sorted(files, key=lambda f: f.uri)


def path_key(uri: str) -> str:
    """A URI's path without scheme and with one leading slash, so `file:/x`, `file:///x`
    and `/x` compare equal, as do `s3://b/k` and `s3a://b/k` (Spark's
    `input_file_name()` and the job's arguments spell one file differently)."""
    return "/" + re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*:/*", "", unquote(uri)).lstrip("/")
