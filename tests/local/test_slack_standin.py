"""The stand-in answers like Slack's Web API (docs.slack.dev: Web API basics, auth.test,
chat.postMessage, rate limits), checked both raw over HTTP and through the real slack-sdk."""

from __future__ import annotations

import http.client
import json
import re
import urllib.request
from urllib.error import HTTPError

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from local.slack_standin import start_slack_standin
from tests.fixtures.alerts import TOKEN


@pytest.fixture
def slack():
    """The stand-in, knowing TOKEN and #wap-alerts."""
    standin = start_slack_standin(token=TOKEN, channels=("#wap-alerts",))
    yield standin
    standin.stop()


def raw_post(standin, method: str, body: bytes, content_type: str, headers=None):
    """(status, headers, body) of one POST, without any client library in between."""
    request = urllib.request.Request(
        standin.api_url + method,
        data=body,
        method="POST",
        headers={"Content-Type": content_type, **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers, json.loads(response.read())
    except HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def test_missing_token_is_not_authed_with_http_200(slack):
    status, headers, body = raw_post(slack, "auth.test", b"{}", "application/json; charset=utf-8")

    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert body == {"ok": False, "error": "not_authed"}


def test_wrong_token_is_invalid_auth_with_http_200(slack):
    status, _, body = raw_post(
        slack,
        "auth.test",
        b"",
        "application/x-www-form-urlencoded",
        {"Authorization": "Bearer xoxb-not-the-token"},
    )

    assert (status, body) == (200, {"ok": False, "error": "invalid_auth"})


def test_token_as_form_field_is_accepted_but_not_as_json_attribute(slack):
    form = f"token={TOKEN}&channel=wap-alerts&text=hello".encode()
    status, _, body = raw_post(slack, "chat.postMessage", form, "application/x-www-form-urlencoded")
    assert status == 200 and body["ok"] is True

    as_json = json.dumps({"token": TOKEN, "channel": "wap-alerts", "text": "hello"}).encode()
    _, _, body = raw_post(slack, "chat.postMessage", as_json, "application/json; charset=utf-8")
    assert body == {"ok": False, "error": "not_authed"}


def test_auth_test_response_shape(slack):
    response = WebClient(token=TOKEN, base_url=slack.api_url).auth_test()

    assert response.status_code == 200
    assert response["ok"] is True
    assert set(response.data) >= {"ok", "url", "team", "user", "team_id", "user_id", "bot_id"}
    assert response["team_id"].startswith("T") and response["user_id"].startswith("U")
    assert response["url"].startswith("https://") and response["url"].endswith("/")


def test_post_message_response_shape_and_recording(slack):
    client = WebClient(token=TOKEN, base_url=slack.api_url)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi* &lt;there&gt;"}}]

    response = client.chat_postMessage(channel="#wap-alerts", text="hi", blocks=blocks)

    channel_id = slack.channel_id("#wap-alerts")
    assert response["ok"] is True
    assert response["channel"] == channel_id and re.fullmatch(r"C[A-Z0-9]+", channel_id)
    assert re.fullmatch(r"\d{10}\.\d{6}", response["ts"])
    message = response["message"]
    assert message["type"] == "message" and message["ts"] == response["ts"]
    assert message["text"] == "hi" and message["blocks"] == blocks
    assert message["bot_id"].startswith("B")
    [recorded] = slack.messages
    assert recorded["channel"] == channel_id and recorded["channel_name"] == "wap-alerts"
    assert recorded["text"] == "hi" and recorded["blocks"] == blocks
    assert recorded["ts"] == response["ts"]


def test_channel_by_id_and_ts_are_unique(slack):
    client = WebClient(token=TOKEN, base_url=slack.api_url)
    first = client.chat_postMessage(channel=slack.channel_id("wap-alerts"), text="one")
    second = client.chat_postMessage(channel="wap-alerts", text="two")

    assert first["channel"] == second["channel"]
    assert first["ts"] != second["ts"]


@pytest.mark.parametrize(
    ("channel", "error"), [("#nope", "channel_not_found"), ("#muted", "not_in_channel")]
)
def test_channel_errors(slack, channel, error):
    slack.add_channel("#muted", member=False)
    client = WebClient(token=TOKEN, base_url=slack.api_url)

    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel=channel, text="hello")

    assert caught.value.response.status_code == 200
    assert caught.value.response.data == {"ok": False, "error": error}
    assert slack.messages == []


@pytest.mark.filterwarnings("ignore:The top-level `text` argument is missing")
def test_no_text(slack):
    with pytest.raises(SlackApiError) as caught:
        WebClient(token=TOKEN, base_url=slack.api_url).chat_postMessage(channel="#wap-alerts")
    assert caught.value.response["error"] == "no_text"


def test_invalid_blocks_reports_json_pointers_like_slack(slack):
    client = WebClient(token=TOKEN, base_url=slack.api_url)
    too_long = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]

    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="#wap-alerts", text="t", blocks=too_long)

    data = caught.value.response.data
    assert data["error"] == "invalid_blocks"
    assert data["response_metadata"]["messages"] == [
        "[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]"
    ]

    too_many = [{"type": "divider"}] * 51
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="#wap-alerts", text="t", blocks=too_many)
    assert (
        "[ERROR] no more than 50 items allowed [json-pointer:/blocks]"
        in (caught.value.response.data["response_metadata"]["messages"])
    )
    header = [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}]
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="#wap-alerts", text="t", blocks=header)
    assert caught.value.response["error"] == "invalid_blocks"
    assert slack.messages == []


