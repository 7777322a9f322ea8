"""The deployed table and dataset configs of either backend, as text: the tables directory
locally, the artifacts bucket's `tables/` on AWS (what the Lambdas and the job read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from contracts.dataset_config import DATASET_CONFIGS_DIR
from contracts.layout import CONFIG_SUFFIX, TABLES_PREFIX
from wap.ops.backend import Backend


@dataclass(frozen=True)
class ConfigTexts:
    """`ns.table` -> its config's text; dataset name -> its config's bytes."""

    tables: dict[str, str] = field(default_factory=dict)
    datasets: dict[str, bytes] = field(default_factory=dict)


def deployed_configs(backend: Backend) -> ConfigTexts:
    """Every table config and dataset config of the backend (one listing on AWS)."""
    found = ConfigTexts()
    outputs = getattr(backend, "outputs", None)
    if isinstance(outputs, dict) and outputs.get("ArtifactsBucketName"):
        bucket = outputs["ArtifactsBucketName"]
        pages = (
            backend.s3()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=bucket, Prefix=TABLES_PREFIX)
        )
        for key in [o["Key"] for p in pages for o in p.get("Contents", [])]:
            name = key[len(TABLES_PREFIX) :]
            if not name.endswith(CONFIG_SUFFIX):
                continue
            name = name[: -len(CONFIG_SUFFIX)]
            body = backend.read_object(f"s3://{bucket}/{key}")
            if body is None:
                continue
            if "/" not in name:
                found.tables[name] = body.decode("utf-8", "replace")
            elif name.startswith(f"{DATASET_CONFIGS_DIR}/") and name.count("/") == 1:
                found.datasets[name.split("/", 1)[1]] = body
        return found
    from wap.runtime.embedded_stack import tables_dir_from_env

    options = getattr(getattr(backend, "stack", None), "options", None)
    directory = Path(getattr(options, "tables_dir", None) or tables_dir_from_env())
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob(f"*{CONFIG_SUFFIX}")):
        found.tables[path.name[: -len(CONFIG_SUFFIX)]] = path.read_text("utf-8", errors="replace")
    for path in sorted((directory / DATASET_CONFIGS_DIR).glob(f"*{CONFIG_SUFFIX}")):
        found.datasets[path.name[: -len(CONFIG_SUFFIX)]] = path.read_bytes()
    return found
