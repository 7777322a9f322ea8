"""Validation and quoting of every name that reaches Spark SQL, a URL or a catalog.

Table identifiers are ours to restrict (`[a-z_][a-z0-9_]*`); column names come from
files and may be anything (`select`, `my col`), so they are always backtick-quoted.
"""

from __future__ import annotations

import re

from spark_jobs.errors import InvalidArgumentError

IDENTIFIER_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
# Nessie's reference-name rule (org.projectnessie.model.Validation.REF_NAME_REGEX).
NESSIE_REF_RE = re.compile(r"^[A-Za-z](((?![.][.])[A-Za-z0-9./_-])*[A-Za-z0-9._-])?$")
INGEST_ID_RE = re.compile(r"^[0-9a-f]{8,64}$")


def validate_identifier(name: str, what: str = "identifier") -> str:
    """Return `name` if it matches `[a-z_][a-z0-9_]*`, else raise InvalidArgumentError."""
    if not isinstance(name, str) or not IDENTIFIER_RE.fullmatch(name):
        raise InvalidArgumentError(f"invalid {what} {name!r}: must match [a-z_][a-z0-9_]*")
    return name


def split_table_name(table: str) -> tuple[str, str]:
    """Split and validate `namespace.table`."""
    parts = table.split(".") if isinstance(table, str) else []
    if len(parts) != 2:
        raise InvalidArgumentError(f"invalid table {table!r}: expected <namespace>.<table>")
    return validate_identifier(parts[0], "namespace"), validate_identifier(parts[1], "table name")


def validate_branch(branch: str) -> str:
    """Return `branch` if it is a valid Nessie reference name."""
    if not isinstance(branch, str) or len(branch) > 250 or not NESSIE_REF_RE.fullmatch(branch):
        raise InvalidArgumentError(f"invalid branch name {branch!r}")
    return branch


def validate_ingest_id(ingest_id: str) -> str:
    """Return `ingest_id` if it is lower-case hex (the trigger makes 16 chars)."""
    if not isinstance(ingest_id, str) or not INGEST_ID_RE.fullmatch(ingest_id):
        raise InvalidArgumentError(f"invalid ingest id {ingest_id!r}: expected 8-64 hex chars")
    return ingest_id


def quote(name: str) -> str:
    """Backtick-quote one name part for Spark SQL (any characters allowed)."""
    return "`" + name.replace("`", "``") + "`"


def quote_parts(*parts: str) -> str:
    """Quote and dot-join a multi-part name: catalog, namespace, table."""
    return ".".join(quote(part) for part in parts)
