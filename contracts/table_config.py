"""The table config (`tables/<namespace>.<table>.yaml`): one typed model, validated when
it is loaded, by the Lambdas (batching, arrival, refusing a broken config at once) and by
the Spark job (everything), with the same words wherever it is read.

Only the shape is checked here (pure Python); whether columns exist and types fit is
checked against the table schema in `spark_jobs.checks.compile_checks`, still before any
write. Standard library only and Python 3.9-compatible, like the rest of `contracts`:
the YAML text is loaded by the PyYAML module the caller hands in
(`parse_table_config_text(text, source, yaml=yaml)`), or by the caller itself
(`parse_table_config(value, source)`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from contracts.arrivals import ExpectConfigError, ExpectedArrival, parse_expect
from contracts.batching import (
    ARRIVAL_EVENT,
    BatchConfigError,
    BatchLimits,
    parse_arrival,
    parse_duration,
    parse_size,
)
from contracts.config_text import CONFIG_ERROR, yaml_error_text
from contracts.fields import ContractError
from contracts.formats import FORMATS
from contracts.metric_history import (
    BAND_METHODS,
    COLUMN_METRICS,
    DEFAULT_MIN_HISTORY,
    DEFAULT_SENSITIVITY,
    DEFAULT_WINDOW,
    MAX_WINDOW,
    METRICS,
    ROW_COUNT,
    SEASONALITIES,
    HistoryBound,
    HistoryError,
    configured_bound,
    is_history_text,
    parse_history_bound,
)
from contracts.report import SEVERITIES, SEVERITY_ERROR, SEVERITY_WARN

# The largest config either reader takes (a bigger one is refused as a config error).
MAX_CONFIG_BYTES = 1024 * 1024
TOP_LEVEL_KEYS = (
    "schema_policy",
    "partition_by",
    "schema",
    "checks",
    "batch",
    "arrival",
    "format",
    "csv",
    "parse",
    "maintenance",
    "quarantine",
    "expect",
)
SCHEMA_POLICIES = ("strict", "additive", "any")

# kind -> (required params, optional params); `column`/`columns` handled separately.
CHECK_PARAMS: dict[str, tuple[set[str], set[str]]] = {
    "not_null": (set(), set()),
    "unique": (set(), {"against_main"}),
    "accepted_values": ({"values"}, set()),
    "range": (set(), {"min", "max"}),
    "regex": ({"pattern"}, set()),
    "row_count": (set(), {"min", "max"}),
    "null_fraction": ({"max"}, set()),
    "expression": ({"sql"}, set()),
    "freshness": ({"max_age"}, set()),
    # Rows of a CSV/JSON Lines source that did not parse (added to every run that reads
    # text; configure it to allow some, or to make it a warning).
    "parse_errors": (set(), {"max"}),
    # A recorded metric (contracts/metric_history.py) against fixed or history bounds.
    "metric": ({"metric"}, {"min", "max"}),
    # A recorded metric against the band learned from its published history.
    "anomaly": (
        {"metric"},
        {"sensitivity", "window", "min_history", "seasonality", "method", "min_spread"},
    ),
}
# Kinds judged on the audit's recorded metrics (spark_jobs/monitors.py), not by their own
# aggregates; a column is needed exactly when the metric is a column's.
MONITOR_KINDS = ("metric", "anomaly")
# Bounds that may be history expressions (`min: 0.8 * avg(last(10))`), and the metric the
# expression reads: a check's own measured value.
HISTORY_BOUND_KINDS = ("row_count", "null_fraction", "range", "metric")
PARSE_ERRORS = "parse_errors"
# `encoding:` values of a CSV and the name the reader knows them by.
ENCODINGS = {
    "utf-8": "UTF-8",
    "utf8": "UTF-8",
    "latin-1": "ISO-8859-1",
    "latin1": "ISO-8859-1",
    "iso-8859-1": "ISO-8859-1",
}
NEEDS_COLUMNS = {
    "not_null",
    "unique",
    "accepted_values",
    "range",
    "regex",
    "null_fraction",
    "freshness",
}
SINGLE_COLUMN = NEEDS_COLUMNS - {"not_null", "unique"}
COMMON_KEYS = {"kind", "name", "severity", "on_fail", "column", "columns"}
# What a failing row of a row-level check does (`on_fail:`, issue 40): hold the whole
# drop on its branch (today's behaviour, the default), set the row aside in the table's
# quarantine table and publish the rest, or publish it and record the failure.
HOLD, QUARANTINE, WARN = "hold", "quarantine", "warn"
ON_FAIL = (HOLD, QUARANTINE, WARN)
# The checks that judge one row at a time, so that a failing row can be set aside.
ROW_LEVEL_KINDS = ("not_null", "accepted_values", "range", "regex", "expression", "parse_errors")
# The table beside each table that holds its quarantined rows (`<ns>.<table>__quarantine`),
# published by the same merge as the table: the table's columns, all optional, then these
# (name, Spark SQL type, nullable).
QUARANTINE_TABLE_SUFFIX = "__quarantine"
QUARANTINE_COLUMNS = (
    ("_wap_failed_checks", "array<string>", True),  # every quarantine check the row failed
    ("_wap_source_file", "string", True),  # the uploaded object it came from
    ("_wap_raw_text", "string", True),  # a row that did not parse: its text
    ("_wap_ingest_id", "string", True),
    ("_wap_quarantined_at", "timestamp", True),
    # The row's 0-based index among its source file's rows (every format).
    ("_wap_source_row", "bigint", True),
    # CSV / JSON Lines: the row's 1-based line (a CSV's header is line 1); null for parquet.
    ("_wap_source_line", "bigint", True),
)
# The report's check that judges the rows set aside against the table's gate.
QUARANTINE_GATE = "quarantine_gate"


def quarantine_table_name(table: str) -> str:
    """The quarantine table's name beside `table` (either `t` or `ns.t`)."""
    return table + QUARANTINE_TABLE_SUFFIX


