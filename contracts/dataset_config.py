"""A multi-table dataset's config (`tables/datasets/<name>.yaml`, issue 27): the tables one
drop writes together and the checks between them, evaluated on the dataset's branch
after every table was written.

    tables: [sales.orders, sales.order_items]
    checks:
      - kind: foreign_key          # every new order_items.order_id is an order on the branch
        table: sales.order_items
        column: order_id
        references: sales.orders.order_id
      - kind: row_count_relation   # over the rows this drop adds, named by table
        name: items_at_least_orders
        expression: order_items >= orders

Each table keeps its own config (`tables/<ns>.<table>.yaml`) and checks; this file only
adds what no single table can say. Same rules as the table config: parsed once, standard
library only, every refusal names the file and the entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.arrivals import ExpectConfigError, ExpectedArrival, parse_expect
from contracts.config_text import yaml_error_text
from contracts.job_tables import job_table_reason
from contracts.layout import is_manifest_path
from contracts.naming import DATASETS_NAMESPACE, is_identifier, table_parts
from contracts.report import SEVERITIES, SEVERITY_ERROR
from contracts.table_config import CheckSpec, TableConfigError, config_text

FOREIGN_KEY, ROW_COUNT_RELATION = "foreign_key", "row_count_relation"
RELATION_KINDS = (FOREIGN_KEY, ROW_COUNT_RELATION)
_KEYS = {FOREIGN_KEY: {"table", "column", "references"}, ROW_COUNT_RELATION: {"expression"}}
_COMMON = {"kind", "name", "severity"}


@dataclass(frozen=True)
class DatasetConfig:
    """The tables of a dataset (in canonical order: the order their locks are taken) and
    the checks between them."""

    name: str
    tables: tuple[str, ...]
    checks: tuple[CheckSpec, ...] = ()
    # When the dataset's drops are expected (`expect:`, contracts/arrivals.py).
    expect: ExpectedArrival | None = None

    def short_name(self, table: str) -> str:
        """How a row_count_relation expression names `table`: its table part, or
        `<namespace>_<table>` when two namespaces share it."""
        namespace, name = table.split(".")
        shared = sum(other.split(".")[1] == name for other in self.tables) > 1
        return f"{namespace}_{name}" if shared else name


def parse_dataset_config(raw: Any, name: str, source: str = "dataset config") -> DatasetConfig:
    """Parse a loaded dataset config; raise TableConfigError naming the bad entry."""
    if not is_identifier(name):
        raise TableConfigError(f"{source}: dataset name {name!r} is not an identifier")
    if not isinstance(raw, dict):
        raise TableConfigError(
            f"{source}: expected a mapping with `tables`, got {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - {"tables", "checks", "expect"})
    if unknown:
        raise TableConfigError(f"{source}: unknown key(s) {unknown}")
    tables = raw.get("tables")
    if (
        not isinstance(tables, list)
        or len(tables) < 2
        or not all(_is_table(table) for table in tables)
    ):
        raise TableConfigError(
            f"{source}: `tables` must list two or more tables as <namespace>.<table>"
        )
    if len(set(tables)) != len(tables):
        raise TableConfigError(f"{source}: `tables` names a table twice")
    for table in tables:  # a drop must not write what only the audits write
        written_by_audits = job_table_reason(table)
        if written_by_audits:
            raise TableConfigError(f"{source}: `tables`: {written_by_audits}")
    config = DatasetConfig(name=name, tables=tuple(sorted(tables)))
    short = [config.short_name(table) for table in config.tables]
    if len(set(short)) != len(short):
        raise TableConfigError(
            f"{source}: tables {', '.join(config.tables)} give the "
            f"row-count names {', '.join(short)}, which repeat; rename "
            "a table or split the dataset"
        )
    checks = raw.get("checks") or []
    if not isinstance(checks, list):
        raise TableConfigError(f"{source}: `checks` must be a list")
    specs = tuple(
        _parse_relation(entry, index, config, f"{source}: checks[{index}]")
        for index, entry in enumerate(checks)
    )
    names = [spec.name for spec in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TableConfigError(f"{source}: duplicate check name(s) {repeated}; set `name:`")
    try:
        expect = parse_expect(raw.get("expect"), f"{source}: expect")
    except ExpectConfigError as exc:
        raise TableConfigError(str(exc)) from exc
    return DatasetConfig(name=name, tables=config.tables, checks=specs, expect=expect)


def dataset_name_of(uri: str) -> str:
    """The dataset a config file is for: its file name without `.yaml`."""
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    return name[: -len(".yaml")] if name.endswith(".yaml") else name


def parse_dataset_config_bytes(data: bytes, source: str, *, yaml: Any) -> DatasetConfig:
    """Parse a dataset config file's bytes (YAML; `yaml` is PyYAML, as for table configs);
    the name is the file's. Raise TableConfigError naming the bad entry."""
    text = config_text(data, source)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TableConfigError(yaml_error_text(source, exc)) from exc
    return parse_dataset_config(raw, dataset_name_of(source), source)


def _is_table(value: Any) -> bool:
    parts = table_parts(value)
    return parts is not None and parts[0] != DATASETS_NAMESPACE


