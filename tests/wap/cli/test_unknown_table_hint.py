"""The hint after an `unknown_table` refusal offers to create the table only where that
could work: never for a table only the audits write (contracts/job_tables.py), which
--create does not change."""

from __future__ import annotations

import pytest

from ingestion import constants as c
from ingestion.ledger import IngestRecord
from wap.cli.command import console
from wap.cli.outcomes import print_outcomes
from wap.ops.backends import Target


def _printed(table: str, error: str) -> str:
    record = IngestRecord(
        ingest_id="0123456789abcdef",
        table=table,
        status=c.REJECTED,
        reason_code=c.UNKNOWN_TABLE,
        error=error,
    )
    with console.capture() as captured:
        print_outcomes([record], Target())
    return captured.get()


@pytest.mark.parametrize("table", ["lab.readings__audit_metrics", "lab.readings__quarantine"])
def test_a_job_written_table_gets_the_refusal_only(table):
    out = _printed(table, f"{table} is the ... of lab.readings: only its audits write it")

    assert "only its audits write it" in out
    assert "not a known table" not in out and "--create" not in out


def test_a_mistyped_table_still_gets_the_create_hint():
    out = _printed("inventory.stok", "unknown table inventory.stok")

    assert "inventory.stok is not a known table" in out and "again with --create" in out