PARTITION_RE = re.compile(r"^\s*(?:(\w+)\s*\(\s*(?:(\d+)\s*,\s*)?([^()]+?)\s*\)|([^()]+?))\s*$")
TRANSFORMS = {
    "identity",
    "year",
    "years",
    "month",
    "months",
    "day",
    "days",
    "hour",
    "hours",
    "bucket",
    "truncate",
}
AGE_RE = re.compile(r"^(\d+)\s*([smhd])$")
AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def history_bounds(spec: CheckSpec) -> dict[str, HistoryBound]:
    """The check's bounds that read the metric's history, by key (`min`, `max`)."""
    return {
        key: bound
        for key in ("min", "max")
        if isinstance(bound := configured_bound(spec.params, key), HistoryBound)
    }


class TableConfigError(ContractError):
    """The table config is invalid (not YAML, an unknown key or check, a bad option, ...);
    the message names the file and the entry. An ingest refused for it is REJECTED with
    reason code `config_error` (the job's own `spark_jobs.errors.TableConfigError`, for
    what only the table schema reveals, is a subclass)."""

    reason_code = CONFIG_ERROR


@dataclass(frozen=True)
class CheckSpec:
    """One audit as configured: what to check, on which columns, how bad a failure is."""

    name: str
    kind: str
    columns: tuple[str, ...] = ()
    severity: str = SEVERITY_ERROR
    params: dict[str, Any] = field(default_factory=dict)
    # hold | quarantine | warn (ON_FAIL); only row-level checks take another than hold.
    on_fail: str = HOLD


