"""Validation and quoting of every name that reaches Spark SQL, a URL or a catalog.

Table identifiers are ours to restrict (contracts/naming.py); column names come from
files and may be anything (`select`, `my col`), so they are always backtick-quoted.
"""

from __future__ import annotations

from contracts import naming
from spark_jobs.errors import InvalidArgumentError

# Nessie's limit on a reference name's length (Validation.MAX_REF_NAME_LENGTH is longer; a
# branch name is ours and short, so anything longer is a caller's mistake).
MAX_BRANCH_NAME = 250


def validate_identifier(name: str, what: str = "identifier") -> str:
    """Return `name` if it is an identifier (contracts/naming.py), else raise
    InvalidArgumentError."""
    if not naming.is_identifier(name):
        raise InvalidArgumentError(
            f"invalid {what} {name!r}: must match {naming.IDENTIFIER.pattern}"
        )
    return name


def split_table_name(table: str) -> tuple[str, str]:
    """Split and validate `namespace.table`."""
    parts = table.split(".") if isinstance(table, str) else []
    if len(parts) != 2:
        raise InvalidArgumentError(f"invalid table {table!r}: expected <namespace>.<table>")
    return validate_identifier(parts[0], "namespace"), validate_identifier(parts[1], "table name")


def validate_branch(branch: str) -> str:
    """Return `branch` if it is a valid Nessie reference name."""
    if not naming.is_ref_name(branch) or len(branch) > MAX_BRANCH_NAME:
        raise InvalidArgumentError(f"invalid branch name {branch!r}")
    return branch


def validate_ingest_id(ingest_id: str) -> str:
    """Return `ingest_id` if it is an id as the trigger makes them (16 lower-case hex)."""
    if not naming.is_ingest_id(ingest_id):
        raise InvalidArgumentError(
            f"invalid ingest id {ingest_id!r}: expected {naming.INGEST_ID_LENGTH} lower-case "
            "hex characters"
        )
    return ingest_id


def quote(name: str) -> str:
    """Backtick-quote one name part for Spark SQL (any characters allowed)."""
    return "`" + name.replace("`", "``") + "`"


def quote_parts(*parts: str) -> str:
    """Quote and dot-join a multi-part name: catalog, namespace, table."""
    return ".".join(quote(part) for part in parts)
