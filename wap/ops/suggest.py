"""`wap suggest`: a commented table config from a profile of sample files.

`suggest_config` checks the files and the reading options, profiles the files as the job
would read them (wap/ops/profiling.py), turns the profile into checks (`suggest`), each with
the fact of the sample that supports it, and writes them as the YAML of a table config
(`config_yaml`) that the service's own parser accepts (checked before it is written).

The rules (docs/cli.md, "wap suggest"):
- `schema:` every column with its type; `required: true` only where the config given says so.
- `row_count` min 1, and `not_null` for each column without nulls.
- `unique` for a key, `against_main: true`: an integer or string column whose name says key
  (`id`, `*_id`, `*Id`, `*_key`, `uuid`), with as many distinct values as rows and no null.
- `accepted_values` for a string column with at most 20 distinct values, each seen twice
  on average (distinct values at most half the rows).
- `range` for numbers (not for keys, which grow): the sample's range widened by 10% of its
  span on each side, rounded outward; a minimum of 0 or more is never widened below 0.
  Dates and timestamps get a minimum only: a later drop carries later dates. No range over
  NaN (Spark sorts it above every number, so a range check would fail it).
- `anomaly` checks (severity warn) on the row count, and on the null fraction of each
  column that has nulls.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

from contracts.metric_history import DEFAULT_MIN_HISTORY, DEFAULT_SENSITIVITY, DEFAULT_WINDOW
from contracts.report import SEVERITY_WARN
from contracts.table_config import (
    TableConfig,
    TableConfigError,
    config_text,
    parse_table_config,
    parse_table_config_text,
)
from wap.exceptions import InvalidInputError, OpsError
from wap.ops.profile import MAX_VALUES, ColumnProfile, Profile

# The config sections that say how files are read: a config given to `wap suggest` (or
# its flags) lends them to the profile, and the suggested config repeats them.
READING_KEYS = ("format", "csv", "parse")
MAX_VALUE_SHARE = 0.5  # accepted_values: distinct values at most this share of the rows
MARGIN = Decimal("0.1")  # a range is widened by this share of the sample's span
# The anomaly checks suggested take the contract's defaults, written out (3, not 3.0).
SENSITIVITY = int(DEFAULT_SENSITIVITY) if DEFAULT_SENSITIVITY % 1 == 0 else DEFAULT_SENSITIVITY
WINDOW, MIN_HISTORY = DEFAULT_WINDOW, DEFAULT_MIN_HISTORY
NAMED_FILES = 3  # the header comment names this many sample files, then counts the rest
INTEGER_TYPES = ("tinyint", "smallint", "int", "bigint")
KEY_NAME = re.compile(r"(?:^|_)(?:id|key|uuid|guid|pk)$", re.IGNORECASE)
CAMEL_KEY_NAME = re.compile(r"[a-z0-9](?:Id|ID|Key|Uuid)$")


@dataclass(frozen=True)
class Suggestion:
    """One check as the config writes it, and what in the sample supports it."""

    check: dict[str, Any]
    reason: str


@dataclass(frozen=True)
class Suggested:
    """What `wap suggest` proposes for a sample: the profile, the reading sections it was
    read with, the checks, and the config's YAML text."""

    profile: Profile
    reading: dict[str, Any]
    checks: tuple[Suggestion, ...]
    text: str
    output: Path | None = None

    def document(self) -> dict[str, Any]:
        """The `--json` document (docs/cli-schemas/suggest.json)."""
        profile = self.profile
        return {
            "files": list(profile.files),
            "rows": profile.rows,
            "parse_errors": profile.parse_errors,
            "types_inferred": profile.inferred,
            "columns": [
                {
                    "name": c.name,
                    "type": c.type,
                    "nulls": c.nulls,
                    "distinct": c.distinct,
                    "min": _json_value(_scalar(c.minimum, c.type)),
                    "max": _json_value(_scalar(c.maximum, c.type)),
                }
                for c in profile.columns
            ],
            "checks": [{"check": s.check, "reason": s.reason} for s in self.checks],
            "config": self.text,
            "output": str(self.output) if self.output is not None else None,
        }