@dataclass(frozen=True)
class QuarantineGate:
    """How many rows a drop may set aside and still publish the rest (`quarantine:`):
    above either limit nothing is published and the branch stays open. None: no limit of
    that kind. The fraction is of the drop's rows (published plus quarantined)."""

    max_fraction: float | None = None
    max_rows: int | None = None

    def exceeded(self, quarantined: int, total: int) -> bool:
        """True when `quarantined` of `total` rows is more than the gate lets through."""
        if self.max_rows is not None and quarantined > self.max_rows:
            return True
        return (
            self.max_fraction is not None and total > 0 and quarantined / total > self.max_fraction
        )

    def why(self, quarantined: int, total: int) -> str | None:
        """'3 of 5 rows (60%) quarantined, above max_fraction 0.5' when `quarantined` of
        `total` is more than the gate lets through (the bound it is over), else None."""
        if not self.exceeded(quarantined, total):
            return None
        if self.max_rows is not None and quarantined > self.max_rows:
            bound = f"max_rows {self.max_rows}"
        else:
            bound = f"max_fraction {self.max_fraction:g}"
        share = f"{100 * quarantined / total:.3g}%" if total else "all"
        return f"{quarantined} of {total} rows ({share}) quarantined, above {bound}"


@dataclass(frozen=True)
class PartitionField:
    """One partition transform: `day(ts)`, `bucket(16, id)`, or a plain column."""

    transform: str
    column: str
    arg: int | None = None


@dataclass(frozen=True)
class ColumnSpec:
    """A column declared in the config (used when the table is created)."""

    name: str
    type: str
    required: bool = False


@dataclass(frozen=True)
class CsvOptions:
    """How a CSV source is split into values (`csv:`); RFC 4180 by default."""

    header: bool = True
    delimiter: str = ","
    quote: str = '"'
    escape: str = '"'  # a doubled quote inside a quoted value
    null_value: str = ""
    encoding: str = "UTF-8"  # UTF-8 (a BOM is skipped) or ISO-8859-1 (Latin-1)
    multiline: bool = True  # quoted values may hold line breaks


@dataclass(frozen=True)
class ParseOptions:
    """How text values become typed values (`parse:`), for CSV and JSON Lines.

    Patterns are Spark's datetime patterns; `time_zone` applies to timestamps without one.
    """

    timestamp_format: str | None = None
    date_format: str | None = None
    time_zone: str | None = None


@dataclass(frozen=True)
class MaintenanceOptions:
    """How the table is kept (`maintenance:`, docs/maintenance.md): compaction rewrites
    data files toward `target_file_size` once a partition has `min_files` files smaller than
    that; garbage collection keeps `retention` of history live and never sweeps an
    unreferenced file younger than `grace`. The defaults suit many small drops."""

    target_file_size: int = 128 * 1024 * 1024  # bytes
    min_files: int = 5  # Iceberg's rewrite_data_files `min-input-files` default
    retention: int = 7 * 86400  # seconds
    grace: int = 86400  # seconds


@dataclass(frozen=True)
class TableConfig:
    """Schema policy, partitioning, declared columns and checks of one table."""

    schema_policy: str = "additive"
    partition_by: tuple[PartitionField, ...] = ()
    columns: tuple[ColumnSpec, ...] = ()
    checks: tuple[CheckSpec, ...] = ()
    from_file: bool = False
    # How the orchestration batches the table's files (docs/batches.md); validated here too,
    # so a bad section is refused with the rest of the config.
    batch: BatchLimits = field(default_factory=BatchLimits)
    arrival: str = ARRIVAL_EVENT
    # How sources are read: None takes each file's extension (contracts/formats.py).
    format: str | None = None
    csv: CsvOptions = field(default_factory=CsvOptions)
    parse: ParseOptions = field(default_factory=ParseOptions)
    maintenance: MaintenanceOptions = field(default_factory=MaintenanceOptions)
    # The gate on quarantined rows; None when the config has no `quarantine:` section
    # (then no check may quarantine).
    quarantine: QuarantineGate | None = None
    # When drops are expected (`expect:`, contracts/arrivals.py); None: whenever they come.
    expect: ExpectedArrival | None = None

    @property
    def quarantine_checks(self) -> tuple[CheckSpec, ...]:
        """The checks whose failing rows go to the quarantine table, in config order."""
        return tuple(check for check in self.checks if check.on_fail == QUARANTINE)


