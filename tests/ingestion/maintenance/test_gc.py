"""Garbage collection across Nessie references (ingestion/maintenance/gc.py) on a lake the real flow
wrote: local stack, our Nessie server, the real PySpark job, a warehouse of this module's own.

One scenario for the module (five ingests are the slow part): on gc.orders, FIRST and
SECOND are published, OPEN fails its audit and keeps its branch, DISCARDED fails and its
branch is deleted. The collection that deletes runs last and creates, between its mark and
its sweep, a branch at main's first published commit (history the retention has dropped)
and runs one more ingest.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import requests

from ingestion.maintenance.gc import GcOptions, LocalWarehouse, collect, normalize
from lakeview.iceberg import data_files, open_table, read_rows
from tests.fixtures.spark_stack import SparkLake, spark_lake

pytestmark = pytest.mark.slow

TABLE = "gc.orders"
METRICS = f"{TABLE}__audit_metrics"  # written beside it by every audit
CONFIG = """
schema_policy: additive
checks:
  - {kind: range, name: amount_positive, column: amount, min: 0}
"""


class Lake(SparkLake):
    """The module's lake, with what the tests look at."""

    def ingest(self, name: str, rows: list[tuple[int, float]]) -> Any:  # type: ignore[override]
        return super().ingest(TABLE, name, rows)

    def files(self) -> set[str]:
        return {normalize(str(p)) for p in self.warehouse.rglob("*") if p.is_file()}

    def table_files(self, ref: str) -> set[str]:
        """Data files of gc.orders' current snapshot on `ref` (pyiceberg)."""
        location = self.nessie.metadata_location(ref, TABLE)
        assert location is not None, ref
        return {normalize(p) for p in data_files(open_table(location))}

    def reachable(self) -> set[str]:
        """Every file a collection with a long retention marks now (nothing deleted)."""
        marked = collect(
            self.nessie,
            LocalWarehouse(self.warehouse),
            GcOptions(retention=timedelta(days=3650), grace=timedelta(0)),
        )
        kept = self.files() - {f.path for f in marked.garbage}
        assert marked.missing == []
        return kept


@pytest.fixture(scope="module")
def gc_lake(lake, nessie, tmp_path_factory):
    """The scenario of the module docstring, on a warehouse no other module writes to."""
    with spark_lake(lake, nessie, tmp_path_factory, {TABLE: CONFIG}) as base:
        built = Lake(base.stack, base.nessie, base.warehouse, base.slack)
        assert built.ingest("first", [(1, 1.0), (2, 2.0)]).status == "PUBLISHED"
        built.first_main = built.nessie.main_hash()
        assert built.ingest("second", [(3, 3.0)]).status == "PUBLISHED"
        assert built.ingest("open", [(4, -4.0)]).status == "AUDIT_FAILED"
        discarded = built.ingest("discarded", [(5, -5.0), (6, 6.0)])
        assert discarded.status == "AUDIT_FAILED"
        built.discarded_files = built.table_files(discarded.branch) - built.table_files("main")
        assert built.discarded_files
        built.nessie.delete_branch(discarded.branch)
        yield built


def test_by_default_nothing_is_deleted_and_the_discarded_branch_is_reported(gc_lake):
    before = gc_lake.files()
    report = collect(
        gc_lake.nessie, LocalWarehouse(gc_lake.warehouse), GcOptions(grace=timedelta(0))
    )

    assert gc_lake.files() == before
    assert report.deleted is False
    garbage = {f.path for f in report.garbage}
    assert gc_lake.discarded_files <= garbage
    # gc.orders and the metric history its audits write beside it (docs/metric-history.md)
    assert set(report.tables) == {TABLE, METRICS}
    assert sum(t.garbage_bytes for t in report.tables.values()) == report.garbage_bytes
    assert report.tables[TABLE].data_files == len(gc_lake.table_files("main")) == 2
    # What main and the open failed branch read is never garbage.
    open_branch = gc_lake.records["open"].branch
    assert not garbage & (gc_lake.table_files("main") | gc_lake.table_files(open_branch))


