"""Where things live in S3, defined once: the artifacts bucket's prefixes and which object
names are data (docs/contracts.md).

The stack grants and expires by these prefixes (infra/), the trigger stages under them
(ingestion/), the job and the tools read configs and reports from them (spark_jobs/,
wap/, local/). Standard library only and Python 3.9-compatible: the job imports it on EMR.
"""

from __future__ import annotations

# --- The artifacts bucket ----------------------------------------------------------------
# Table configs, `<namespace>.<table>.yaml`, and multi-table datasets' `datasets/<name>.yaml`.
TABLES_PREFIX = "tables/"
DATASETS_FOLDER = "datasets/"
CONFIG_SUFFIX = ".yaml"
# Audit reports, `reports/<table>/<ingest id>/attempt-<n>/report.json`, and maintenance's.
REPORTS_PREFIX = "reports/"
# The exact object version an ingest reads, `staging/<ingest id>/<file name>`.
STAGING_PREFIX = "staging/"

# --- Object names that are not data --------------------------------------------------------
# The objects that complete a dataset of an `arrival: marker` table (docs/batches.md).
SUCCESS_MARKER = "_SUCCESS"
MANIFEST_MARKER = "_manifest.json"
# A name starting with one of these is never data: markers (`_SUCCESS`, `_manifest.json`),
# Hadoop's and Spark's side files (`.crc`, `_temporary`), editors' and tools' dot files.
HIDDEN_NAME_PREFIXES = ("_", ".")


def file_name(key: str) -> str:
    """The last part of a key or path: `a/b/c.csv` -> `c.csv`."""
    return key.rsplit("/", 1)[-1]


def is_hidden_name(name: str) -> bool:
    """Whether a file of this name is not data (`_`- or `.`-prefixed)."""
    return name.startswith(HIDDEN_NAME_PREFIXES)


def is_marker(key: str) -> bool:
    """True for keys that are not data: folders, `_SUCCESS`, `_`- or `.`-prefixed names."""
    return not key or key.endswith("/") or is_hidden_name(file_name(key))


def is_dataset_marker(key: str) -> bool:
    """`_SUCCESS` or `_manifest.json`: the objects that complete a dataset."""
    return file_name(key) in (SUCCESS_MARKER, MANIFEST_MARKER)


def table_config_key(table: str) -> str:
    """A table's config in the artifacts bucket: `tables/<namespace>.<table>.yaml`."""
    return f"{TABLES_PREFIX}{table}{CONFIG_SUFFIX}"


def staged_key(ingest_id: str, key: str) -> str:
    """Where an ingest's staged copy of the source object `key` lives."""
    return f"{STAGING_PREFIX}{ingest_id}/{file_name(key)}"


def is_manifest_path(path: object) -> bool:
    """Whether a manifest entry's `path` is one we read: relative to the manifest's folder
    (not absolute, no `..`) and naming a data file (not `_`- or `.`-prefixed)."""
    return (
        isinstance(path, str)
        and bool(path)
        and not path.startswith("/")
        and ".." not in path.split("/")
        and not is_hidden_name(file_name(path))
    )
