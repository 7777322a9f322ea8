"""Rendering: escaping, links and Block Kit limits, without any network."""

from __future__ import annotations

import pytest

from contracts.alert import AlertEvent
from contracts.report import AuditReport
from ingestion.alerting.exceptions import AlertEventError
from ingestion.alerting.links import execution_console_url, nessie_branch_url, s3_console_url
from ingestion.alerting.message import build_message, escape
from ingestion.alerting.report import failed_checks
from tests.fixtures.alerts import load_event

from .blockkit import all_text, assert_valid_blocks

UI = "https://nessie.example.com"


# What every report names; the tests below give only what they are about.
REPORT_BASE = {
    "report_version": 1,
    "ingest_id": "0123456789abcdef",
    "table": "sales.orders",
    "branch": "wap_sales_orders_20261122T101500_01234567",
    "outcome": "failed",
}


def render(event: dict, report: dict | None, ui: str | None = UI):
    alert = AlertEvent.from_dict(event)
    parsed = AuditReport.from_dict({**REPORT_BASE, **report}) if report else None
    checks = failed_checks(parsed) if parsed else []
    return build_message(alert, parsed, checks, nessie_ui_url=ui)


def test_escape_replaces_exactly_the_three_control_characters():
    assert escape("a & b < c > d * _ ~ `") == "a &amp; b &lt; c &gt; d * _ ~ `"


def test_failed_audit_message_names_everything_needed_to_act():
    event, report = load_event("audit_failed.json"), load_event("report_failed.json")

    message = render(event, report)

    assert_valid_blocks(message.blocks)
    text = all_text(message.blocks)
    assert message.blocks[0]["text"]["text"] == "Audit failed: sales.orders"
    for expected in (
        "`sales.orders`",
        "`s3://wap-source/sales/orders/2026-11-22.parquet`",
        "`AUDIT_FAILED`",
        "2 error checks failed: order_id_not_null, amount_range",
        "order_id_not_null",
        "Violations: *3*",
        "amount_range",
        "Violations: *41*",
        '{"min": 0, "max": 10000}',
        '{"order_id": null, "amount": 7.25}',
        "status_values",
        "3 of 4 checks did not pass",
    ):
        assert expected in text, expected
    # Error-severity checks come before the warn one.
    assert text.index("amount_range") < text.index("status_values")
    assert text.index("order_id_not_null") < text.index("status_values")
    # Five samples at most, although the report carries six for amount_range.
    assert '"amount": -0.01' in text and '"amount": -2.0' not in text
    # Passed checks are not listed.
    assert "row_count_min" not in text
    branch = "wap_sales_orders_20261122T101500_01234567"
    assert f"<{UI}/tree/{branch}|{branch}>" in text
    assert f"<{UI}/content/{branch}/sales/orders|table on this branch>" in text
    assert "sales.orders" in message.text and "order_id_not_null" in message.text


def test_links_to_report_execution_and_logs():
    event = load_event("audit_failed.json")

    text = all_text(render(event, None).blocks)

    arn = event["execution_arn"]
    assert (
        f"<https://eu-west-1.console.aws.amazon.com/states/home?region=eu-west-1"
        f"#/v2/executions/details/{arn}|0123456789abcdef>"
    ) in text
    assert (
        "<https://s3.console.aws.amazon.com/s3/object/wap-artifacts"
        "?prefix=reports/0123456789abcdef.json|s3://wap-artifacts/reports/0123456789abcdef.json>"
    ) in text
    logs = (
        "https://s3.console.aws.amazon.com/s3/buckets/wap-artifacts?prefix=logs/0123456789abcdef/"
    )
    assert f"<{logs}|s3://wap-artifacts/logs/0123456789abcdef/>" in text


def test_without_ui_url_the_branch_is_shown_without_a_link():
    text = all_text(render(load_event("audit_failed.json"), None, ui=None).blocks)
    assert "*Branch:* `wap_sales_orders_20261122T101500_01234567`" in text
    assert "/tree/" not in text


def test_data_with_control_characters_is_escaped_everywhere():
    event = load_event("audit_failed.json") | {
        "table": "sales.orders",
        "reason": "values <script> & <https://evil.example|click> found",
        "source_uri": "s3://b/k<&>.parquet",
    }
    report = {
        "checks": [
            {
                "name": "n<&>",
                "kind": "expression",
                "columns": ["a<b"],
                "status": "failed",
                "severity": "error",
                "violations": 1,
                "threshold": "x < 1 & y > 2",
                "samples": [{"note": "<!channel> & <@U123>"}],
            }
        ]
    }

    message = render(event, report)

    text = all_text(message.blocks) + message.text
    for raw in ("<script>", "<https://evil", "<!channel>", "<@U123>", "n<&>", "a<b", "k<&>"):
        assert raw not in text, raw
    assert "&lt;!channel&gt; &amp; &lt;@U123&gt;" in text
    assert "values &lt;script&gt; &amp; &lt;https://evil.example|click&gt; found" in text
    # Every remaining "<" opens one of our own links.
    assert all(chunk.startswith(("https://", UI)) for chunk in text.split("<")[1:])