def reading_config(
    config_path: Path | None, overrides: dict[str, dict[str, Any] | str]
) -> dict[str, Any]:
    """The reading sections (`format:`, `csv:`, `parse:`) of the config file given (if
    any), with the flags' values over them; InvalidInputError when the service's parser
    refuses the config or the result."""
    import yaml

    raw: dict[str, Any] = {}
    if config_path is not None:
        if not config_path.is_file():
            raise InvalidInputError(f"no such config file: {config_path}")
        source = str(config_path)
        try:
            data = config_path.read_bytes()
            text = config_text(data, source)
            parse_table_config_text(text, source, yaml=yaml)  # refused as the service would
        except (OSError, TableConfigError) as exc:
            raise InvalidInputError(str(exc)) from exc
        loaded = yaml.safe_load(text) or {}
        # The columns too: a text file's values parse to the types they declare.
        raw = {key: loaded[key] for key in (*READING_KEYS, "schema") if key in loaded}
    for key, value in overrides.items():
        if isinstance(value, dict):
            raw[key] = {**(raw.get(key) or {}), **value}
        else:
            raw[key] = value
    return raw


def table_config(raw: dict[str, Any]) -> TableConfig:
    """`raw` through the service's parser (InvalidInputError naming the bad entry)."""
    try:
        return parse_table_config(raw, "the reading options")
    except TableConfigError as exc:
        raise InvalidInputError(str(exc)) from exc


def suggest_config(
    paths: Sequence[Path],
    *,
    config_path: Path | None = None,
    overrides: dict[str, Any] | None = None,
    output: Path | None = None,
    force: bool = False,
) -> Suggested:
    """Profile `paths` and suggest a table config for them; with `output`, write it there
    (refused when the file exists, unless `force`). Everything is checked before Spark
    starts, and nothing is written unless every step succeeded."""
    from wap.ops.operations import check_source_file
    from wap.ops.profiling import profile_files, sample_session

    if not paths:
        raise InvalidInputError("no sample files given")
    raw = reading_config(config_path, overrides or {})
    config = table_config(raw)
    for path in paths:
        check_source_file(path, config.format)
    if output is not None:
        _check_output(output, force)
    with sample_session() as spark:
        profile = profile_files(spark, paths, config)
    reading = {key: raw[key] for key in READING_KEYS if raw.get(key) not in (None, {})}
    checks = suggest(profile)
    text = config_yaml(profile, reading, checks)
    _accepted(text)
    if output is not None:
        _write(output, text)
    return Suggested(profile, reading, checks, text, output)


def suggest(profile: Profile) -> tuple[Suggestion, ...]:
    """The checks the sample supports, table-level first, then column by column, then the
    anomaly checks."""
    rows = profile.rows
    found = [Suggestion({"kind": "row_count", "min": 1}, f"the sample has {rows:,} rows")]
    for column in profile.columns:
        found += _column_checks(column, rows)
    found.append(
        Suggestion(
            _anomaly("row_count_anomaly", "row_count"),
            f"the sample has {rows:,} rows; {_band_text()}",
        )
    )
    for column in profile.columns:
        if column.nulls:
            found.append(
                Suggestion(
                    _anomaly(f"{column.name}_null_fraction_anomaly", "null_fraction", column.name),
                    f"{column.nulls:,} nulls in {rows:,} rows ({_share(column.nulls, rows)})",
                )
            )
    return tuple(found)