def test_rate_limited_is_429_with_retry_after(slack):
    slack.fail_next(1, "rate_limited", retry_after=7)

    status, headers, body = raw_post(
        slack,
        "auth.test",
        b"",
        "application/x-www-form-urlencoded",
        {"Authorization": f"Bearer {TOKEN}"},
    )

    assert status == 429
    assert headers["Retry-After"] == "7"
    assert json.loads(body) == {"ok": False, "error": "ratelimited"}
    assert slack.requests == [{"method": "auth.test", "status": 429}]


@pytest.mark.parametrize("status", [500, 503])
def test_server_error_then_recovers(slack, status):
    slack.fail_next(1, "server_error", status=status)
    auth = {"Authorization": f"Bearer {TOKEN}"}

    first, _, _ = raw_post(slack, "auth.test", b"", "application/x-www-form-urlencoded", auth)
    second, _, body = raw_post(slack, "auth.test", b"", "application/x-www-form-urlencoded", auth)

    assert (first, second, body["ok"]) == (status, 200, True)


def test_disconnect_closes_without_a_response(slack):
    slack.fail_next(1, "disconnect")
    host, port = slack.api_url.split("//")[1].split("/")[0].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)

    connection.request("POST", "/api/auth.test", body=b"", headers={"Authorization": "x"})
    with pytest.raises(http.client.RemoteDisconnected):
        connection.getresponse()
    connection.close()
    assert slack.requests == [{"method": "auth.test", "status": "disconnect"}]


def test_failures_forever_until_cleared(slack):
    slack.fail_next(None, "server_error")
    client = WebClient(token=TOKEN, base_url=slack.api_url, retry_handlers=[])
    for _ in range(3):
        with pytest.raises(SlackApiError):
            client.auth_test()
    slack.clear_failures()
    assert client.auth_test()["ok"] is True


def test_unknown_method_and_bad_kind(slack):
    with pytest.raises(SlackApiError) as caught:
        WebClient(token=TOKEN, base_url=slack.api_url).api_call("chat.nope")
    assert caught.value.response["error"] == "unknown_method"
    with pytest.raises(ValueError, match="kind must be one of"):
        slack.fail_next(1, "meteor")


def test_stop_releases_the_port():
    standin = start_slack_standin()
    url = standin.api_url
    standin.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "auth.test", timeout=2)
