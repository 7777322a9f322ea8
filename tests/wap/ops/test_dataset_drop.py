"""`wap ingest-dataset` refuses a bad drop before anything is uploaded, in the words of the
trigger and the job (contracts/dataset_config.py); a good one becomes the manifest the
trigger reads (docs/datasets.md)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wap.exceptions import InvalidInputError
from wap.ops.datasets import read_drop

CONFIG = "tables: [shop.orders, shop.order_items]\n"


@pytest.fixture
def tables(tmp_path):
    root = tmp_path / "tables"
    (root / "datasets").mkdir(parents=True)
    (root / "datasets" / "shop.yaml").write_text(CONFIG)
    return root


def _export(tmp_path, tables: list[str]):
    folder = tmp_path / "export"
    for table in tables:
        (folder / table).mkdir(parents=True)
        pq.write_table(pa.table({"order_id": [1, 2]}), folder / table / "part-0.parquet")
    return folder


def test_a_folder_per_table_becomes_the_manifest(tmp_path, tables):
    drop = read_drop("shop", _export(tmp_path, ["shop.orders", "shop.order_items"]), tables)
    manifest = drop.manifest()
    assert sorted(manifest["tables"]) == ["shop.order_items", "shop.orders"]
    [entry] = manifest["tables"]["shop.orders"]
    assert entry["path"] == "shop.orders/part-0.parquet" and entry["size"] > 0


@pytest.mark.parametrize(
    ("setup", "fragment"),
    [
        (lambda tmp, tables: ("nope", _export(tmp, ["shop.orders"])), "no config for dataset"),
        (lambda tmp, tables: ("shop", _export(tmp, ["shop.orders"])), "missing shop.order_items"),
        (lambda tmp, tables: ("shop", tmp / "absent"), "not a folder"),
        (lambda tmp, tables: ("Bad-Name", _export(tmp, ["shop.orders"])), "invalid dataset name"),
        (
            lambda tmp, tables: (
                "shop",
                _export(tmp, ["shop.orders", "shop.order_items", "shop.extra"]),
            ),
            "not in the dataset",
        ),
    ],
)
def test_a_bad_drop_is_refused_before_any_upload(tmp_path, tables, setup, fragment):
    name, folder = setup(tmp_path, tables)
    with pytest.raises(InvalidInputError, match=fragment):
        read_drop(name, folder, tables)


def test_a_manifest_naming_a_file_outside_the_folder_is_refused(tmp_path, tables):
    folder = _export(tmp_path, ["shop.orders", "shop.order_items"])
    (folder / "_manifest.json").write_text(
        json.dumps(
            {
                "tables": {
                    "shop.orders": [{"path": "../secret.parquet", "size": 1}],
                    "shop.order_items": [],
                }
            }
        )
    )
    with pytest.raises(InvalidInputError, match="is not a file under"):
        read_drop("shop", folder, tables)