def _column_checks(column: ColumnProfile, rows: int) -> list[Suggestion]:
    found = []
    name = column.name
    if column.nulls == 0:
        found.append(Suggestion({"kind": "not_null", "column": name}, f"0 nulls in {rows:,} rows"))
    if _is_key(column, rows):
        found.append(
            Suggestion(
                {"kind": "unique", "column": name, "against_main": True},
                f"{column.distinct:,} distinct values in {rows:,} rows, none null; "
                "the name says key (also looked up on main: a key, or a file, dropped "
                "twice fails)",
            )
        )
    elif _few_values(column, rows):
        assert column.values is not None
        found.append(
            Suggestion(
                {"kind": "accepted_values", "column": name, "values": list(column.values)},
                f"{column.distinct:,} distinct values in {rows - column.nulls:,} non-null rows",
            )
        )
    bounds = None if _key_name(column.name) else _range(column)  # keys grow, no range
    if bounds is not None:
        check, reason = bounds
        found.append(Suggestion({"kind": "range", "column": name, **check}, reason))
    return found


def _is_key(column: ColumnProfile, rows: int) -> bool:
    return (
        (column.type in INTEGER_TYPES or column.type == "string")
        and rows >= 2
        and column.nulls == 0
        and column.distinct == rows
        and _key_name(column.name)
    )


def _key_name(name: str) -> bool:
    return bool(KEY_NAME.search(name) or CAMEL_KEY_NAME.search(name))


def _few_values(column: ColumnProfile, rows: int) -> bool:
    non_null = rows - column.nulls
    return (
        column.type == "string"
        and column.values is not None
        and 0 < len(column.values) <= MAX_VALUES
        and len(column.values) <= MAX_VALUE_SHARE * non_null
    )


def _range(column: ColumnProfile) -> tuple[dict[str, Any], str] | None:
    """The bounds of a `range` check and its reason, or None."""
    low, high = column.minimum, column.maximum
    if low is None or high is None:
        return None
    seen = f"sample range {_shown(low, column.type)} .. {_shown(high, column.type)}"
    if isinstance(low, datetime | date):
        bound = _earliest(low, high)
        return {"min": _scalar(bound, column.type)}, (
            f"{seen}; widened by 10% of the span, no max: a later drop carries later dates"
        )
    if column.nan:
        return None
    low, high = Decimal(str(low)), Decimal(str(high))
    if not (low.is_finite() and high.is_finite()):
        return None
    margin = (high - low) * MARGIN or abs(high) * MARGIN
    floor, ceiling = low, high  # a column of zeros keeps its one value
    if margin:
        step = _step(margin, column.type)
        floor = ((low - margin) / step).to_integral_value(ROUND_FLOOR) * step
        ceiling = ((high + margin) / step).to_integral_value(ROUND_CEILING) * step
    kept = ""
    if low >= 0 > floor:
        floor, kept = Decimal(0), ", min kept at 0: no negatives"
    number = int if column.type in INTEGER_TYPES else _number
    return {"min": number(floor), "max": number(ceiling)}, (
        f"{seen}; widened by 10% of the span{kept}"
    )


def _step(margin: Decimal, type_: str) -> Decimal:
    """What bounds are rounded to: the margin's order of magnitude, at least a whole
    number for integers and one unit of a decimal's scale."""
    step = Decimal(1).scaleb(math.floor(margin.log10()))
    if type_ in INTEGER_TYPES:
        return max(step, Decimal(1))
    scale = re.fullmatch(r"decimal\(\d+,\s*(\d+)\)", type_)
    if scale:
        return max(step, Decimal(1).scaleb(-int(scale.group(1))))
    return step


def _earliest(low: date, high: date) -> date:
    """The sample's earliest date or time, less 10% of the span, to a whole day or second."""
    span = high - low
    if isinstance(low, datetime):
        earlier = low - span * 0.1
        return earlier.replace(microsecond=0)
    return low - timedelta(days=math.ceil(span.days * 0.1))


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _anomaly(name: str, metric: str, column: str | None = None) -> dict[str, Any]:
    check: dict[str, Any] = {"kind": "anomaly", "name": name, "metric": metric}
    if column is not None:
        check["column"] = column
    return {
        **check,
        "sensitivity": SENSITIVITY,
        "window": WINDOW,
        "min_history": MIN_HISTORY,
        "severity": SEVERITY_WARN,
    }