def default_config() -> TableConfig:
    """The config used when a table has no file: additive policy, row count >= 1, and the
    row count within the band its published history learned (docs/metric-history.md), so
    that no table goes unaudited.

    Iceberg `required` columns get a not_null check too; that is added where the table
    schema is known (`checks.default_required_checks`).
    """
    return TableConfig(
        checks=(
            CheckSpec(name="row_count", kind="row_count", params={"min": 1}),
            CheckSpec(
                name="row_count_anomaly",
                kind="anomaly",
                params={"metric": ROW_COUNT, "sensitivity": DEFAULT_SENSITIVITY},
            ),
        )
    )


def config_text(data: bytes, source: str) -> str:
    """The text of a config file from its bytes (at least its first MAX_CONFIG_BYTES + 1);
    TableConfigError when it is larger than MAX_CONFIG_BYTES or not UTF-8."""
    if len(data) > MAX_CONFIG_BYTES:
        raise TableConfigError(too_large_text(source))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TableConfigError(f"{source}: not UTF-8 text: {exc}") from exc


def too_large_text(source: str) -> str:
    """What a config larger than MAX_CONFIG_BYTES is told."""
    return f"{source}: larger than {MAX_CONFIG_BYTES} bytes"


def parse_table_config_text(text: str, source: str = "table config", *, yaml: Any) -> TableConfig:
    """Parse the YAML text of a config; raise TableConfigError naming the bad entry.

    `yaml` is the PyYAML module (its `safe_load` and `YAMLError`): the contracts import
    nothing outside the standard library, and both readers ship PyYAML.
    """
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TableConfigError(yaml_error_text(source, exc)) from exc
    return parse_table_config(raw, source)


def parse_table_config(raw: Any, source: str = "table config") -> TableConfig:
    """Parse a loaded config (None: an empty file); raise TableConfigError naming the bad
    entry."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise TableConfigError(
            f"{source}: expected a mapping at the top level, got {type(raw).__name__}"
        )
    unknown = set(raw) - set(TOP_LEVEL_KEYS)
    if unknown:
        raise TableConfigError(f"{source}: unknown key(s) {sorted(unknown)}")
    policy = raw.get("schema_policy", "additive")
    if policy not in SCHEMA_POLICIES:
        raise TableConfigError(
            f"{source}: schema_policy must be one of {SCHEMA_POLICIES}, got {policy!r}"
        )
    checks = tuple(
        _parse_check(entry, i, source)
        for i, entry in enumerate(_as_list(raw.get("checks"), "checks", source))
    )
    names = [check.name for check in checks]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise TableConfigError(f"{source}: duplicate check name(s) {duplicates}; set `name:`")
    try:
        batch = BatchLimits.from_config(raw.get("batch"), f"{source}: batch")
        arrival = parse_arrival(raw.get("arrival"), f"{source}: arrival")
        expect = parse_expect(raw.get("expect"), f"{source}: expect")
    except (BatchConfigError, ExpectConfigError) as exc:
        raise TableConfigError(str(exc)) from exc
    fmt = raw.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise TableConfigError(f"{source}: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    gate = _parse_quarantine(raw.get("quarantine"), f"{source}: quarantine")
    quarantining = [check.name for check in checks if check.on_fail == QUARANTINE]
    if quarantining and gate is None:
        raise TableConfigError(
            f"{source}: check {quarantining[0]!r} has on_fail: quarantine, which needs the "
            "table's `quarantine:` gate (max_fraction and/or max_rows: above it nothing is "
            "published)"
        )
    return TableConfig(
        quarantine=gate,
        batch=batch,
        arrival=arrival,
        expect=expect,
        format=fmt,
        csv=_parse_csv(raw.get("csv"), f"{source}: csv"),
        parse=_parse_options(raw.get("parse"), f"{source}: parse"),
        maintenance=_parse_maintenance(raw.get("maintenance"), f"{source}: maintenance"),
        schema_policy=policy,
        partition_by=tuple(
            _parse_partition(entry, source)
            for entry in _as_list(raw.get("partition_by"), "partition_by", source)
        ),
        columns=tuple(
            _parse_column(entry, source) for entry in _as_list(raw.get("schema"), "schema", source)
        ),
        checks=checks,
        from_file=True,
    )


def parse_max_age(value: Any) -> int:
    """`36h`, `7d`, `30m`, `90s` (or a number of seconds) -> seconds."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    match = AGE_RE.fullmatch(str(value).strip())
    if not match or int(match.group(1)) <= 0:
        raise TableConfigError(f"max_age {value!r}: expected a positive duration like 36h, 7d, 30m")
    return int(match.group(1)) * AGE_UNITS[match.group(2)]