def test_long_values_and_thousand_failing_checks_stay_within_limits():
    long = "&" * 10_000
    event = load_event("audit_failed.json") | {"reason": long, "source_uri": "s3://b/" + long}
    report = {
        "checks": [
            {
                "name": f"check_{i}_" + "<" * 400,
                "kind": "regex",
                "columns": [f"c{i}" * 300],
                "status": "failed",
                "severity": "error",
                "violations": i,
                "threshold": {"pattern": ">" * 1000},
                "samples": [{"value": "&" * 2000, "i": i}] * 5,
            }
            for i in range(1000)
        ]
    }

    message = render(event, report)

    assert_valid_blocks(message.blocks)
    total = len(all_text(message.blocks))
    assert total <= 12_000  # Slack's cumulative limit (msg_blocks_too_long) sits above this
    assert len(message.text) <= 3000
    text = all_text(message.blocks)
    assert "1000 of 1000 checks did not pass" in text
    assert "more not shown here: see the report" in text
    # The checks with the most violations come first.
    assert "check_999_" in text
    # No entity is cut in half by truncation.
    for piece in text.split("&")[1:]:
        assert piece.startswith(("amp;", "lt;", "gt;")), piece[:10]


def test_unknown_outcome_is_rendered_generically():
    event = load_event("audit_failed.json") | {"outcome": "SWEPT<x>", "branch": None}

    message = render(event, None)

    assert message.blocks[0]["text"]["text"] == "Ingest ended with SWEPTx: sales.orders"
    assert "`SWEPT&lt;x&gt;`" in all_text(message.blocks)
    assert_valid_blocks(message.blocks)


def test_minimal_event_renders():
    message = render({"ingest_id": "abc", "table": "weird table!", "outcome": "JOB_FAILED"}, None)

    assert message.blocks[0]["text"]["text"] == "Ingest job failed"
    assert message.text == "Ingest job failed: weird table!"
    assert_valid_blocks(message.blocks)


@pytest.mark.parametrize(
    "event",
    [
        {"table": "t", "outcome": "REJECTED"},
        {"ingest_id": "a", "table": "", "outcome": "REJECTED"},
        {"ingest_id": "a", "table": "t", "outcome": "REJECTED", "branch": 7},
        ["not", "a", "dict"],
    ],
)
def test_bad_events_are_refused_with_the_field_named(event):
    with pytest.raises(AlertEventError):
        AlertEvent.from_dict(event)


def test_link_builders():
    assert nessie_branch_url("http://ui:19120/", "a/b") == "http://ui:19120/tree/a%2Fb"
    assert nessie_branch_url(None, "main") is None
    assert execution_console_url("not-an-arn") is None
    gov = "arn:aws-us-gov:states:us-gov-west-1:123456789012:execution:sm:run1"
    assert execution_console_url(gov) == (
        "https://us-gov-west-1.console.amazonaws-us-gov.com/states/home?region=us-gov-west-1"
        f"#/v2/executions/details/{gov}"
    )
    assert s3_console_url("s3://b/a key.json") == (
        "https://s3.console.aws.amazon.com/s3/object/b?prefix=a%20key.json"
    )


@pytest.mark.parametrize("outcome", ["REJECTED", "JOB_FAILED", "PUBLISH_FAILED"])
def test_only_an_audited_branch_is_offered_for_publishing(outcome):
    """`wap publish` refuses anything but AUDIT_FAILED: the alert suggests no such command."""
    text = all_text(render(load_event("audit_failed.json") | {"outcome": outcome}, None).blocks)
    assert "wap publish" not in text and "publish it" not in text and "wap discard" in text
    assert "because the job wrote to it" in text
    audited = all_text(render(load_event("audit_failed.json"), None).blocks)
    assert "wap publish" in audited and "wap discard" in audited


def test_rejected_ingest_shows_the_schema_changes():
    event = load_event("audit_failed.json") | {
        "outcome": "REJECTED",
        "reason": "schema policy strict forbids new column discount",
    }
    report = {
        "outcome": "rejected",
        "rows_written": 0,
        "schema_changes": [{"change": "add_column", "column": "discount", "type": "double"}],
        "checks": [],
    }

    message = render(event, report)

    text = all_text(message.blocks)
    assert message.blocks[0]["text"]["text"] == "Ingest rejected: sales.orders"
    assert "*Schema changes:* `add_column discount double`" in text
    assert "schema policy strict forbids new column discount" in text
    assert "checks did not pass" not in text


