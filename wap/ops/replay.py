"""`wap replay`: take an ingest's quarantined rows out of `<ns>.<table>__quarantine` on
main into a file of the table's format, for a person to fix and drop again.

The quarantine table is read with pyiceberg through the `metadataLocation` Nessie holds on
main, as `wap query` reads tables: no JVM. The file holds the table's columns only (no
`_wap_*`); a text row that did not parse is written back as its raw text, for CSV and
JSON Lines. Its name carries the ingest id and the check: `<table>__replay_<ingest>[_<check>]`.

Rows are not published twice: each export is recorded beside the audit reports
(`<reports prefix>replays/<ns>.<table>/<ingest>.json`: the checks exported and the file),
and an export leaves out every row an earlier export of the same ingest took (a row
taken with `--check c` is every row whose `_wap_failed_checks` holds `c`; without
`--check`, every row). A second export of the same rows refuses, naming the first file:
the fixed rows can only leave the quarantine table once. And `wap ingest` of an exported
file records the drop on its entry; dropping that file again is refused unless the
earlier drop's ingest was discarded.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from contracts.formats import CSV, JSONL, PARQUET, format_of
from contracts.naming import IDENTIFIER, INGEST_ID
from contracts.table_config import CsvOptions, quarantine_table_name
from ingestion import constants as c
from lakeview import iceberg
from wap.exceptions import InvalidInputError, NotAllowedError, UnknownTargetError
from wap.ops.backend import Backend
from wap.ops.ingests import find_ingest, parse_table

ALL_CHECKS = "*"  # in a replay record: an export that took every row of the ingest
META_PREFIX = "_wap_"
REPLAYS = "replays"
# An exported file's name (`replay_name`), as `wap ingest` recognises it when dropped.
REPLAY_FILE = re.compile(
    rf"^{IDENTIFIER.pattern}__replay_(?P<ingest>{INGEST_ID.pattern})(?:_[^.]+)?\."
)


@dataclass(frozen=True)
class ReplayExport:
    """One export: which rows of which ingest went to which file."""

    table: str
    ingest_id: str
    check: str | None
    path: Path
    format: str
    rows: int
    left_out: int  # rows of the selection an earlier export of the ingest already took


def replay_name(table: str, ingest_id: str, check: str | None, fmt: str) -> str:
    """The exported file's name: the table, the ingest and the check it was taken for."""
    name = table.split(".")[1]
    return f"{name}__replay_{ingest_id}{'_' + check if check else ''}.{fmt}"


def check_out_dir(out_dir: Path) -> None:
    """Refuse an `--out` that is not an existing directory, before anything is read: the
    export is recorded only once its file is written, and a typo should not create one."""
    if not Path(out_dir).is_dir():
        raise InvalidInputError(f"no such directory: {out_dir}")