def _as_list(value: Any, key: str, source: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TableConfigError(f"{source}: `{key}` must be a list")
    return value


def _parse_check(entry: Any, index: int, source: str) -> CheckSpec:
    where = f"{source}: checks[{index}]"
    if not isinstance(entry, dict):
        raise TableConfigError(f"{where}: expected a mapping with `kind`")
    kind = entry.get("kind")
    if kind not in CHECK_PARAMS:
        raise TableConfigError(
            f"{where}: unknown check kind {kind!r}; known: {', '.join(sorted(CHECK_PARAMS))}"
        )
    required, optional = CHECK_PARAMS[kind]
    params = {key: value for key, value in entry.items() if key not in COMMON_KEYS}
    unknown = set(params) - required - optional
    if unknown:
        raise TableConfigError(f"{where} ({kind}): unknown option(s) {sorted(unknown)}")
    missing = required - set(params)
    if missing:
        raise TableConfigError(f"{where} ({kind}): missing option(s) {sorted(missing)}")
    columns = (
        _monitor_columns(entry, params["metric"], where)
        if kind in MONITOR_KINDS
        else _check_columns(entry, kind, where)
    )
    severity = entry.get("severity", SEVERITY_ERROR)
    if severity not in SEVERITIES:
        raise TableConfigError(f"{where}: severity must be error or warn, got {severity!r}")
    on_fail = _on_fail(entry, kind, params, f"{where} ({kind})")
    if on_fail == WARN:
        severity = SEVERITY_WARN  # the job reports and judges it as any warning
    _validate_params(kind, params, where)
    name = entry.get("name") or "_".join((*columns, kind))
    if not isinstance(name, str):
        raise TableConfigError(f"{where}: name must be a string")
    return CheckSpec(
        name=name, kind=kind, columns=columns, severity=severity, params=params, on_fail=on_fail
    )


def _on_fail(entry: dict, kind: str, params: dict, where: str) -> str:
    """The check's `on_fail:` (HOLD when absent); TableConfigError for a value it does not
    know, for a check that is not row-level, and for combinations that contradict."""
    if "on_fail" not in entry:
        return HOLD
    on_fail = entry["on_fail"]
    if not isinstance(on_fail, str) or on_fail not in ON_FAIL:
        raise TableConfigError(
            f"{where}: on_fail must be hold, quarantine or warn, got {on_fail!r}"
        )
    if kind not in ROW_LEVEL_KINDS:
        raise TableConfigError(
            f"{where}: on_fail applies to row-level checks ({', '.join(ROW_LEVEL_KINDS)}); "
            f"{kind} judges the whole drop: use severity: error or warn"
        )
    severity = entry.get("severity")
    if on_fail == QUARANTINE and severity == SEVERITY_WARN:
        raise TableConfigError(
            f"{where}: severity: warn keeps failing rows in the table; on_fail: quarantine "
            "sets them aside: choose one"
        )
    if on_fail == WARN and severity == SEVERITY_ERROR:
        raise TableConfigError(
            f"{where}: on_fail: warn is severity: warn (the rows are published and the "
            "failure recorded); drop `severity: error` or choose hold"
        )
    if on_fail == QUARANTINE and kind == PARSE_ERRORS and "max" in params:
        raise TableConfigError(
            f"{where}: max does not apply with on_fail: quarantine; the table's "
            "`quarantine:` gate bounds the rows set aside"
        )
    return on_fail


def _parse_quarantine(value: Any, where: str) -> QuarantineGate | None:
    """The `quarantine:` section: max_fraction (of the drop's rows, 0..1) and/or
    max_rows; None without the section."""
    if value is None:
        return None
    section = _section(value, ("max_fraction", "max_rows"), where)
    if not section:
        raise TableConfigError(f"{where}: give max_fraction and/or max_rows")
    fraction = section.get("max_fraction")
    if fraction is not None and (not _number(fraction) or not 0 <= fraction <= 1):
        raise TableConfigError(
            f"{where}: max_fraction must be a number in [0, 1], got {fraction!r}"
        )
    rows = section.get("max_rows")
    if rows is not None and not _count(rows):
        raise TableConfigError(f"{where}: max_rows must be a whole number >= 0, got {rows!r}")
    return QuarantineGate(max_fraction=None if fraction is None else float(fraction), max_rows=rows)


def _check_columns(entry: dict, kind: str, where: str) -> tuple[str, ...]:
    if "column" in entry and "columns" in entry:
        raise TableConfigError(f"{where}: give `column` or `columns`, not both")
    raw = entry.get("columns", [entry["column"]] if "column" in entry else [])
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(c, str) and c for c in raw):
        raise TableConfigError(f"{where}: columns must be a list of column names")
    if kind in NEEDS_COLUMNS and not raw:
        raise TableConfigError(f"{where} ({kind}): needs `column`")
    if kind in SINGLE_COLUMN and len(raw) != 1:
        raise TableConfigError(f"{where} ({kind}): takes exactly one column")
    if kind not in NEEDS_COLUMNS and raw:
        raise TableConfigError(f"{where} ({kind}): takes no columns")
    return tuple(raw)


