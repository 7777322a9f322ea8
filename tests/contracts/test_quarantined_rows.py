"""The count of quarantined rows (issue 40) carried from the audit report through the
state machine's outcome to the ledger record: one typed field at each step, absent (0 or
None) in what was written before quarantine."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contracts.report import AuditReport, ReportError
from contracts.state import Outcome, StateError
from ingestion.ledger import IngestRecord, record_from_item, record_to_item
from tests.fixtures.ledger_items import ledger_item

REPORT = {
    "report_version": 1,
    "ingest_id": "0123456789abcdef",
    "table": "s.t",
    "branch": "wap_s_t_x",
    "outcome": "passed",
    "rows_written": 17,
}


def test_the_report_carries_the_quarantined_rows():
    report = AuditReport.from_dict({**REPORT, "quarantined_rows": 3})
    assert report.quarantined_rows == 3
    assert report.to_dict()["quarantined_rows"] == 3
    assert AuditReport.from_dict(REPORT).quarantined_rows == 0  # a report from before
    with pytest.raises(ReportError, match="quarantined_rows"):
        AuditReport.from_dict({**REPORT, "quarantined_rows": -1})


def test_the_outcome_carries_them_and_leaves_them_out_when_unknown():
    outcome = Outcome.from_dict({"status": "PASSED", "quarantined_rows": 3})
    assert outcome.quarantined_rows == 3
    assert outcome.to_dict() == {"status": "PASSED", "quarantined_rows": 3}
    assert "quarantined_rows" not in Outcome(status="PASSED").to_dict()
    with pytest.raises(StateError, match="quarantined_rows"):
        Outcome.from_dict({"status": "PASSED", "quarantined_rows": "3"})


def test_the_ledger_record_keeps_them():
    item = ledger_item("a" * 16, table="s.t", status="PUBLISHED", quarantined_rows=Decimal("3"))
    record = record_from_item(item)
    assert isinstance(record, IngestRecord) and record.quarantined_rows == 3
    assert record_to_item(record)["quarantined_rows"] == Decimal("3")
