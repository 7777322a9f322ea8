"""cdk-nag AwsSolutions: nothing unsuppressed, every suppression named and explained."""

from __future__ import annotations

import csv

import pytest
from aws_cdk.assertions import Annotations, Match


@pytest.fixture(params=["default", "external_nessie"])
def variant(request):
    name = "synthesized" if request.param == "default" else "synthesized_external_nessie"
    return request.getfixturevalue(name)


def test_no_unsuppressed_findings(variant):
    annotations = Annotations.from_stack(variant.stack)
    findings = [
        *annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*")),
        *annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*")),
    ]
    assert [f"{m.id}: {m.entry.data}" for m in findings] == []


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
