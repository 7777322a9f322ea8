"""send_alert and the handler end to end: real slack-sdk client, the Slack stand-in, moto."""

from __future__ import annotations

import json
import logging
import time
import traceback
from dataclasses import dataclass

import pytest

from ingestion.alerting.config import AlertConfig
from ingestion.alerting.exceptions import (
    AlertConfigError,
    AlertDeliveryError,
    AlertEventError,
    AlertRejectedError,
)
from ingestion.alerting.log import logger
from ingestion.alerting.notify import send_alert
from ingestion.batching import failing_files
from ingestion.ledger import BatchRecord
from tests.fixtures.alerts import ALERT_EVENTS, TOKEN, load_event
from wap.cli.render import alert_links

from .blockkit import all_text, assert_valid_blocks

BRANCH = "wap_sales_orders_20261122T101500_01234567"


def all_log_output(caplog) -> str:
    """Every captured record, both as message and as Powertools' JSON line."""
    formatter = logger.registered_formatter
    return "\n".join(
        f"{record.getMessage()}\n{formatter.format(record)}\n{record.__dict__}"
        for record in caplog.records
    )


def exception_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc.__dict__) + repr(exc.args)


def send_without_report(secretsmanager, **kwargs) -> dict:
    """send_alert for the failed-audit event with no report to read (no S3 involved)."""
    return send_alert(
        load_event("audit_failed.json") | {"report_uri": None},
        secretsmanager=secretsmanager,
        **kwargs,
    )


def test_failed_audit_alert_is_posted_with_everything_to_act_on(
    alert_env, stored_report, s3, secretsmanager, slack, fast_retry
):
    event = load_event("audit_failed.json")

    result = send_alert(event, s3=s3, secretsmanager=secretsmanager, retry=fast_retry)

    [message] = slack.messages
    assert result == {
        "delivered": True,
        "channel": slack.channel_id("#wap-alerts"),
        "ts": message["ts"],
        "ingest_id": "0123456789abcdef",
        "table": "sales.orders",
        "outcome": "AUDIT_FAILED",
    }
    assert message["channel_name"] == "wap-alerts"
    assert_valid_blocks(message["blocks"])
    text = all_text(message["blocks"])
    for expected in (
        "sales.orders",
        "s3://wap-source/sales/orders/2026-11-22.parquet",
        "AUDIT_FAILED",
        "2 error checks failed: order_id_not_null, amount_range",
        "order_id_not_null",
        "Violations: *3*",
        '{"order_id": null, "amount": 1.5}',
        "amount_range",
        "Violations: *41*",
        '{"order_id": 19, "amount": 12000.0}',
        f"<https://nessie.example.com/tree/{BRANCH}|{BRANCH}>",
    ):
        assert expected in text, expected
    assert "sales.orders" in message["text"] and "order_id_not_null" in message["text"]
    assert event == load_event("audit_failed.json")  # the event is not modified


def test_report_from_a_file_uri(alert_env, secretsmanager, slack, fast_retry, tmp_path):
    report = tmp_path / "report.json"
    report.write_text((ALERT_EVENTS / "report_failed.json").read_text())
    event = load_event("audit_failed.json") | {"report_uri": report.as_uri()}

    assert send_alert(event, secretsmanager=secretsmanager, retry=fast_retry)["delivered"]

    assert "Violations: *41*" in all_text(slack.messages[0]["blocks"])


