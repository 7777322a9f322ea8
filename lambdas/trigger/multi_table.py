"""Multi-table datasets (docs/datasets.md): one drop that writes several tables, published
by one merge or not at all.

A drop is a folder `_datasets/<name>/<drop>/` of the source bucket: its files, anywhere
under it, and last its `_manifest.json`, which names each table's files:

    {"tables": {"sales.orders": [{"path": "orders/part-0.parquet", "size": 1234}],
                "sales.order_items": [{"path": "items/part-0.parquet", "size": 5678}]}}

`tables/datasets/<name>.yaml` (contracts/dataset_config.py) names the dataset's tables and
the checks between them. The manifest's event makes the drop one batch record (kind
`batch`, `all_or_nothing`, with `tables`): each file is recorded and staged at the version
S3 has now, as any upload is, and the config's bytes are kept beside them
(`dataset_config_uri`: every job run of the batch reads that copy, so a config redeployed
while it waits changes neither its tables nor its checks); then the batch takes the lock
of every table in canonical order (`Ledger.acquire_in_order`) and runs when it holds them
all. Files under `_datasets/`
do nothing on their own: the manifest names them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from contracts.batching import MAX_MANIFEST_BYTES
from contracts.dataset_config import (
    DatasetConfig,
    dataset_drop,
    parse_dataset_config_bytes,
    parse_tables_manifest,
)
from contracts.layout import file_name, is_hidden_name
from contracts.naming import IDENTIFIER_RULE, is_identifier
from contracts.table_config import MAX_CONFIG_BYTES, TableConfigError
from ingestion import aws
from ingestion.config import Settings
from ingestion.ingest import start_or_fail
from ingestion.ledger import BatchRecord, IngestRecord, Ledger
from ingestion.naming import ingest_id, s3_uri
from ingestion.nessie import NessieClient
from ingestion.staging import frozen_config_uri, put_frozen
from lambdas.trigger.datasets import (
    DatasetError,
    head_parts,
    join_members,
    marker_bytes,
    problem_of,
    record_batch,
)
from lambdas.trigger.events import ObjectCreated


def load_dataset_config(settings: Settings, name: str) -> tuple[DatasetConfig, bytes]:
    """The deployed `datasets/<name>.yaml`, parsed, and the bytes it was parsed from;
    TableConfigError when the name is not an identifier (checked before it is part of any
    URI), or the config is missing or invalid (in the job's words: both parse it with
    `contracts.dataset_config`)."""
    if not is_identifier(name):
        raise TableConfigError(
            f"dataset name {name!r} in _datasets/{name}/ is not an identifier ({IDENTIFIER_RULE})"
        )
    uri = settings.dataset_config_uri(name)
    data = aws.read_bytes_s3(uri, max_bytes=MAX_CONFIG_BYTES) if uri else None
    if data is None:
        raise TableConfigError(
            f"no config for dataset {name!r}: add tables/datasets/{name}"
            ".yaml naming its tables (docs/datasets.md)"
        )
    import yaml  # pynessie's dependency (confuse) brings it into every Lambda bundle

    return parse_dataset_config_bytes(data, uri or name, yaml=yaml), data


def complete_multi_table_dataset(
    marker: ObjectCreated,
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    s3: Any,
    ingest_file: Callable[[ObjectCreated, str, dict[str, Any]], IngestRecord],
) -> tuple[str, str, str | None, str | None]:
    """Turn a drop's manifest into one batch over every table and start it, or queue it
    behind the tables' holders; safe to repeat. `ingest_file(part, table, member_of)`
    records and stages one file, as the dataset's from the start. Returns (action, batch
    id, first table, reason)."""
    drop = dataset_drop(marker.key)
    assert drop is not None
    name, prefix = drop
    batch_id = ingest_id(marker.bucket, marker.key, marker.version)
    batch = ledger.get_ingest(batch_id)
    if batch is None:
        config, data, listed, problem = None, b"", {}, None
        try:
            config, data = load_dataset_config(settings, name)
            listed = _manifest(marker, s3, config)
            problem = _unlisted(marker, s3, prefix, listed)
        except (TableConfigError, DatasetError) as exc:
            problem = str(exc)
        members, member_tables, problems = [], [], [problem] if problem else []
        member_of = {"batch_id": batch_id, "dataset": prefix}
        for table, entries in listed.items():
            parts, missing = head_parts(
                marker, [(prefix + path, size) for path, size in entries], s3
            )
            problems += [missing] if missing else []
            members += [ingest_file(part, table, member_of) for part in parts]
            member_tables += [table] * len(parts)
        problem = "; ".join(problems) or problem_of(members)
        tables = list(config.tables) if config else []
        frozen = None
        if config is not None and not problem:  # the config its locks and its job agree on
            frozen = frozen_config_uri(settings.artifacts_bucket, batch_id, name, data)
            put_frozen(s3, frozen, data)
        batch = record_batch(
            settings,
            ledger,
            batch_id,
            tables[0] if tables else None,
            prefix,
            marker,
            members,
            problem,
            extra={
                "dataset_name": name,
                "tables": tuple(tables),
                "source_tables": tuple(member_tables),
                "dataset_config_uri": frozen,
            },
        )
    if not batch.is_pending:
        return batch.status or "?", batch_id, batch.table, batch.error
    if isinstance(batch, BatchRecord):  # a retry after a stop between record and join
        join_members(ledger, batch_id, batch.members)
    started = start_or_fail(settings, ledger, nessie, batch)
    return started.status or "?", batch_id, batch.table, started.error


MAX_NAMED_UNLISTED = 10


def _unlisted(
    marker: ObjectCreated, s3: Any, prefix: str, listed: dict[str, list[tuple[str, int]]]
) -> str | None:
    """Why the drop cannot run when it holds data files its manifest does not list (they
    would be left out without a word); None when it holds none."""
    named = {prefix + path for entries in listed.values() for path, _ in entries}
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=marker.bucket, Prefix=prefix)
    extra = sorted(
        obj["Key"][len(prefix) :]
        for page in pages
        for obj in page.get("Contents", [])
        if obj["Key"] not in named and not is_hidden_name(file_name(obj["Key"]))
    )
    if not extra:
        return None
    shown = ", ".join(extra[:MAX_NAMED_UNLISTED]) + (
        f" and {len(extra) - MAX_NAMED_UNLISTED} more" if len(extra) > MAX_NAMED_UNLISTED else ""
    )
    return (
        f"{len(extra)} file(s) under {s3_uri(marker.bucket, prefix)} are not in its "
        f"{file_name(marker.key)}: {shown}; drop it again with a manifest that lists "
        "every file (files and manifest uploaded anew: each object version runs once)"
    )


def _manifest(
    marker: ObjectCreated,
    s3: Any,
    config: DatasetConfig,
) -> dict[str, list[tuple[str, int]]]:
    where = s3_uri(marker.bucket, marker.key)
    body = marker_bytes(marker, s3)
    if len(body) > MAX_MANIFEST_BYTES:
        raise DatasetError(f"{where} is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        raw = json.loads(body)
    except ValueError as exc:
        raise DatasetError(f"{where} is not JSON: {exc}") from exc
    return parse_tables_manifest(raw, config, where)