def _monitor_columns(entry: dict, metric: Any, where: str) -> tuple[str, ...]:
    """A metric/anomaly check's column: one for a column's metric, none for row_count."""
    if metric not in METRICS:
        raise TableConfigError(
            f"{where}: metric must be one of {', '.join(METRICS)}, got {metric!r}"
        )
    column = entry.get("column")
    if "columns" in entry:
        raise TableConfigError(f"{where}: a metric is about one `column`, not `columns`")
    if metric in COLUMN_METRICS and not (isinstance(column, str) and column):
        raise TableConfigError(f"{where}: metric {metric} needs `column`")
    if metric == ROW_COUNT and column is not None:
        raise TableConfigError(f"{where}: metric row_count takes no column")
    return (column,) if column else ()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _validate_history_bounds(kind: str, params: dict, where: str) -> None:
    """Parse each bound written as a history expression, so a typo is refused with the
    config, not when the job first reads history."""
    for key in ("min", "max"):
        if is_history_text(params.get(key)):
            try:
                parse_history_bound(params[key])
            except HistoryError as exc:
                raise TableConfigError(f"{where} ({kind}): {key}: {exc}") from exc


def _validate_anomaly(params: dict, where: str) -> None:
    sensitivity = params.get("sensitivity", DEFAULT_SENSITIVITY)
    if not _number(sensitivity) or sensitivity <= 0:
        raise TableConfigError(f"{where}: sensitivity must be a positive number")
    for key, default, low in (
        ("window", DEFAULT_WINDOW, 2),
        ("min_history", DEFAULT_MIN_HISTORY, 2),
    ):
        value = params.get(key, default)
        if not _count(value) or not low <= value <= MAX_WINDOW:
            raise TableConfigError(
                f"{where}: {key} must be a whole number from {low} to {MAX_WINDOW}"
            )
    if params.get("min_history", DEFAULT_MIN_HISTORY) > params.get("window", DEFAULT_WINDOW):
        raise TableConfigError(f"{where}: min_history cannot exceed window")
    if params.get("seasonality") not in (None, *SEASONALITIES):
        raise TableConfigError(f"{where}: seasonality must be {', '.join(SEASONALITIES)}")
    if params.get("method", BAND_METHODS[0]) not in BAND_METHODS:
        raise TableConfigError(f"{where}: method must be one of {', '.join(BAND_METHODS)}")
    spread = params.get("min_spread", 0.01)
    if not _number(spread) or not 0 <= spread <= 1:
        raise TableConfigError(f"{where}: min_spread must be a number in [0, 1]")


