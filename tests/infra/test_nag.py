"""cdk-nag AwsSolutions: nothing unsuppressed, every suppression named and explained."""

from __future__ import annotations

import csv

import pytest


@pytest.fixture(params=["default", "external_nessie", "non_default"])
def variant(request):
    name = f"synthesized_{request.param}" if request.param != "default" else "synthesized"
    return request.getfixturevalue(name)


def test_no_unsuppressed_findings(variant):
    findings = [
        f"{path}: {message}"
        for level in ("error", "warning")
        for path, message in variant.annotations(level)
        if "AwsSolutions-" in message
    ]
    assert findings == []


def test_report_rows_are_compliant_or_suppressed_with_a_reason(variant):
    (report,) = variant.outdir.glob("AwsSolutions-*-NagReport.csv")
    rows = list(csv.DictReader(report.open()))
    assert rows, "cdk-nag ran no rules"
    assert {row["Compliance"] for row in rows} <= {"Compliant", "Suppressed", "N/A"}
    suppressed = [row for row in rows if row["Compliance"] == "Suppressed"]
    assert suppressed, "expected the documented suppressions to show up in the report"
    for row in suppressed:
        assert row["Rule ID"].startswith("AwsSolutions-")
        assert len(row["Exception Reason"].strip()) >= 20, row
