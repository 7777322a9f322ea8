"""A DuckDB query that lists a failed check's violating rows, built from the audit report.

`wap show` prints one per failed check as a `wap query` command to copy. The predicates
mirror the job's (`spark_jobs/checks.py`): NULL never violates `accepted_values`,
`range` or `regex`, and an `expression` is violated when it is false (not NULL). The
report carries each check's kind, columns and threshold; values from it become quoted
literals and columns quoted identifiers. Checks about the batch as a whole (`row_count`,
`freshness`) get the aggregate they judged instead of a row listing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from contracts.naming import IDENTIFIER, table_parts

# A name is left bare only when it is one of our identifiers (contracts/naming.py).
_BARE = IDENTIFIER
# DuckDB's `reserved` and `type_function` keywords (`duckdb_keywords()`): not usable as bare
# column names. A test checks the list against the pinned DuckDB.
KEYWORDS = frozenset(
    """all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create default deferrable desc describe distinct do else end except false fetch
    for foreign from group having in initially intersect into lambda lateral leading limit not
    null offset on only or order pivot pivot_longer pivot_wider placing primary qualify
    references returning select show some summarize symmetric table then to trailing true union
    unique unpivot using variadic when where window with anti asof at authorization binary by
    collation columns concurrently cross freeze full generated glob ilike inner is isnull join
    left like map natural notnull outer overlaps positional right semi similar struct
    tablesample try_cast tuple unpack verbose""".split()  # noqa: SIM905 (a list of words)
)


def ident(name: str) -> str:
    """A DuckDB identifier: bare when it can be, else double-quoted."""
    text = str(name)
    if _BARE.fullmatch(text) and text not in KEYWORDS:
        return text
    return '"' + text.replace('"', '""') + '"'


def literal(value: Any) -> str:
    """A DuckDB literal for a JSON value of the report."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return "'" + text.replace("'", "''") + "'"


def _not_null(cols: list[str], threshold: Any) -> str | None:
    return " OR ".join(f"{ident(c)} IS NULL" for c in cols) or None


def _unique(cols: list[str], threshold: Any) -> str | None:
    if not cols:
        return None
    keys = ", ".join(ident(c) for c in cols)
    present = " AND ".join(f"{ident(c)} IS NOT NULL" for c in cols)
    # Every row of a duplicated key, as the job's samples show them.
    return f"{present} QUALIFY count(*) OVER (PARTITION BY {keys}) > 1"


def _accepted(cols: list[str], threshold: Any) -> str | None:
    values = (threshold or {}).get("values")
    if len(cols) != 1 or not isinstance(values, list) or not values:
        return None
    column = ident(cols[0])
    return f"{column} IS NOT NULL AND {column} NOT IN ({', '.join(literal(v) for v in values)})"


def _range(cols: list[str], threshold: Any) -> str | None:
    low, high = (threshold or {}).get("min"), (threshold or {}).get("max")
    if len(cols) != 1 or (low is None and high is None):
        return None
    column = ident(cols[0])
    outside = [f"{column} < {literal(low)}"] if low is not None else []
    outside += [f"{column} > {literal(high)}"] if high is not None else []
    return f"{column} IS NOT NULL AND ({' OR '.join(outside)})"


def _regex(cols: list[str], threshold: Any) -> str | None:
    pattern = (threshold or {}).get("pattern")
    if len(cols) != 1 or not isinstance(pattern, str):
        return None
    column = ident(cols[0])
    return f"{column} IS NOT NULL AND NOT regexp_matches({column}, {literal(pattern)})"


def _expression(cols: list[str], threshold: Any) -> str | None:
    sql = (threshold or {}).get("sql")
    # Spark SQL, shown as configured: most boolean expressions read the same in DuckDB.
    return f"({sql}) IS FALSE" if isinstance(sql, str) and sql.strip() else None


_PREDICATES: dict[str, Callable[[list[str], Any], str | None]] = {
    "not_null": _not_null,
    "null_fraction": _not_null,
    "unique": _unique,
    "accepted_values": _accepted,
    "range": _range,
    "regex": _regex,
    "expression": _expression,
}


def table_sql(table: str) -> str | None:
    """`ns.table` as SQL (each part an identifier); None unless it is a valid table name."""
    parts = table_parts(str(table))
    if parts is None:
        return None
    return ".".join(ident(p) for p in parts)


def first_rows_query(table: str, limit: int = 20) -> str | None:
    """`SELECT * FROM ns.table LIMIT n`, None unless `table` is a valid table name."""
    name = table_sql(table)
    return None if name is None else f"SELECT * FROM {name} LIMIT {int(limit)}"  # noqa: S608


def violation_query(check: dict[str, Any], table: str) -> str | None:
    """SQL over `table` (`ns.table`) for one check of the report; None when none fits."""
    name = table_sql(table)
    if name is None:
        return None
    kind = str(check.get("kind") or "")
    cols = [str(c) for c in check.get("columns") or []]
    threshold = check.get("threshold")
    if kind == "row_count":
        return f"SELECT count(*) AS row_count FROM {name}"  # noqa: S608 (quoted parts)
    if kind == "freshness" and len(cols) == 1:
        return f"SELECT max({ident(cols[0])}) AS newest FROM {name}"  # noqa: S608
    build = _PREDICATES.get(kind)
    predicate = build(cols, threshold) if build is not None else None
    if predicate is None:
        return None
    return f"SELECT * FROM {name} WHERE {predicate}"  # noqa: S608 (identifiers, literals)