def export_quarantined(
    backend: Backend,
    table: str,
    ingest_id: str,
    *,
    check: str | None = None,
    out_dir: Path = Path("."),
    configured: str | None = None,
    csv_options: CsvOptions | None = None,
) -> ReplayExport:
    """Write the quarantined rows of `ingest_id` in `table` (those failing `check`, else
    all) that no earlier export took to a file in `out_dir`, and record the export."""
    check_out_dir(out_dir)
    ref = parse_table(table)
    ingest_id = ingest_id.strip()
    if not INGEST_ID.fullmatch(ingest_id):
        raise InvalidInputError(f"{ingest_id!r} is not an ingest id (16 hex characters)")
    tables = backend.nessie.iceberg_tables(c.MAIN_BRANCH)
    if ref.qualified not in tables:
        raise UnknownTargetError(f"no table {ref.qualified} on main (see `wap runs`)")
    record = find_ingest(backend, ingest_id)
    if record.table != ref.qualified:
        raise InvalidInputError(f"ingest {ingest_id} wrote {record.table}, not {ref.qualified}")
    quarantine = quarantine_table_name(ref.qualified)
    if quarantine not in tables:
        raise NotAllowedError(f"{ref.qualified} has no quarantined rows on main")
    rows = iceberg.read_rows(
        iceberg.open_table(tables[quarantine], backend.iceberg_properties())
    ).filter(pc.field("_wap_ingest_id") == ingest_id)
    if rows.num_rows == 0:
        raise NotAllowedError(
            f"ingest {ingest_id} has no quarantined rows in {quarantine} on main"
            + ("" if record.status == c.PUBLISHED else f" (it is {record.status})")
        )
    chosen = _failing(rows, check) if check else rows
    if chosen.num_rows == 0:
        raise NotAllowedError(
            f"no quarantined row of ingest {ingest_id} failed the check {check!r} "
            f"(its rows failed {', '.join(sorted(_checks(rows)))})"
        )
    key = _record_key(backend, ref.qualified, ingest_id)
    earlier = _read_record(backend, key)
    taken = {e["check"] for e in earlier}
    fresh = chosen if not taken else _not_taken(chosen, taken)
    if fresh.num_rows == 0:
        files = ", ".join(e["file"] for e in earlier)
        raise NotAllowedError(
            f"the {chosen.num_rows} quarantined row(s) of ingest {ingest_id}"
            f"{' failing ' + check if check else ''} were exported already ({files}): "
            "dropping them again would publish them twice"
        )
    source = str(fresh.column("_wap_source_file")[0].as_py() or "")
    found = format_of(source.split("?")[0], configured) or format_of(".parquet")
    fmt = found.kind
    path = Path(out_dir) / replay_name(ref.qualified, ingest_id, check, fmt)
    if path.exists():
        raise NotAllowedError(f"{path} exists already: move it away or choose --out")
    body = file_bytes(fresh, fmt, csv_options or CsvOptions())
    path.write_bytes(body)
    entry = {
        "check": check or ALL_CHECKS,
        "file": path.name,
        "rows": fresh.num_rows,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _write_record(backend, key, [*earlier, entry])
    return ReplayExport(
        table=ref.qualified,
        ingest_id=ingest_id,
        check=check,
        path=path,
        format=fmt,
        rows=fresh.num_rows,
        left_out=chosen.num_rows - fresh.num_rows,
    )


def _checks(rows: pa.Table) -> set[str]:
    return {name for names in rows.column("_wap_failed_checks").to_pylist() for name in names or []}


def _failing(rows: pa.Table, check: str) -> pa.Table:
    mask = [check in (names or []) for names in rows.column("_wap_failed_checks").to_pylist()]
    return rows.filter(pa.array(mask, pa.bool_()))


def _not_taken(rows: pa.Table, taken: set[str]) -> pa.Table:
    """The rows no earlier export took: an export of every row took them all; one of a
    check took the rows failing it."""
    if ALL_CHECKS in taken:
        return rows.slice(0, 0)
    mask = [
        not taken.intersection(names or [])
        for names in rows.column("_wap_failed_checks").to_pylist()
    ]
    return rows.filter(pa.array(mask, pa.bool_()))


def file_bytes(rows: pa.Table, fmt: str, options: CsvOptions) -> bytes:
    """The rows, without the `_wap_*` columns, as a file of `fmt`; a row that did not parse
    (text formats only) as its raw text."""
    columns = [n for n in rows.column_names if not n.startswith(META_PREFIX)]
    data = rows.select(columns)
    if fmt == PARQUET:
        import pyarrow.parquet as pq

        sink = io.BytesIO()
        pq.write_table(data, sink)
        return sink.getvalue()
    raw = rows.column("_wap_raw_text").to_pylist()
    records = data.to_pylist()
    if fmt == JSONL:
        lines = [
            text if text is not None else json.dumps(record, default=_json_value)
            for record, text in zip(records, raw, strict=True)
        ]
        return ("\n".join(lines) + "\n").encode()
    if fmt == CSV:
        out = io.StringIO()
        writer = csv.writer(
            out,
            delimiter=options.delimiter,
            quotechar=options.quote,
            doublequote=options.escape == options.quote,
            escapechar=None if options.escape == options.quote else options.escape,
            lineterminator="\n",
        )
        if options.header:
            writer.writerow(columns)
        for record, text in zip(records, raw, strict=True):
            if text is not None:
                out.write(text.rstrip("\r\n") + "\n")
            else:
                writer.writerow([_csv_value(record[n], options) for n in columns])
        encoding = "utf-8" if options.encoding == "UTF-8" else "latin-1"
        return out.getvalue().encode(encoding, errors="replace")
    raise InvalidInputError(f"cannot write rows as {fmt}")


def _csv_value(value: Any, options: CsvOptions) -> str:
    if value is None:
        return options.null_value
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _record_key(backend: Backend, table: str, ingest_id: str) -> str:
    prefix = backend.reports_prefix()
    if not prefix:
        raise NotAllowedError(
            "this stack has no reports bucket: replays cannot be recorded, so none is exported"
        )
    return f"{prefix.rstrip('/')}/{REPLAYS}/{table}/{ingest_id}.json"


def _read_record(backend: Backend, uri: str) -> list[dict[str, Any]]:
    body = backend.read_object(uri)
    return json.loads(body) if body else []


def _write_record(backend: Backend, uri: str, entries: list[dict[str, Any]]) -> None:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    backend.s3().put_object(Bucket=bucket, Key=key, Body=json.dumps(entries, indent=1).encode())
    backend.changed()  # a local home keeps it


def check_redrops(backend: Backend, table: str, names: list[str]) -> None:
    """Refuse a file exported by `wap replay` that was dropped already, unless that drop's
    ingest was discarded (its rows then never reached main)."""
    for name in names:
        entry = _exported_entry(backend, table, name)
        earlier = (entry or {}).get("dropped_as")
        if not earlier:
            continue
        record = backend.ledger.get_ingest(earlier)
        if record is not None and record.status == c.DISCARDED:
            continue
        raise NotAllowedError(
            f"{name} was dropped already (ingest {earlier}, "
            f"{record.status if record else 'unknown'}): dropping it again would publish "
            "its rows twice"
        )


def record_drop(backend: Backend, table: str, name: str, ingest_id: str) -> None:
    """Note on the export's entry that its file was dropped as `ingest_id`."""
    found = REPLAY_FILE.match(name)
    if found is None or _exported_entry(backend, table, name) is None:
        return
    key = _record_key(backend, table, found["ingest"])
    entries = _read_record(backend, key)
    for entry in entries:
        if entry["file"] == name:
            entry["dropped_as"] = ingest_id
    _write_record(backend, key, entries)


def _exported_entry(backend: Backend, table: str, name: str) -> dict[str, Any] | None:
    """The replay record's entry of the file `name` (None: not a file `wap replay` wrote)."""
    found = REPLAY_FILE.match(name)
    if found is None or not backend.reports_prefix():
        return None
    entries = _read_record(backend, _record_key(backend, table, found["ingest"]))
    return next((e for e in entries if e["file"] == name), None)
