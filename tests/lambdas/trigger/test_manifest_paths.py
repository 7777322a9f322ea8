"""A table's `_manifest.json` is held to the path rule of a dataset's (contracts/layout.py):
paths relative to its folder, to data files, never absolute or `_`/`.`-prefixed."""

from __future__ import annotations

import io
import json

import pytest

from contracts.layout import is_manifest_path
from lambdas.trigger.datasets import DatasetError, _manifest
from lambdas.trigger.events import ObjectCreated


class _S3:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def get_object(self, **_: object) -> dict:
        return {"Body": io.BytesIO(self.body)}


def _read(paths: list[str]) -> list[tuple[str, int]]:
    marker = ObjectCreated("src", "sales/orders/day=1/_manifest.json", None, None, 10)
    body = json.dumps({"files": [{"path": p, "size": 1} for p in paths]}).encode()
    return _manifest(marker, _S3(body))


def test_relative_paths_to_data_files_are_read():
    assert _read(["part-0.parquet", "sub/part-1.parquet"]) == [
        ("sales/orders/day=1/part-0.parquet", 1),
        ("sales/orders/day=1/sub/part-1.parquet", 1),
    ]


@pytest.mark.parametrize("path", ["/part-0.parquet", "_SUCCESS", "sub/.part-0.crc", "../x", ""])
def test_what_a_dataset_manifest_refuses_a_table_manifest_refuses(path):
    assert not is_manifest_path(path)
    with pytest.raises(DatasetError, match="relative path"):
        _read([path])
