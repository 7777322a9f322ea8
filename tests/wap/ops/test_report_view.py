"""The one view of an audit report that `wap show` and the dashboard render from."""

from __future__ import annotations

from contracts.report import AuditReport
from ingestion.ledger import IngestRecord
from wap.ops.report_view import ReportView, reason_of, rows_written_of

REPORT = {
    "report_version": 1,
    "ingest_id": "0123456789abcdef",
    "table": "sales.orders",
    "branch": "wap_x",
    "outcome": "failed",
    "reason": "1 error-severity check(s) did not pass",
    "reason_code": "audit_failed",
    "rows_written": 5,
    "sources": [
        {"uri": "s3://b/a.csv", "status": "passed", "rows": 3},
        {"uri": "s3://b/b.csv", "status": "failed", "rows": 2, "failed_checks": ["amount_range"]},
        {"uri": "s3://b/c.csv", "status": "rejected", "reason": "not UTF-8 at byte 7"},
    ],
    "checks": [
        {
            "name": "ok",
            "kind": "not_null",
            "columns": ["id"],
            "severity": "error",
            "status": "passed",
            "violations": 0,
        },
        {
            "name": "email",
            "kind": "regex",
            "columns": ["email"],
            "severity": "warn",
            "status": "failed",
            "violations": 1,
            "samples": [{"id": 7, "email": "nope"}],
        },
        {
            "name": "amount_range",
            "kind": "range",
            "columns": ["amount"],
            "severity": "error",
            "status": "failed",
            "violations": 2,
            "threshold": {"min": 0},
            "samples": [{"id": 1, "amount": -1}, {"id": 2, "note": "x"}],
        },
    ],
}


def test_the_typed_report_and_its_json_give_the_same_view():
    assert ReportView.of(AuditReport.from_dict(REPORT)) == ReportView.of(REPORT)


def test_checks_failures_first_error_before_warn_then_in_report_order():
    view = ReportView.of(AuditReport.from_dict(REPORT))
    assert [c.name for c in view.checks_failures_first()] == ["amount_range", "email", "ok"]
    assert [c.name for c in view.failed_checks] == ["email", "amount_range"]
    [_, amounts] = view.sampled_checks
    assert amounts.sample_columns == ["id", "amount", "note"]
    assert amounts.samples_title == "Sample violating rows: amount_range"


def test_a_batch_files_verdicts_and_why():
    view = ReportView.of(REPORT)
    assert [(f.passed, f.why) for f in view.batch_files] == [
        (True, "passed"),
        (False, "amount_range"),
        (False, "not UTF-8 at byte 7"),
    ]
    assert [f.uri for f in view.rejected_files] == ["s3://b/c.csv"]
    assert ReportView.of({**REPORT, "sources": REPORT["sources"][:1]}).batch_files == ()


def test_no_report_and_the_record_first():
    empty = ReportView.of(None)
    assert not empty.present and empty.checks == () and empty.written_per_table == {}
    record = IngestRecord(ingest_id="0123456789abcdef", error=None, rows_written=None)
    assert reason_of(record, ReportView.of(REPORT)) == REPORT["reason"]
    assert rows_written_of(record, ReportView.of(REPORT)) == 5
    assert rows_written_of(record, empty) is None