def _band_text() -> str:
    return (
        f"warns outside mean ± {SENSITIVITY}·stddev of the last {WINDOW} published drops "
        f"(and, until {MIN_HISTORY} exist, says so)"
    )


def _share(part: int, whole: int) -> str:
    """`100%`, `12%`, `2.5%`, `0.12%`, `<0.01%`: two significant digits, never an exponent,
    and a part short of the whole never rounded up to 100%."""
    if not whole:
        return "-"
    percent = 100 * part / whole
    if part == whole:
        return "100%"
    if percent >= 10:
        return f"{min(round(percent), 99)}%"
    if part and percent < 0.01:
        return "<0.01%"
    return f"{percent:.2g}%"


def _scalar(value: Any, type_: str) -> Any:
    """A profiled value as a config writes it: a date `2026-01-31`, a timestamp in UTC
    with `Z` (one without a zone without it), a decimal as a number."""
    if isinstance(value, datetime):
        if type_ == "timestamp":
            return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return _number(value)
    return value


def _shown(value: Any, type_: str) -> str:
    """A sample's value in a comment: a float to 6 significant digits."""
    if isinstance(value, float):
        return repr(float(f"{value:.6g}"))  # 990.0, 0.333333, 1e-05
    return str(_scalar(value, type_))


def _json_value(value: Any) -> Any:
    """NaN and infinity as text: JSON has no such numbers."""
    return str(value) if isinstance(value, float) and not math.isfinite(value) else value


def config_yaml(profile: Profile, reading: dict[str, Any], checks: Sequence[Suggestion]) -> str:
    """The suggested config as YAML, each check under a comment saying why."""
    names = ", ".join(Path(uri).name for uri in profile.files[:NAMED_FILES])
    if len(profile.files) > NAMED_FILES:
        names += f" and {len(profile.files) - NAMED_FILES:,} more"
    lines = [
        f"# Suggested by `wap suggest` from {names} ({profile.rows:,} rows).",
        "# Review before use: each check says what in the sample supports it",
        "# (reference: tables/README.md).",
    ]
    if profile.parse_errors:
        lines.append(
            f"# {profile.parse_errors:,} row(s) of the sample did not parse with these types: "
            "the job would count them as parse errors."
        )
    for key, value in reading.items():
        lines.append(f"{key}: {_flow(value)}")
    lines.append("schema:")
    if profile.inferred:
        lines.append("  # types inferred from the text (int read as bigint): check them")
    for column in profile.columns:
        entry: dict[str, Any] = {"name": column.name, "type": column.type}
        if column.required:
            entry["required"] = True
        lines.append(f"  - {_flow(entry)}")
    lines.append("checks:")
    for suggestion in checks:
        lines.append(f"  # {suggestion.reason}")
        for i, (key, value) in enumerate(suggestion.check.items()):
            lines.append(f"  {'- ' if i == 0 else '  '}{key}: {_flow(value)}")
    return "\n".join(lines) + "\n"


def _flow(value: Any) -> str:
    """`value` as one line of YAML (flow style, quoted where YAML needs it)."""
    import yaml

    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, allow_unicode=True)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _accepted(text: str) -> None:
    """The suggested config through the service's parser: never write one it refuses."""
    import yaml

    try:
        parse_table_config_text(text, "the suggested config", yaml=yaml)
    except TableConfigError as exc:  # a bug of the suggestions, not of the input
        raise OpsError(f"the suggested config is not valid (please report): {exc}") from exc


def _check_output(output: Path, force: bool) -> None:
    if output.exists() and not output.is_file():
        raise InvalidInputError(f"{output} is not a file")
    if output.exists() and not force:
        raise InvalidInputError(f"{output} exists; --force overwrites it")
    if not output.parent.is_dir():
        raise InvalidInputError(f"no such directory: {output.parent}")


def _write(output: Path, text: str) -> None:
    """Write `text` whole or not at all (a temporary file renamed over `output`)."""
    partial = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(output)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise OpsError(f"cannot write {output}: {exc}") from exc