def _parse_relation(entry: Any, index: int, config: DatasetConfig, where: str) -> CheckSpec:
    if not isinstance(entry, dict) or entry.get("kind") not in RELATION_KINDS:
        raise TableConfigError(
            f"{where}: expected a mapping with kind {' or '.join(RELATION_KINDS)}"
        )
    kind = entry["kind"]
    params = {key: value for key, value in entry.items() if key not in _COMMON}
    if set(params) != _KEYS[kind]:
        raise TableConfigError(
            f"{where} ({kind}): takes {', '.join(sorted(_KEYS[kind]))}; "
            f"got {', '.join(sorted(params)) or 'none'}"
        )
    severity = entry.get("severity", SEVERITY_ERROR)
    if severity not in SEVERITIES:
        raise TableConfigError(f"{where}: severity must be error or warn, got {severity!r}")
    if kind == FOREIGN_KEY:
        child, parent = params["table"], params["references"]
        parent_table, _, parent_column = str(parent).rpartition(".")
        if child not in config.tables or parent_table not in config.tables:
            raise TableConfigError(
                f"{where}: `table` and `references` must name tables of "
                f"the dataset ({', '.join(config.tables)})"
            )
        if not isinstance(params["column"], str) or not params["column"] or not parent_column:
            raise TableConfigError(
                f"{where}: `column` and the column of `references` "
                "(<namespace>.<table>.<column>) must be given"
            )
        default = f"{child.split('.')[1]}_{params['column']}_foreign_key"
        params = {**params, "references_table": parent_table, "references_column": parent_column}
    else:
        if not isinstance(params["expression"], str) or not params["expression"].strip():
            raise TableConfigError(
                f"{where}: expression must be a non-empty boolean "
                "expression over the tables' row counts"
            )
        default = f"row_count_relation_{index}"
    name = entry.get("name") or default
    if not isinstance(name, str):
        raise TableConfigError(f"{where}: name must be a string")
    return CheckSpec(name=name, kind=kind, severity=severity, params=params)


# Where a multi-table dataset is dropped: `_datasets/<name>/<drop>/...`, completed by the
# drop's `_manifest.json` (docs/datasets.md). `_` keeps it clear of every table prefix.
DATASETS_PREFIX = f"{DATASETS_NAMESPACE}/"
DATASET_CONFIGS_DIR = "datasets"  # tables/datasets/<name>.yaml


def dataset_drop(key: str) -> tuple[str, str] | None:
    """`(dataset name, drop folder)` of a key under `_datasets/<name>/<drop>/`; None for a
    key elsewhere. The drop folder ends in `/` and is what the manifest's paths are
    relative to."""
    if not key.startswith(DATASETS_PREFIX):
        return None
    parts = key[len(DATASETS_PREFIX) :].split("/")
    if len(parts) < 3 or not parts[0] or not parts[1]:
        return None
    return parts[0], key.rsplit("/", 1)[0] + "/"


def parse_tables_manifest(
    raw: Any,
    config: DatasetConfig,
    where: str,
) -> dict[str, list[tuple[str, int]]]:
    """`{"tables": {"ns.table": [{"path": "orders/part-0.parquet", "size": 123}]}}`: every
    table of the dataset, its files relative to the manifest's folder with their sizes.
    A table with no new rows lists `[]`. Raise TableConfigError naming what is wrong."""
    example = '{"tables": {"sales.orders": [{"path": "orders/part-0.parquet", "size": 123}], ...}}'
    tables = raw.get("tables") if isinstance(raw, dict) else None
    if not isinstance(tables, dict) or set(raw) != {"tables"}:
        raise TableConfigError(f"{where} is not a dataset manifest like {example}")
    listed, expected = set(tables), set(config.tables)
    if listed != expected:
        missing, unknown = sorted(expected - listed), sorted(listed - expected)
        raise TableConfigError(
            f"{where} must list every table of dataset {config.name} "
            f"({', '.join(config.tables)}) and no other"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; not in the dataset: {', '.join(unknown)}" if unknown else "")
            + " (a table without new rows lists [])"
        )
    files: dict[str, list[tuple[str, int]]] = {}
    for table in config.tables:
        entries = tables[table]
        if not isinstance(entries, list):
            raise TableConfigError(f"{where}: tables.{table} must be a list like {example}")
        files[table] = []
        for entry in entries:
            path = entry.get("path") if isinstance(entry, dict) else None
            size = entry.get("size") if isinstance(entry, dict) else None
            if (
                not is_manifest_path(path)
                or not isinstance(size, int)
                or isinstance(size, bool)
                or size < 0
            ):
                raise TableConfigError(
                    f"{where}: tables.{table} entry {entry!r} needs a relative `path` to a "
                    "data file (not _ or . prefixed) and its `size` in bytes"
                )
            files[table].append((path, size))
    paths = [path for entries in files.values() for path, _ in entries]
    if len(set(paths)) != len(paths):
        raise TableConfigError(f"{where}: a file is listed twice")
    if not paths:
        raise TableConfigError(f"{where} lists no files")
    return files