# What the job writes as the ingest's reason (spark_jobs/report.py `settle`), the ledger's
# `error` and the alert event's `reason`.
JOB_REASON = "1 error-severity check(s) did not pass: amount_range (failed, 3 violation(s))"
ONE_FAILED_CHECK = {
    "checks": [
        {
            "name": "amount_range",
            "kind": "range",
            "columns": ["amount"],
            "status": "failed",
            "severity": "error",
            "violations": 3,
            "threshold": {"min": 0},
            "samples": [],
        }
    ]
}


def test_the_notification_text_says_each_fact_once():
    event = load_event("audit_failed.json") | {"reason": JOB_REASON}

    text = render(event, ONE_FAILED_CHECK).text

    assert JOB_REASON in text  # the reason says which checks did not pass...
    assert text.count("did not pass") == 1  # ...and nothing says it again
    assert text.count("amount_range") == 1


def test_without_a_reason_the_notification_text_names_the_failed_checks():
    event = {k: v for k, v in load_event("audit_failed.json").items() if k != "reason"}

    text = render(event, ONE_FAILED_CHECK).text

    assert "1 check(s) did not pass: amount_range" in text


def test_a_batchs_reason_counts_its_files_once_in_the_notification_text():
    uri = "s3://wap-source/sales/orders/dt=1/part-{}.parquet"
    report = ONE_FAILED_CHECK | {
        "sources": [
            {"uri": uri.format(0), "status": "passed", "rows": 1, "failed_checks": []},
            {
                "uri": uri.format(1),
                "status": "failed",
                "rows": 1,
                "failed_checks": ["amount_range"],
            },
        ]
    }
    event = load_event("audit_failed.json") | {
        "reason": f"{JOB_REASON}; 1 of 2 files failed: part-1.parquet (amount_range)"
    }

    text = render(event, report).text

    assert "1 of 2 files failed" in text
    assert "did not pass)" not in text  # no "(1 of 2 files did not pass)" besides
    assert text.count("did not pass") == 1


def test_the_message_says_which_checks_did_not_pass_once():
    """The job's reason for a failed audit lists the failed checks; the message's check
    section lists them too, with details: the summary leaves the reason out."""
    event = load_event("audit_failed.json") | {"reason": JOB_REASON}
    report = ONE_FAILED_CHECK | {"reason": JOB_REASON, "reason_code": "audit_failed"}

    text = all_text(render(event, report).blocks)

    assert "*Reason:*" not in text
    assert text.count("did not pass") == 1  # "1 of 1 checks did not pass", then details


def test_a_reason_the_checks_do_not_say_stays_in_the_message():
    event = load_event("audit_failed.json") | {"reason": "job error: out of memory"}

    text = all_text(render(event, {"outcome": "error", "reason_code": "job_error"}).blocks)

    assert "*Reason:* job error: out of memory" in text


def test_unparsable_lines_are_shown_by_file_and_line_number():
    samples = [
        {"line": line, "file": "s3://src/sales/orders/ragged.csv?versionId=v1", "text": text}
        for line, text in ((3, "2,bob"), (5, "x4,dee,1.00"))
    ]
    report = {
        "checks": [
            {
                "name": "parse_errors",
                "kind": "parse_errors",
                "columns": [],
                "status": "failed",
                "severity": "error",
                "violations": 3,
                "threshold": {"max": 0},
                "samples": samples,
            }
        ]
    }

    text = all_text(render(load_event("audit_failed.json"), report).blocks)

    assert "Unparsable lines (file, line, text):" in text
    assert "ragged.csv:3: 2,bob" in text and "ragged.csv:5: x4,dee,1.00" in text
    assert "Sample violating rows" not in text


def test_a_learned_check_says_its_value_band_and_where_it_came_from():
    """Issue 39: an anomaly check's alert carries the explanation the job wrote."""
    explained = "row_count 512; expected 9,600 to 10,400 from the last 10 published drops"
    report = {
        "checks": [
            {
                "name": "rows_as_usual",
                "kind": "anomaly",
                "severity": "error",
                "status": "failed",
                "violations": 1,
                "observed": 512,
                "threshold": {"low": 9_600, "high": 10_400, "drops": 10},
                "settled_by": "metrics",
                "message": explained,
            }
        ],
        "reason": f"1 error-severity check(s) did not pass: rows_as_usual ({explained})",
    }
    message = render(load_event("audit_failed.json"), report)
    assert_valid_blocks(message.blocks)
    assert explained in all_text(message.blocks)
