"""Which format a source file is read as, and whether its first bytes agree.

One definition for the trigger (it refuses a file before any Spark runs), the `wap` tools
and the Spark job (it reads each file with the reader of its format). Standard library
only and Python 3.9-compatible, like the rest of `contracts`.

A file's format is the table config's `format:` when it sets one, else the file's
extension: `.parquet`, `.csv`, `.jsonl` (also `.ndjson`), each text format optionally
gzip-compressed (`.csv.gz`, `.jsonl.gz`). The bytes must then agree: a parquet file starts
and ends with `PAR1`; a text file is not parquet, not binary, and gzip when it says so.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

PARQUET, CSV, JSONL = "parquet", "csv", "jsonl"
FORMATS = (PARQUET, CSV, JSONL)
TEXT_FORMATS = (CSV, JSONL)
GZIP_SUFFIX = ".gz"
EXTENSIONS = {".parquet": PARQUET, ".csv": CSV, ".jsonl": JSONL, ".ndjson": JSONL}
PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
# Magic, a 4-byte footer length and the magic again: nothing shorter can be parquet.
MIN_PARQUET_BYTES = 12
# How many leading bytes the sniff reads (a compressed file: of its compressed bytes).
SNIFF_BYTES = 4096


@dataclass(frozen=True)
class SourceFormat:
    """How one source file is read: its format and whether it is gzip-compressed."""

    kind: str
    gzip: bool = False

    @property
    def is_text(self) -> bool:
        return self.kind in TEXT_FORMATS

    @property
    def label(self) -> str:
        """`csv`, `gzip csv`, `parquet`: how messages name it."""
        return f"gzip {self.kind}" if self.gzip else self.kind


def supported_names() -> str:
    """The extensions a file may have, for messages."""
    text = [ext for ext, kind in EXTENSIONS.items() if kind in TEXT_FORMATS]
    return ", ".join([*EXTENSIONS, *(ext + GZIP_SUFFIX for ext in text)])


def format_of(name: str, configured: str | None = None) -> SourceFormat | None:
    """The format `name` is read as: the config's `format:` when set, else the extension;
    None when neither says (the caller refuses the file with `unsupported_format_text`)."""
    lowered = name.lower()
    compressed = lowered.endswith(GZIP_SUFFIX)
    stem = lowered[: -len(GZIP_SUFFIX)] if compressed else lowered
    if configured is not None:
        return SourceFormat(configured, compressed and configured in TEXT_FORMATS)
    for extension, kind in EXTENSIONS.items():
        if stem.endswith(extension) and (not compressed or kind in TEXT_FORMATS):
            return SourceFormat(kind, compressed)
    return None


def unsupported_format_text(name: str) -> str:
    """What a file of no known format is told."""
    return (
        f"unsupported file type {name!r}: the file names a format by its extension "
        f"({supported_names()}), or the table config sets `format:` (parquet, csv, "
        "jsonl)"
    )


def content_problem(
    name: str, fmt: SourceFormat, head: bytes, tail: bytes, size: int | None
) -> str | None:
    """Why the bytes of `name` do not match `fmt`, or None.

    `head`: its first bytes (up to SNIFF_BYTES), `tail`: its last 4 bytes.
    """
    if fmt.kind == PARQUET:
        if len(head) < 4 or len(tail) < 4 or (size is not None and size < MIN_PARQUET_BYTES):
            return (
                f"not a parquet file: {name} is too short to hold a parquet footer "
                "(empty or cut off: upload it again)"
            )
        if head[:4] != PARQUET_MAGIC or tail[-4:] != PARQUET_MAGIC:
            hint = (
                " (is it a CSV or another format renamed .parquet? name it by its "
                "format: .csv, .jsonl)"
            )
            return (
                f"not a parquet file: {name} does not start and end with the parquet "
                f"magic bytes PAR1{hint}"
            )
        return None
    if fmt.gzip:
        if head[:2] != GZIP_MAGIC:
            return (
                f"not a gzip file: {name} ends in .gz but does not start with gzip's "
                "magic bytes; drop the .gz from its name, or compress it with gzip"
            )
        head = _gunzip_head(head)
        if head is None:
            return (
                f"not a gzip file: {name} ends in .gz but its first bytes do not "
                "decompress (corrupt or cut off: compress it again and upload it)"
            )
    elif head[:2] == GZIP_MAGIC:
        return (
            f"not a {fmt.kind} file: {name} is gzip-compressed; name it "
            f"{name}{GZIP_SUFFIX} so it is decompressed"
        )
    if head[:4] == PARQUET_MAGIC:
        return (
            f"not a {fmt.kind} file: {name} is a parquet file (it starts with PAR1); "
            "name it .parquet, in a table whose config does not set another `format:`"
        )
    if b"\x00" in head:
        return (
            f"not a {fmt.kind} file: {name} holds binary data (a NUL byte in its first "
            f"{len(head)} bytes); export it as text (UTF-8 or Latin-1), or name it by "
            "its real format"
        )
    if fmt.kind == JSONL:
        first = head[len(UTF8_BOM) :] if head.startswith(UTF8_BOM) else head
        first = first.lstrip()
        if first[:1] == b"[":
            return (
                f"not JSON Lines: {name} holds a JSON array; write one JSON object per "
                "line instead (e.g. `jq -c '.[]' file.json > file.jsonl`)"
            )
        if first and first[:1] != b"{":
            return (
                f"not JSON Lines: {name} does not start with a JSON object ({{); each "
                "line must be one JSON object"
            )
    return None


def _gunzip_head(head: bytes) -> bytes | None:
    """The first decompressed bytes of a gzip stream's head, None when they do not
    decompress (a truncated head is fine: only what it holds is returned)."""
    try:
        return zlib.decompressobj(wbits=31).decompress(head, SNIFF_BYTES)
    except zlib.error:
        return None