def test_the_grace_period_keeps_young_garbage(gc_lake):
    report = collect(gc_lake.nessie, LocalWarehouse(gc_lake.warehouse), GcOptions())

    assert report.garbage == []  # every file here is minutes old, the grace a day
    assert sum(t.live_files for t in report.tables.values()) == len(gc_lake.files())


def test_deletes_unreachable_files_but_none_a_reference_made_during_the_run_reaches(gc_lake):
    open_branch = gc_lake.records["open"].branch
    in_flight = gc_lake.warehouse / "gc" / "in-flight.parquet"
    made: dict[str, object] = {}

    def meanwhile() -> None:
        # A branch at history the retention dropped, an ingest, and a file a running job
        # has written but not committed yet: all after the mark, before the sweep.
        created = requests.post(
            f"{gc_lake.nessie.api_v2}/trees",
            params={"name": "wap_gc_mid_run", "type": "BRANCH"},
            json={"type": "BRANCH", "name": "main", "hash": gc_lake.first_main},
            timeout=10,
            # the harness's token (its client's, tests/fixtures/catalog_auth.py)
            headers={"Authorization": f"Bearer {gc_lake.nessie.tokens.token()}"},
        )
        assert created.ok, created.text
        made["record"] = gc_lake.ingest("meanwhile", [(7, 7.0)])
        in_flight.write_bytes(b"PAR1 not committed yet PAR1")

    report = collect(
        gc_lake.nessie,
        LocalWarehouse(gc_lake.warehouse),
        GcOptions(retention=timedelta(0), grace=timedelta(0), delete=True),
        between_phases=meanwhile,
    )

    assert made["record"].status == "PUBLISHED"
    left = gc_lake.files()
    deleted = {f.path for f in report.garbage}
    assert report.deleted and deleted and not deleted & left
    # The discarded branch's data files are gone, and only garbage was deleted.
    assert gc_lake.discarded_files <= deleted
    assert not gc_lake.discarded_files & left
    # Nothing any live reference reaches now was deleted: main (with the new ingest), the
    # open failed branch, the branch made mid-run at an old commit.
    for ref, rows in (("main", 4), (open_branch, 4), ("wap_gc_mid_run", 2)):
        assert gc_lake.table_files(ref) <= left, ref
        location = gc_lake.nessie.metadata_location(ref, TABLE)
        assert read_rows(open_table(location)).num_rows == rows, ref  # every file readable
    assert gc_lake.reachable() <= left
    assert normalize(str(in_flight)) in left
    in_flight.unlink()  # never committed: the next test's collection must not count it


def test_history_older_than_the_retention_stops_being_live_and_its_files_go(gc_lake):
    """After the run above: main's earlier commits (FIRST's, SECOND's) are history."""
    gc_lake.nessie.delete_branch("wap_gc_mid_run")
    warehouse = LocalWarehouse(gc_lake.warehouse)
    kept = collect(
        gc_lake.nessie, warehouse, GcOptions(retention=timedelta(hours=1), grace=timedelta(0))
    )
    history = [
        f.path
        for f in collect(
            gc_lake.nessie,
            warehouse,
            GcOptions(retention=timedelta(0), grace=timedelta(0), delete=True),
        ).garbage
    ]

    assert kept.garbage == []  # within an hour's retention, all of it stays
    metadata = sorted(
        p for p in history if p.endswith(".metadata.json") and "__audit_metrics" not in p
    )
    assert len(metadata) == 2, metadata  # FIRST's and SECOND's table versions on main
    assert any("/snap-" in p for p in history)  # and their manifest lists
    location = gc_lake.nessie.metadata_location("main", TABLE)
    assert read_rows(open_table(location)).num_rows == 4
    assert gc_lake.reachable() <= gc_lake.files()