def test_missing_report_still_alerts_and_says_so(alert_env, s3, secretsmanager, slack, fast_retry):
    s3.create_bucket(
        Bucket="wap-artifacts", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    event = load_event("audit_failed.json")

    assert send_alert(event, s3=s3, secretsmanager=secretsmanager, retry=fast_retry)["delivered"]

    text = all_text(slack.messages[0]["blocks"])
    assert "Audit report unavailable" in text and "NoSuchKey" in text


# "no value": the secret exists but holds no version yet (Secrets Manager has no empty strings).
@pytest.mark.parametrize("secret", [None, "no value", "   ", json.dumps({"token": ""}), "{}"])
def test_without_a_token_the_alert_is_logged_not_posted(
    monkeypatch, secretsmanager, slack, stored_report, s3, caplog, secret
):
    monkeypatch.setenv("WAP_SLACK_CHANNEL", "#wap-alerts")
    monkeypatch.setenv("WAP_SLACK_API_URL", slack.api_url)
    monkeypatch.delenv("WAP_SLACK_SECRET_ARN", raising=False)
    if secret is not None:
        value = {} if secret == "no value" else {"SecretString": secret}
        arn = secretsmanager.create_secret(Name="wap/slack", **value)["ARN"]
        monkeypatch.setenv("WAP_SLACK_SECRET_ARN", arn)
    caplog.set_level(logging.INFO)

    result = send_alert(load_event("audit_failed.json"), s3=s3, secretsmanager=secretsmanager)

    assert result["delivered"] is False
    assert result["reason"] == "no slack token configured"
    assert slack.requests == []
    [record] = [r for r in caplog.records if r.getMessage() == "slack alert not delivered"]
    assert record.levelno == logging.WARNING
    assert record.reason == "no slack token configured"
    line = json.loads(logger.registered_formatter.format(record))
    assert line["alert"]["event"]["table"] == "sales.orders"
    assert line["alert"]["event"]["branch"] == BRANCH
    assert line["alert"]["failed_checks_total"] == 3
    assert {"name": "order_id_not_null", "violations": 3}.items() <= (
        line["alert"]["failed_checks"][1].items()
    )


def test_a_secret_that_does_not_exist_counts_as_no_token(monkeypatch, secretsmanager, slack):
    monkeypatch.setenv(
        "WAP_SLACK_SECRET_ARN", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gone-AbCdEf"
    )
    monkeypatch.setenv("WAP_SLACK_CHANNEL", "#wap-alerts")

    assert send_without_report(secretsmanager)["delivered"] is False
    assert slack.requests == []


def test_raw_token_secret_is_accepted(monkeypatch, secretsmanager, slack, fast_retry):
    arn = secretsmanager.create_secret(Name="raw", SecretString=f"  {TOKEN}\n")["ARN"]
    config = AlertConfig(
        slack_secret_arn=arn, slack_channel="wap-alerts", slack_api_url=slack.api_url
    )

    assert send_without_report(secretsmanager, config=config, retry=fast_retry)["delivered"]
    assert len(slack.messages) == 1


def test_rate_limited_twice_then_delivered_once(
    alert_env, secretsmanager, slack, fast_retry, sleeps
):
    slack.fail_next(2, "rate_limited", retry_after=3)

    result = send_without_report(secretsmanager, retry=fast_retry)

    assert result["delivered"] is True
    assert len(slack.messages) == 1
    assert [r["status"] for r in slack.requests] == [429, 429, 200]
    assert sleeps == [3.0, 3.0]  # Slack's Retry-After, honoured


def test_retry_after_beyond_budget_is_left_to_step_functions(
    alert_env, secretsmanager, slack, fast_retry, sleeps
):
    slack.fail_next(1, "rate_limited", retry_after=120)

    with pytest.raises(AlertDeliveryError, match="HTTP 429, error ratelimited") as caught:
        send_without_report(secretsmanager, retry=fast_retry)

    assert caught.value.status == 429
    assert slack.request_count() == 1 and sleeps == []


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_forever_raise_after_bounded_retries(
    alert_env, secretsmanager, slack, fast_retry, sleeps, caplog, status
):
    slack.fail_next(None, "server_error", status=status)
    caplog.set_level(logging.DEBUG)
    started = time.monotonic()

    with pytest.raises(AlertDeliveryError) as caught:
        send_without_report(secretsmanager, retry=fast_retry)

    assert time.monotonic() - started < 5
    assert slack.request_count() == 1 + fast_retry.max_retries
    assert len(sleeps) == fast_retry.max_retries
    assert f"HTTP {status}" in str(caught.value) and caught.value.status == status
    assert slack.messages == []
    assert TOKEN not in exception_text(caught.value)
    assert TOKEN not in all_log_output(caplog)
    assert any(
        r.getMessage() == "slack alert not delivered" and r.levelno == logging.ERROR
        for r in caplog.records
    )


def test_dropped_connections_are_retried(alert_env, secretsmanager, slack, fast_retry):
    slack.fail_next(2, "disconnect")

    result = send_without_report(secretsmanager, retry=fast_retry)

    assert result["delivered"] is True
    assert [r["status"] for r in slack.requests] == ["disconnect", "disconnect", 200]


def test_slack_unreachable_raises_delivery_error(
    monkeypatch, alert_env, secretsmanager, slack, fast_retry, caplog
):
    slack.fail_next(None, "disconnect")
    caplog.set_level(logging.DEBUG)

    with pytest.raises(AlertDeliveryError, match="Slack unreachable after retries") as caught:
        send_without_report(secretsmanager, retry=fast_retry)

    assert slack.request_count() == 1 + fast_retry.max_retries
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert TOKEN not in exception_text(caught.value) + all_log_output(caplog)


@pytest.mark.parametrize(
    ("channel", "code"), [("#nope", "channel_not_found"), ("#muted", "not_in_channel")]
)
def test_non_retryable_slack_errors_raise_at_once_with_the_code(
    monkeypatch, alert_env, secretsmanager, slack, fast_retry, sleeps, channel, code
):
    slack.add_channel("#muted", member=False)
    monkeypatch.setenv("WAP_SLACK_CHANNEL", channel)

    with pytest.raises(AlertRejectedError, match=code) as caught:
        send_without_report(secretsmanager, retry=fast_retry)

    assert caught.value.slack_error == code
    assert slack.request_count() == 1 and sleeps == []
    assert not isinstance(caught.value, AlertDeliveryError)  # Step Functions must not retry


def test_invalid_auth_raises_and_never_shows_the_token(
    monkeypatch, secretsmanager, slack, fast_retry, caplog
):
    wrong = "xoxb-9999-wrong-t0ken-value"
    arn = secretsmanager.create_secret(Name="wap/slack", SecretString=json.dumps({"token": wrong}))[
        "ARN"
    ]
    config = AlertConfig(
        slack_secret_arn=arn, slack_channel="#wap-alerts", slack_api_url=slack.api_url
    )
    caplog.set_level(logging.DEBUG)

    with pytest.raises(AlertRejectedError, match="invalid_auth") as caught:
        send_without_report(secretsmanager, config=config, retry=fast_retry)

    assert wrong not in exception_text(caught.value) + all_log_output(caplog)


def test_token_never_in_logs_or_result_when_delivered(
    alert_env, stored_report, s3, secretsmanager, slack, fast_retry, caplog
):
    caplog.set_level(logging.DEBUG)

    result = send_alert(
        load_event("audit_failed.json"), s3=s3, secretsmanager=secretsmanager, retry=fast_retry
    )

    assert result["delivered"] is True
    assert TOKEN not in json.dumps(result) + all_log_output(caplog)


def test_hostile_data_and_a_thousand_failing_checks_are_accepted_by_slack(
    alert_env, s3, secretsmanager, slack, fast_retry, tmp_path
):
    report = {
        "report_version": 1,
        "ingest_id": "0123456789abcdef",
        "table": "sales.orders",
        "branch": "wap_sales_orders_20261122T101500_01234567",
        "outcome": "failed",
        "checks": [
            {
                "name": f"c{i}<&>" + "x" * 500,
                "kind": "expression",
                "columns": ["a" * 5000],
                "severity": "error",
                "status": "failed",
                "violations": 10_000 + i,
                "threshold": {"sql": "a < 1 & b > 2" * 100},
                "samples": [{"v": "<!here> & " * 60}] * 5,
            }
            for i in range(1000)
        ],
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    event = load_event("audit_failed.json") | {
        "report_uri": path.as_uri(),
        "reason": "<&>" * 5000,
        "source_uri": "s3://b/" + "k" * 9000,
    }

    # The stand-in answers invalid_blocks / msg_blocks_too_long as Slack would.
    assert send_alert(event, secretsmanager=secretsmanager, retry=fast_retry)["delivered"]

    [message] = slack.messages
    assert_valid_blocks(message["blocks"])
    text = all_text(message["blocks"])
    assert "<!here>" not in text and "&lt;!here&gt; &amp;" in text
    assert "1000 of 1000 checks did not pass" in text


def test_a_failed_dataset_of_500_files_says_which_failed_within_slacks_limits(
    alert_env, stored_report, s3, secretsmanager, slack, fast_retry
):
    """A dataset published all or nothing may hold 500 files, most of them failing with
    long, hostile names: the alert counts them all, names what fits, and Slack takes it."""
    sources = [
        f"s3://wap-source/sales/orders/dt=1/part-{i:05d}<&>{'x' * 150}.parquet" for i in range(500)
    ]
    verdicts = [
        {"uri": uri, "status": "passed", "rows": 10, "failed_checks": [], "reason": None}
        if i % 100 == 0
        else {
            "uri": uri,
            "status": "rejected",
            "rows": None,
            "failed_checks": [],
            "reason": "<!here> not parquet " * 40,
        }
        if i % 7 == 0
        else {
            "uri": uri,
            "status": "failed",
            "rows": 10,
            "reason": None,
            "failed_checks": [f"amount_range_{j}<&>" for j in range(30)],
        }
        for i, uri in enumerate(sources)
    ]
    report = stored_report | {"sources": verdicts}
    s3.put_object(
        Bucket="wap-artifacts",
        Key="reports/0123456789abcdef.json",
        Body=json.dumps(report).encode(),
    )
    event = load_event("audit_failed.json")
    batch = BatchRecord(
        ingest_id=event["ingest_id"],
        report_uri=event["report_uri"],
        members=tuple(f"m{i}" for i in range(500)),
        sources=tuple(sources),
    )
    event |= {"reason": failing_files(batch), "source_uri": "s3://wap-source/sales/orders/dt=1"}

    assert send_alert(event, s3=s3, secretsmanager=secretsmanager, retry=fast_retry)["delivered"]

    [message] = slack.messages
    assert_valid_blocks(message["blocks"])
    text = all_text(message["blocks"])
    assert "*Files:* 500 in this run, 495 did not pass" in text
    assert "part-00001&lt;&amp;&gt;" in text and "<!here>" not in text
    shown = text.count("• `part-")
    assert 0 < shown < 495 and f"…and {495 - shown} more" in text
    assert "495 of 500 files failed" in text  # the reason, as the ledger records it
    assert "495 of 500 files failed" in message["text"]  # said once: by the reason
    assert "did not pass" not in message["text"]


def test_bad_event_is_refused_and_logged(caplog, slack):
    caplog.set_level(logging.INFO)

    with pytest.raises(AlertEventError, match="'outcome'"):
        send_alert({"ingest_id": "abc", "table": "sales.orders"}, config=AlertConfig())

    assert any(r.getMessage() == "alert event rejected" for r in caplog.records)
    assert slack.requests == []


def test_token_without_channel_is_a_config_error(monkeypatch, alert_env, secretsmanager, slack):
    monkeypatch.delenv("WAP_SLACK_CHANNEL")

    with pytest.raises(AlertConfigError, match="WAP_SLACK_CHANNEL"):
        send_without_report(secretsmanager)
    assert slack.requests == []


def test_bad_urls_in_the_environment_are_refused():
    with pytest.raises(AlertConfigError, match="WAP_NESSIE_UI_URL"):
        AlertConfig.from_env({"WAP_NESSIE_UI_URL": "javascript:alert(1)"})
    assert AlertConfig.from_env({"WAP_SLACK_API_URL": "http://127.0.0.1:1/api"}).slack_api_url == (
        "http://127.0.0.1:1/api/"
    )


@dataclass
class FakeLambdaContext:
    function_name: str = "wap-alert"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:wap-alert"
    aws_request_id: str = "req-1"


def test_handler_posts_and_logs_structured_json(
    alert_env, stored_report, slack, caplog, monkeypatch
):
    from lambdas.alert.handler import handler

    caplog.set_level(logging.INFO)

    result = handler(load_event("audit_failed.json"), FakeLambdaContext())

    assert result["delivered"] is True and len(slack.messages) == 1
    [record] = [r for r in caplog.records if r.getMessage() == "slack alert delivered"]
    line = json.loads(logger.registered_formatter.format(record))
    assert line["ingest_id"] == "0123456789abcdef"
    assert line["function_request_id"] == "req-1"
    assert line["ts"] == slack.messages[0]["ts"]


def test_bad_environment_still_logs_the_alert(monkeypatch, caplog, slack):
    monkeypatch.setenv("WAP_NESSIE_UI_URL", "ftp://nessie")
    caplog.set_level(logging.INFO)

    with pytest.raises(AlertConfigError, match="WAP_NESSIE_UI_URL"):
        send_alert(load_event("audit_failed.json"))

    [record] = [r for r in caplog.records if r.getMessage() == "slack alert not delivered"]
    assert record.alert["event"]["ingest_id"] == "0123456789abcdef"
    assert record.error_type == "AlertConfigError"


def test_aws_console_links_are_a_setting_on_by_default():
    assert AlertConfig.from_env({}).aws_console_links is True
    assert AlertConfig.from_env({"WAP_AWS_CONSOLE_LINKS": "true"}).aws_console_links is True
    assert AlertConfig.from_env({"WAP_AWS_CONSOLE_LINKS": "false"}).aws_console_links is False
    with pytest.raises(AlertConfigError, match="WAP_AWS_CONSOLE_LINKS"):
        AlertConfig.from_env({"WAP_AWS_CONSOLE_LINKS": "local"})


def test_the_local_stack_turns_aws_console_links_off_for_every_function():
    from local.aws.overrides import Kind, apply_overrides
    from local.aws.stack import StackSettings

    settings = StackSettings(
        nessie_api_v1="http://127.0.0.1:1/api/v1",
        job=None,
        poll_interval_seconds=None,
        job_retry_base_seconds=None,
    )
    # A function the template gives no WAP_* variable still gets it (a local-only variable).
    environment = apply_overrides(Kind.ENVIRONMENT, {}, settings.overrides(), "Lambda alert")
    assert AlertConfig.from_env(environment).aws_console_links is False


def test_a_local_alert_links_only_to_what_exists_locally(
    monkeypatch, alert_env, stored_report, s3, secretsmanager, slack, fast_retry
):
    monkeypatch.setenv("WAP_NESSIE_UI_URL", "http://127.0.0.1:19120")
    monkeypatch.setenv("WAP_AWS_CONSOLE_LINKS", "false")
    event = load_event("audit_failed.json")

    assert send_alert(event, s3=s3, secretsmanager=secretsmanager, retry=fast_retry)["delivered"]

    [message] = slack.messages
    text = all_text(message["blocks"])
    assert "console.aws" not in text and "amazonaws" not in text
    assert all(url.startswith("http://127.0.0.1:19120/") for url in alert_links(message))
    assert f"<http://127.0.0.1:19120/tree/{BRANCH}|{BRANCH}>" in text
    # Where the report, the run and its logs are: named, not linked.
    assert f"*Report:* `{event['report_uri']}`" in text
    assert f"*Logs:* `{event['log_uri']}`" in text
    assert f"*Execution:* `{event['execution_arn']}`" in text


def test_a_multi_table_datasets_failing_files_are_named_with_their_table(
    alert_env, stored_report, s3
):
    """Two tables' files may share a name: the reason says which table each one is of."""
    sources = (
        "s3://wap-artifacts/staging/a/part-0.parquet",
        "s3://wap-artifacts/staging/b/part-0.parquet",
    )
    report = stored_report | {
        "sources": [
            {"uri": sources[0], "status": "passed", "rows": 1, "failed_checks": [], "reason": None},
            {
                "uri": sources[1],
                "status": "failed",
                "rows": 1,
                "reason": None,
                "failed_checks": ["sku_not_null"],
            },
        ]
    }
    s3.put_object(
        Bucket="wap-artifacts",
        Key="reports/0123456789abcdef.json",
        Body=json.dumps(report).encode(),
    )
    batch = BatchRecord(
        ingest_id="0123456789abcdef",
        report_uri="s3://wap-artifacts/reports/0123456789abcdef.json",
        members=("a", "b"),
        sources=sources,
        tables=("shop.order_items", "shop.orders"),
        source_tables=("shop.orders", "shop.order_items"),
    )

    assert failing_files(batch) == (
        "1 of 2 files failed: shop.order_items: part-0.parquet (sku_not_null)"
    )
