"""The mark phase's record of main's tables (ingestion/maintenance/gc.py), whatever order
Nessie lists its references in: the daily run's metrics and compactions start from it."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from ingestion.maintenance.gc import GcOptions, _Marker

HEAD = "a" * 64


class OneCommitCatalog:
    """Every reference at one commit holding one view (a view needs no file reads)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def references(self):
        return [SimpleNamespace(name=name, hash=HEAD) for name in self.names]

    def commit_log(self, ref: str, head: str):
        return [SimpleNamespace(hash=head, commit_time="2026-11-25T00:00:00Z")]

    def contents_at(self, ref: str, commit_hash: str):
        return [
            SimpleNamespace(
                key="ns.t",
                type="ICEBERG_VIEW",
                metadata_location="file:///w/ns/t/metadata/v1.json",
                snapshot_id=None,
            )
        ]


@pytest.mark.parametrize("names", [["main", "backup"], ["backup", "main"], ["a-tag", "main"]])
def test_main_tables_are_recorded_when_another_reference_reached_its_head_first(names):
    marker = _Marker(OneCommitCatalog(names), GcOptions(), datetime.now(UTC), {})
    marker.mark_all()

    assert list(marker.main_contents) == ["ns.t"]
    assert marker.live_commits == 1
