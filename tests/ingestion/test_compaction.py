"""The compaction rules both paths follow (ingestion/compaction.py), on moto's ledger and
a Nessie stand-in that fails on purpose: what `conclude` records when the merge cannot go
through. (The paths themselves, with the real job: tests/wap/ops/test_compaction_run.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from contracts.compaction import CompactionVerdict
from ingestion import compaction as rules
from ingestion.exceptions import MergeConflictError, NessieUnavailableError
from ingestion.ledger import Ledger
from tests.fixtures.moto_ledger import moto_ledger

TABLE = "sales.orders"
BASE, HEAD, MERGED = "a" * 64, "b" * 64, "c" * 64
AFTER_SNAPSHOT = 42


class FlakyNessie:
    """Main and one table; `merge_into_main` fails with `fail` `times` times (then works)
    and counts the merges."""

    def __init__(self, fail: Exception | None = None, times: int = 1) -> None:
        self.fail, self.times, self.merges, self.main_snapshot = fail, times, 0, 1
        self.branches: dict[str, str] = {}

    def metadata_location(self, ref: str, table: str) -> str | None:
        return "s3://lake/warehouse/sales/orders/metadata/1.json"

    def ensure_branch_from_main(self, branch: str) -> str:
        return self.branches.setdefault(branch, BASE)

    def branch_hash(self, branch: str) -> str | None:
        return self.branches.get(branch)

    def table_snapshot(self, table: str, ref: str, at: str | None = None) -> int:
        return AFTER_SNAPSHOT if ref != "main" else self.main_snapshot

    def main_holds(self, table: str, snapshot_id: Any) -> bool:
        return self.main_snapshot == int(snapshot_id)

    def main_hash(self) -> str:
        return MERGED if self.merges else BASE

    def merge_into_main(self, branch: str, audited_hash: str, meta: Any) -> str:
        if self.fail is not None and self.times > 0:
            self.times -= 1
            raise self.fail
        assert audited_hash == HEAD
        self.merges += 1
        self.main_snapshot = AFTER_SNAPSHOT
        return MERGED

    def delete_branch(self, branch: str, expected_hash: str | None = None) -> bool:
        return self.branches.pop(branch, None) is not None


@pytest.fixture
def ledger(monkeypatch):
    yield from moto_ledger(monkeypatch)


def verdict(branch: str) -> CompactionVerdict:
    return CompactionVerdict(
        table=TABLE,
        branch=branch,
        passed=True,
        changed=True,
        reason=None,
        files_before=5,
        files_after=1,
        rows=10,
        head_hash=HEAD,
        snapshot_id=AFTER_SNAPSHOT,
    )


def begun(ledger: Ledger, nessie: FlakyNessie) -> rules.CompactionStart:
    start = rules.begin(ledger, nessie, TABLE)
    rules.open_branch(ledger, nessie, start)
    return start


def test_nessie_unreachable_at_the_merge_records_nothing_and_the_next_try_merges_once(ledger):
    nessie = FlakyNessie(fail=NessieUnavailableError("connection refused"))
    start = begun(ledger, nessie)
    alerts: list = []

    with pytest.raises(NessieUnavailableError):
        rules.conclude(
            ledger,
            nessie,
            start,
            verdict=verdict(start.branch),
            job_error=None,
            alert=alerts.append,
        )
    assert ledger.get_ingest(start.run_id).status == "RUNNING"
    assert ledger.get_lock(TABLE).active == start.run_id and alerts == []

    done = rules.conclude(
        ledger, nessie, start, verdict=verdict(start.branch), job_error=None, alert=alerts.append
    )
    again = rules.conclude(
        ledger, nessie, start, verdict=verdict(start.branch), job_error=None, alert=alerts.append
    )

    assert (done.status, done.main_hash, again.main_hash) == ("PUBLISHED", MERGED, MERGED)
    assert nessie.merges == 1  # main already held the audited snapshot: not merged twice
    record = ledger.get_ingest(start.run_id)
    assert (record.status, record.audited_hash, record.published_hash) == (
        "PUBLISHED",
        HEAD,
        MERGED,
    )
    assert record.field_value("files_after") == 1 and alerts == []


def test_a_merge_nessie_refuses_is_publish_failed_alerted_and_keeps_the_branch(ledger):
    nessie = FlakyNessie(fail=MergeConflictError("main changed sales.orders"), times=9)
    start = begun(ledger, nessie)
    alerts: list = []

    done = rules.conclude(
        ledger, nessie, start, verdict=verdict(start.branch), job_error=None, alert=alerts.append
    )

    assert done.status == "PUBLISH_FAILED" and "main changed" in done.reason
    assert ledger.get_ingest(start.run_id).status == "PUBLISH_FAILED"
    assert [a.outcome for a in alerts] == ["PUBLISH_FAILED"]
    assert nessie.branch_hash(start.branch) == BASE and nessie.merges == 0
