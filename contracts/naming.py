"""Names that cross a boundary, defined once: table identifiers, ingest ids, Nessie reference
names and the branches WAP creates.

The trigger makes them, the job validates what it is given, the CLI and the dashboard
parse what people type, and the Nessie double refuses what Nessie refuses: all with these.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone

IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
IDENTIFIER_RULE = "lower-case letters, digits and _, not starting with a digit"
TABLE_NAME_RULE = f"<namespace>.<table>, each in {IDENTIFIER_RULE}"
# The source bucket's top folder of multi-table datasets (docs/datasets.md): never a table's
# namespace, so `<namespace>/<table>/` routing and dataset drops cannot meet.
DATASETS_NAMESPACE = "_datasets"
# Nessie's reference-name rule (org.projectnessie.model.Validation.REF_NAME_REGEX), without
# anchors so that reference specs (`name@hash~1`) can embed it; match names with fullmatch.
NESSIE_REF_NAME_PATTERN = r"[A-Za-z](((?![.][.])[A-Za-z0-9./_-])*[A-Za-z0-9._-])?"
NESSIE_REF_NAME = re.compile(NESSIE_REF_NAME_PATTERN)
NESSIE_REF_NAME_RULE = (
    "Reference name must start with a letter, followed by letters, digits, one of the ./_- "
    "characters, not end with a slash or dot, not contain '..'"
)
# sha256 hex prefix: 64 bits make a collision among a table's uploads negligible.
INGEST_ID_LENGTH = 16
INGEST_ID = re.compile(r"[0-9a-f]{16}")
BRANCH_PREFIX = "wap_"


def is_identifier(name: object) -> bool:
    """Whether `name` is a namespace or table identifier we accept."""
    return isinstance(name, str) and IDENTIFIER.fullmatch(name) is not None


def table_parts(name: object) -> tuple[str, str] | None:
    """`(namespace, table)` of a table name `<namespace>.<table>` (TABLE_NAME_RULE), None
    when `name` is not one."""
    parts = name.split(".") if isinstance(name, str) else []
    if len(parts) != 2 or not all(is_identifier(part) for part in parts):
        return None
    return parts[0], parts[1]


def is_table_name(name: object) -> bool:
    """Whether `name` is a table name `<namespace>.<table>` (TABLE_NAME_RULE)."""
    return table_parts(name) is not None


def is_ref_name(name: object) -> bool:
    """Whether Nessie accepts `name` as a branch or tag name."""
    return isinstance(name, str) and NESSIE_REF_NAME.fullmatch(name) is not None


def is_ingest_id(text: object) -> bool:
    """Whether `text` is an ingest (or batch) id as the trigger makes them."""
    return isinstance(text, str) and INGEST_ID.fullmatch(text) is not None


def hex_id(text: str) -> str:
    """The id of `text`: its sha256, first INGEST_ID_LENGTH hex characters."""
    return hashlib.sha256(text.encode()).hexdigest()[:INGEST_ID_LENGTH]


def ingest_id(bucket: str, key: str, version: str) -> str:
    """`sha256("<bucket>/<key>#<versionId or etag>")`, first 16 hex characters."""
    if not version:
        raise ValueError("an object version id or ETag is required for the ingest id")
    return hex_id(f"{bucket}/{key}#{version}")


def branch_name(namespace: str, table: str, at: datetime, ingest: str) -> str:
    """`wap_<namespace>_<table>_<yyyymmddThhmmss>_<id8>` (UTC)."""
    if not is_ingest_id(ingest):
        raise ValueError(f"not an ingest id: {ingest!r}")
    utc = timezone.utc  # noqa: UP017 (datetime.UTC is 3.11+; the job runs on EMR's 3.9)
    stamp = at.astimezone(utc).strftime("%Y%m%dT%H%M%S")
    name = f"{BRANCH_PREFIX}{namespace}_{table}_{stamp}_{ingest[:8]}"
    if not is_ref_name(name):  # cannot happen for valid identifiers; guard anyway
        raise ValueError(f"branch name {name!r} is not a valid Nessie reference name")
    return name