def _validate_params(kind: str, params: dict, where: str) -> None:
    if kind in HISTORY_BOUND_KINDS:
        _validate_history_bounds(kind, params, where)
    if kind == "anomaly":
        _validate_anomaly(params, where)
    elif kind == "metric":
        if "min" not in params and "max" not in params:
            raise TableConfigError(f"{where} (metric): needs `min` and/or `max`")
        for key in ("min", "max"):
            if key in params and not (_number(params[key]) or is_history_text(params[key])):
                raise TableConfigError(
                    f"{where} (metric): {key} must be a number or a history bound such as "
                    "`0.8 * avg(last(10))`"
                )
    elif kind == "accepted_values":
        values = params["values"]
        if (
            not isinstance(values, list)
            or not values
            or any(isinstance(v, (dict, list)) for v in values)
        ):
            raise TableConfigError(f"{where}: values must be a non-empty list of scalars")
    elif kind in ("range", "row_count"):
        if "min" not in params and "max" not in params:
            raise TableConfigError(f"{where} ({kind}): needs `min` and/or `max`")
        if kind == "row_count" and any(
            not is_history_text(params.get(k))
            and (not isinstance(params.get(k, 0), int) or params.get(k, 0) < 0)
            for k in ("min", "max")
        ):
            raise TableConfigError(
                f"{where}: row_count min/max must be non-negative integers or history bounds"
            )
    elif kind == "regex":
        pattern = params["pattern"]
        # Syntax is checked with Java's regex engine (the one Spark runs) in checks.py.
        if not isinstance(pattern, str) or not pattern:
            raise TableConfigError(f"{where}: pattern must be a non-empty string")
    elif kind == "null_fraction":
        limit = params["max"]
        if not is_history_text(limit) and (not _number(limit) or not 0 <= limit <= 1):
            raise TableConfigError(
                f"{where}: null_fraction max must be a number in [0, 1] or a history bound"
            )
    elif kind == "expression":
        if not isinstance(params["sql"], str) or not params["sql"].strip():
            raise TableConfigError(f"{where}: sql must be a non-empty SQL boolean expression")
    elif kind == "freshness":
        try:
            parse_max_age(params["max_age"])
        except TableConfigError as exc:
            raise TableConfigError(f"{where}: {exc}") from exc
    elif kind == PARSE_ERRORS and not _count(params.get("max", 0)):
        raise TableConfigError(f"{where}: parse_errors max must be a non-negative integer")
    elif kind == "unique" and not isinstance(params.get("against_main", False), bool):
        raise TableConfigError(f"{where}: against_main must be true or false")


def _parse_partition(entry: Any, source: str) -> PartitionField:
    match = PARTITION_RE.fullmatch(entry) if isinstance(entry, str) else None
    if not match:
        raise TableConfigError(f"{source}: bad partition_by entry {entry!r}")
    transform, arg, column, plain = match.groups()
    if plain is not None:
        return PartitionField("identity", plain.strip())
    transform = transform.lower()
    if transform not in TRANSFORMS:
        raise TableConfigError(f"{source}: unknown partition transform {transform!r}")
    if (transform in ("bucket", "truncate")) != (arg is not None):
        raise TableConfigError(f"{source}: {entry!r}: bucket/truncate take a width, others do not")
    # `days(ts)` and `day(ts)` mean the same transform.
    return PartitionField(transform.rstrip("s"), column.strip(), int(arg) if arg else None)


