"""Pure naming rules: key routing, ingest ids, branch names (the key layout and marker
files: contracts/layout.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from contracts import naming as rules
from contracts.naming import BRANCH_PREFIX, IDENTIFIER, INGEST_ID, NESSIE_REF_NAME, ingest_id
from ingestion.exceptions import UnroutableKeyError

__all__ = [
    "BRANCH_PREFIX",
    "IDENTIFIER",
    "INGEST_ID",
    "NESSIE_REF_NAME",
    "ingest_id",
]


@dataclass(frozen=True)
class TableRef:
    """A validated `<namespace>.<table>` identifier."""

    namespace: str
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.namespace}.{self.name}"

    @classmethod
    def parse(cls, qualified: str) -> TableRef:
        """Parse `ns.table`; raise ValueError when it is not two valid identifiers."""
        parts = rules.table_parts(qualified)
        if parts is None:
            raise ValueError(f"not a table identifier ns.table: {qualified!r}")
        return cls(*parts)


def route_key(key: str) -> TableRef:
    """Map `<namespace>/<table>/<...>/<file>` to its table; raise `UnroutableKeyError` otherwise."""
    parts = key.split("/")
    if len(parts) < 3 or not parts[-1]:
        raise UnroutableKeyError(
            f"key {key!r} is not under <namespace>/<table>/: cannot tell which table it belongs to"
        )
    namespace, table = parts[0], parts[1]
    if namespace == rules.DATASETS_NAMESPACE:
        raise UnroutableKeyError(
            f"key {key!r}: {namespace}/ is for multi-table datasets: "
            f"{namespace}/<dataset>/<drop>/<files> and that drop's _manifest.json "
            "(docs/datasets.md)"
        )
    for label, value in (("namespace", namespace), ("table", table)):
        if not rules.is_identifier(value):
            raise UnroutableKeyError(
                f"key {key!r}: {label} {value!r} is not a valid identifier "
                f"({rules.IDENTIFIER_RULE})"
            )
    return TableRef(namespace, table)


def branch_name(table: TableRef, at: datetime, ingest: str) -> str:
    """`wap_<namespace>_<table>_<yyyymmddThhmmss>_<id8>` (UTC)."""
    return rules.branch_name(table.namespace, table.name, at, ingest)


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


def object_version_uri(bucket: str, key: str, version_id: str | None) -> str:
    """One uploaded object version, as a snapshot's `wap.source` names it:
    `s3://bucket/key?versionId=V` (just `s3://bucket/key` for an unversioned object)."""
    uri = s3_uri(bucket, key)
    return f"{uri}?versionId={version_id}" if version_id else uri


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/key` -> (bucket, key)."""
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise ValueError(f"not an s3://bucket/key URI: {uri!r}")
    bucket, key = uri[5:].split("/", 1)
    return bucket, key


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
