"""`wap ingest-dataset NAME FOLDER`: drop a multi-table dataset (docs/datasets.md) as a data
engineer's export lands in S3: its files under `_datasets/<name>/<drop>/`, then the drop's
`_manifest.json`, which makes the trigger run every table at once."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from contracts.batching import MAX_MANIFEST_BYTES
from contracts.dataset_config import (
    DATASETS_PREFIX,
    DatasetConfig,
    parse_dataset_config_bytes,
    parse_tables_manifest,
)
from contracts.layout import MANIFEST_MARKER, is_hidden_name, is_manifest_path
from contracts.naming import IDENTIFIER_RULE, is_identifier
from contracts.table_config import MAX_CONFIG_BYTES, TableConfigError
from ingestion.naming import utcnow
from wap.exceptions import InvalidInputError
from wap.ops.backend import Backend
from wap.ops.operations import (
    Dropped,
    check_source_file,
    configured_format,
    parse_table,
    upload_for_ingest,
)


@dataclass(frozen=True)
class DatasetDrop:
    """The files of a drop by table (`(path in the drop, local file)`), as the manifest
    will list them."""

    name: str
    folder: Path
    files: dict[str, list[tuple[str, Path]]]

    def manifest(self) -> dict:
        return {
            "tables": {
                table: [{"path": rel, "size": path.stat().st_size} for rel, path in entries]
                for table, entries in self.files.items()
            }
        }


def read_drop(name: str, folder: Path, tables_dir: Path | None) -> DatasetDrop:
    """The drop in `folder`: its `_manifest.json` (paths relative to the folder), else one
    subfolder per table named `<ns>.<table>` holding that table's files. With `tables_dir`
    (local stack), checked against `datasets/<name>.yaml` and each table's `format:` first,
    so bad input is refused before anything is uploaded."""
    if not is_identifier(name):
        raise InvalidInputError(f"invalid dataset name {name!r}: {IDENTIFIER_RULE}")
    if not folder.is_dir():
        raise InvalidInputError(f"not a folder: {folder}")
    manifest_path = folder / MANIFEST_MARKER
    if manifest_path.is_file():
        files = _from_manifest(manifest_path, folder)
    else:
        files = {}
        for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
            parse_table(sub.name)
            files[sub.name] = [
                (f"{sub.name}/{p.name}", p)
                for p in sorted(sub.iterdir())
                if p.is_file() and not is_hidden_name(p.name)
            ]
        if not files:
            raise InvalidInputError(
                f"{folder} has neither a {MANIFEST_MARKER} nor a subfolder per table named "
                "<namespace>.<table> (docs/datasets.md)"
            )
    drop = DatasetDrop(name, folder, files)
    if tables_dir is not None:
        config = _local_config(tables_dir, name)
        try:
            parse_tables_manifest(drop.manifest(), config, str(folder))
        except TableConfigError as exc:
            raise InvalidInputError(str(exc)) from exc
    for table, entries in files.items():
        configured = (
            configured_format(tables_dir / f"{table}.yaml") if tables_dir is not None else None
        )
        for _, path in entries:
            check_source_file(path, configured)
    return drop


def _from_manifest(path: Path, folder: Path) -> dict[str, list[tuple[str, Path]]]:
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise InvalidInputError(f"{path} is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        raw = json.loads(path.read_text())
        tables = raw["tables"]
        files = {
            table: [(entry["path"], folder / entry["path"]) for entry in entries]
            for table, entries in tables.items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInputError(
            f"{path} is not a dataset manifest like "
            '{"tables": {"sales.orders": [{"path": "orders/part-0.parquet",'
            f' "size": 123}}]}}}}: {exc}'
        ) from exc
    for table, entries in files.items():
        parse_table(table)
        for rel, local in entries:
            if not is_manifest_path(rel) or not local.is_file():
                raise InvalidInputError(f"{path}: {rel!r} is not a file under {folder}")
    return files


def _local_config(tables_dir: Path, name: str) -> DatasetConfig:
    import yaml

    path = tables_dir / "datasets" / f"{name}.yaml"
    if not path.is_file():
        raise InvalidInputError(
            f"no config for dataset {name!r}: add {path} naming its tables (docs/datasets.md)"
        )
    with path.open("rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    try:
        return parse_dataset_config_bytes(data, str(path), yaml=yaml)
    except TableConfigError as exc:
        raise InvalidInputError(str(exc)) from exc


def drop_dataset(backend: Backend, drop: DatasetDrop) -> Dropped:
    """Upload the drop's files under `_datasets/<name>/<drop id>/`, then its manifest (last:
    it starts the run); returns the manifest's drop, whose ingest id is the dataset's."""
    stamp = utcnow().strftime("%Y%m%dT%H%M%S")
    drop_id = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', drop.folder.resolve().name)}-{stamp}"
    prefix = f"{DATASETS_PREFIX}{drop.name}/{drop_id}/"
    for entries in drop.files.values():
        for rel, path in entries:
            backend.upload_source(prefix + rel, path.read_bytes())
    key = prefix + MANIFEST_MARKER
    return Dropped(
        path=drop.folder,
        key=key,
        ingest_id=upload_for_ingest(backend, key, json.dumps(drop.manifest(), indent=2).encode()),
    )