def _parse_column(entry: Any, source: str) -> ColumnSpec:
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("name"), str)
        or not isinstance(entry.get("type"), str)
    ):
        raise TableConfigError(f"{source}: schema entries need `name` and `type` strings")
    unknown = set(entry) - {"name", "type", "required"}
    if unknown:
        raise TableConfigError(
            f"{source}: schema entry {entry['name']!r}: unknown key(s) {sorted(unknown)}"
        )
    return ColumnSpec(entry["name"], entry["type"], bool(entry.get("required", False)))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _section(value: Any, keys: tuple[str, ...], where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TableConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise TableConfigError(f"{where}: unknown option(s) {unknown}; known: {', '.join(keys)}")
    return value


def _parse_csv(value: Any, where: str) -> CsvOptions:
    section = _section(
        value,
        ("header", "delimiter", "quote", "escape", "null_value", "encoding", "multiline"),
        where,
    )
    defaults = CsvOptions()
    for key in ("header", "multiline"):
        if not isinstance(section.get(key, True), bool):
            raise TableConfigError(f"{where}: {key} must be true or false")
    for key in ("delimiter", "quote", "escape"):
        if key in section and (not isinstance(section[key], str) or len(section[key]) != 1):
            raise TableConfigError(
                f'{where}: {key} must be one character, got {section[key]!r} (write a tab as "\\t")'
            )
    if not isinstance(section.get("null_value", ""), str):
        raise TableConfigError(f"{where}: null_value must be a string")
    encoding = str(section.get("encoding", "utf-8")).strip().lower()
    if encoding not in ENCODINGS:
        raise TableConfigError(
            f"{where}: encoding must be utf-8 or latin-1, got {section['encoding']!r}"
        )
    delimiter = section.get("delimiter", defaults.delimiter)
    if delimiter in (section.get("quote", defaults.quote), "\n", "\r"):
        raise TableConfigError(
            f"{where}: the delimiter {delimiter!r} cannot be the quote or a line break"
        )
    return CsvOptions(
        header=section.get("header", True),
        delimiter=delimiter,
        quote=section.get("quote", defaults.quote),
        escape=section.get("escape", defaults.escape),
        null_value=section.get("null_value", ""),
        encoding=ENCODINGS[encoding],
        multiline=section.get("multiline", True),
    )


def _parse_options(value: Any, where: str) -> ParseOptions:
    keys = ("timestamp_format", "date_format", "time_zone")
    section = _section(value, keys, where)
    for key in keys:
        if key in section and (not isinstance(section[key], str) or not section[key].strip()):
            raise TableConfigError(f"{where}: {key} must be a non-empty string")
    # Spark checks the patterns and zone when it reads; the job turns its error into a
    # config error before any write (spark_jobs/text_sources.py).
    return ParseOptions(**{key: section[key] for key in keys if key in section})


# Below a megabyte, "compacted" files would be as small as the drops themselves.
MIN_TARGET_FILE_SIZE = 1000 * 1000


def _maintenance_size(value: Any, where: str) -> int:
    size = _batch_rule(parse_size, value, where)
    if size < MIN_TARGET_FILE_SIZE:
        raise TableConfigError(f"{where} must be at least 1MB, got {value!r}")
    return size


def _maintenance_duration(value: Any, where: str) -> int:
    if value == 0 or (isinstance(value, str) and value.strip() in ("0", "0s", "0m", "0h", "0d")):
        return 0  # a retention or grace of nothing is a choice (tests, a scratch table)
    return _batch_rule(parse_duration, value, where)


def _batch_rule(parse: Any, value: Any, where: str) -> int:
    """Sizes and durations are read as `batch:` reads them (contracts/batching.py)."""
    try:
        return parse(value, where)
    except BatchConfigError as exc:
        raise TableConfigError(str(exc)) from exc


def _parse_maintenance(value: Any, where: str) -> MaintenanceOptions:
    section = _section(value, ("target_file_size", "min_files", "retention", "grace"), where)
    defaults = MaintenanceOptions()
    min_files = section.get("min_files", defaults.min_files)
    if not _count(min_files) or min_files < 2:
        raise TableConfigError(f"{where}.min_files must be a whole number >= 2, got {min_files!r}")
    return MaintenanceOptions(
        target_file_size=_maintenance_size(section["target_file_size"], f"{where}.target_file_size")
        if "target_file_size" in section
        else defaults.target_file_size,
        min_files=min_files,
        retention=_maintenance_duration(section["retention"], f"{where}.retention")
        if "retention" in section
        else defaults.retention,
        grace=_maintenance_duration(section["grace"], f"{where}.grace")
        if "grace" in section
        else defaults.grace,
    )
