"""A local stand-in for the part of Slack's Web API we call: `auth.test` and `chat.postMessage`.

It behaves like Slack where our code can tell the difference (docs.slack.dev, Web API basics,
the two method pages and the rate-limit guide):

- Methods live under `/api/<method>`; GET query args and POST bodies (form-encoded or JSON)
  are both accepted; every answer is JSON with a boolean `ok`, errors carry a code in `error`.
- Auth: `Authorization: Bearer <token>`, or a `token` form field (never a JSON attribute:
  JSON bodies need the header). No token -> `not_authed`, wrong token -> `invalid_auth`;
  both with HTTP 200, as Slack does.
- chat.postMessage: channel by ID or name (with or without `#`) -> `channel_not_found`,
  `not_in_channel` for a channel the bot was not added to, `no_text` without text and blocks,
  `invalid_blocks` (with Slack's `[ERROR] ... [json-pointer:...]` messages) when Block Kit
  limits are broken, `msg_too_long`. Success returns `ok`, `channel` (the ID), `ts`, `message`.
- Rate limiting: HTTP 429, `Retry-After` header, body `{"ok": false, "error": "ratelimited"}`.

Tests script failures with `fail_next(n, kind)`: `rate_limited` (429), `server_error` (500 or
503, an HTML body like Slack's edge), `disconnect` (the connection closes without an answer).
Run it by hand with `python -m local.slack_standin [--port N]`.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from local.serving import BackgroundServer

TEAM_ID = "T0WAPLOCAL"
TEAM_NAME = "WAP Local"
BOT_USER_ID = "U0WAPBOT01"
BOT_ID = "B0WAPBOT01"
APP_ID = "A0WAPAPP01"
BOT_NAME = "wap-alerts"

FAILURE_KINDS = ("rate_limited", "server_error", "disconnect")

# Block Kit limits (docs.slack.dev/reference/block-kit/blocks).
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_SECTION_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_BLOCK_ID = 255
# Not documented; Slack answers msg_blocks_too_long at roughly this many characters of text
# across all blocks (reported in slackapi/bolt-js#2509).
MAX_BLOCKS_TOTAL_TEXT = 13_000
# chat.postMessage: "truncates messages containing more than 40,000 characters"; we reject
# instead (msg_too_long), which is the stricter reading and flags the bug in the caller.
MAX_MESSAGE_TEXT = 40_000
BLOCK_TYPES = frozenset(
    {
        "section",
        "header",
        "divider",
        "context",
        "actions",
        "image",
        "rich_text",
        "input",
        "file",
        "video",
        "markdown",
    }
)
TEXT_TYPES = frozenset({"plain_text", "mrkdwn"})


@dataclass
class Channel:
    """A channel of the stand-in's workspace."""

    id: str
    name: str
    member: bool = True


class SlackApiError(Exception):
    """An ok:false answer: HTTP status, Slack's error code and any extra body fields."""

    def __init__(self, error: str, *, status: int = 200, **extra: Any):
        super().__init__(error)
        self.error = error
        self.status = status
        self.extra = extra


def _channel_id(name: str) -> str:
    return "C" + hashlib.sha1(name.encode()).hexdigest()[:10].upper()  # noqa: S324 (an id)


def validate_blocks(blocks: Any) -> list[str]:
    """Slack-style `[ERROR] ... [json-pointer:...]` messages for Block Kit limit violations."""
    if not isinstance(blocks, list):
        return ["[ERROR] must provide an array [json-pointer:/blocks]"]
    errors: list[str] = []
    if len(blocks) > MAX_BLOCKS:
        errors.append(f"[ERROR] no more than {MAX_BLOCKS} items allowed [json-pointer:/blocks]")
    for i, block in enumerate(blocks):
        errors.extend(_validate_block(block, f"/blocks/{i}"))
    return errors


def _validate_text(obj: Any, pointer: str, limit: int, types=TEXT_TYPES) -> list[str]:
    if (
        not isinstance(obj, dict)
        or obj.get("type") not in types
        or not isinstance(obj.get("text"), str)
    ):
        return [f"[ERROR] failed to match all allowed schemas [json-pointer:{pointer}]"]
    if not obj["text"]:
        return [f"[ERROR] must be more than 0 characters [json-pointer:{pointer}/text]"]
    if len(obj["text"]) > limit:
        return [f"[ERROR] must be less than {limit + 1} characters [json-pointer:{pointer}/text]"]
    return []


def _validate_block(block: Any, pointer: str) -> list[str]:
    if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
        return [f"[ERROR] failed to match all allowed schemas [json-pointer:{pointer}]"]
    errors: list[str] = []
    block_id = block.get("block_id")
    if block_id is not None and (not isinstance(block_id, str) or len(block_id) > MAX_BLOCK_ID):
        errors.append(
            f"[ERROR] must be less than {MAX_BLOCK_ID + 1} characters "
            f"[json-pointer:{pointer}/block_id]"
        )
    kind = block["type"]
    if kind == "section":
        if "text" not in block and "fields" not in block:
            errors.append(f"[ERROR] must provide text or fields [json-pointer:{pointer}]")
        if "text" in block:
            errors.extend(_validate_text(block["text"], f"{pointer}/text", MAX_SECTION_TEXT))
        fields = block.get("fields")
        if fields is not None:
            if not isinstance(fields, list) or len(fields) > MAX_SECTION_FIELDS:
                errors.append(
                    f"[ERROR] no more than {MAX_SECTION_FIELDS} items allowed "
                    f"[json-pointer:{pointer}/fields]"
                )
            else:
                for j, item in enumerate(fields):
                    errors.extend(_validate_text(item, f"{pointer}/fields/{j}", MAX_FIELD_TEXT))
    elif kind == "header":
        errors.extend(
            _validate_text(block.get("text"), f"{pointer}/text", MAX_HEADER_TEXT, {"plain_text"})
        )
    elif kind == "context":
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements:
            errors.append(f"[ERROR] must provide an array [json-pointer:{pointer}/elements]")
        elif len(elements) > MAX_CONTEXT_ELEMENTS:
            errors.append(
                f"[ERROR] no more than {MAX_CONTEXT_ELEMENTS} items allowed "
                f"[json-pointer:{pointer}/elements]"
            )
        else:
            for j, element in enumerate(elements):
                if isinstance(element, dict) and element.get("type") == "image":
                    continue
                errors.extend(_validate_text(element, f"{pointer}/elements/{j}", MAX_SECTION_TEXT))
    return errors


def _blocks_text_length(blocks: list[Any]) -> int:
    total = 0
    for block in blocks:
        if not isinstance(block, dict):
            continue
        for obj in [
            block.get("text"),
            *(block.get("fields") or []),
            *(block.get("elements") or []),
        ]:
            if isinstance(obj, dict) and isinstance(obj.get("text"), str):
                total += len(obj["text"])
    return total


class SlackStandin(BackgroundServer):
    """The running stand-in: its URL, what it received, and the failures scripted for it."""

    def __init__(self, token: str, channels: tuple[str, ...], *, port: int = 0):
        self.token = token
        self._lock = threading.Lock()
        self._channels: dict[str, Channel] = {}
        self._messages: list[dict[str, Any]] = []
        self._requests: list[dict[str, Any]] = []
        self._failures: deque[dict[str, Any]] = deque()
        self._forever: dict[str, Any] | None = None
        self._ts = itertools.count(1)
        for name in channels:
            self.add_channel(name)
        self._serve(_make_handler(self), port, "slack-standin")

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> SlackStandin:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        """What `WebClient(base_url=...)` takes: `http://127.0.0.1:PORT/api/`."""
        return f"{self.url}/api/"

    # -- workspace -------------------------------------------------------------------------
    def add_channel(self, name: str, *, member: bool = True) -> str:
        """Create a channel (`member=False`: the bot was not added to it); returns its ID."""
        bare = name.lstrip("#")
        channel = Channel(id=_channel_id(bare), name=bare, member=member)
        with self._lock:
            self._channels[bare] = channel
        return channel.id

    def channel_id(self, name: str) -> str:
        return self._channels[name.lstrip("#")].id

    # -- observations ----------------------------------------------------------------------
    @property
    def messages(self) -> list[dict[str, Any]]:
        """Messages posted successfully: channel (ID), channel_name, ts, text, blocks, args."""
        with self._lock:
            return [dict(m) for m in self._messages]

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received: `{"method", "status"}` (status "disconnect" when dropped)."""
        with self._lock:
            return [dict(r) for r in self._requests]

    def request_count(self, method: str | None = None) -> int:
        return sum(1 for r in self.requests if method is None or r["method"] == method)

    # -- scripted failures -----------------------------------------------------------------
    def fail_next(
        self,
        n: int | None,
        kind: str = "rate_limited",
        *,
        retry_after: int = 1,
        status: int = 500,
    ) -> None:
        """Fail the next `n` requests (None: every request until clear_failures()).

        kind: `rate_limited` (429 with `Retry-After: retry_after`), `server_error` (`status`,
        500 or 503), `disconnect` (connection closed without a response).
        """
        if kind not in FAILURE_KINDS:
            raise ValueError(f"kind must be one of {FAILURE_KINDS}, got {kind!r}")
        if kind == "server_error" and not 500 <= status <= 599:
            raise ValueError(f"server_error status must be 5xx, got {status}")
        failure = {"kind": kind, "retry_after": retry_after, "status": status}
        with self._lock:
            if n is None:
                self._forever = failure
            else:
                self._failures.extend(dict(failure) for _ in range(n))

    def clear_failures(self) -> None:
        with self._lock:
            self._failures.clear()
            self._forever = None

    def _take_failure(self) -> dict[str, Any] | None:
        with self._lock:
            if self._failures:
                return self._failures.popleft()
            return self._forever

    def _record(self, method: str, status: int | str) -> None:
        with self._lock:
            self._requests.append({"method": method, "status": status})

    # -- API methods -----------------------------------------------------------------------
    def call(self, method: str, token: str | None, args: dict[str, Any]) -> dict[str, Any]:
        """Run one API method; raises SlackApiError for ok:false answers."""
        handler = {"auth.test": self._auth_test, "chat.postMessage": self._post_message}.get(method)
        if handler is None:
            raise SlackApiError("unknown_method", status=404, req_method=method)
        if not token:
            raise SlackApiError("not_authed")
        if token != self.token:
            raise SlackApiError("invalid_auth")
        return handler(args)

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://wap-local.slack.com/",
            "team": TEAM_NAME,
            "user": BOT_NAME,
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _resolve_channel(self, value: Any) -> Channel:
        if not isinstance(value, str) or not value:
            raise SlackApiError("channel_not_found")
        with self._lock:
            by_name = self._channels.get(value.lstrip("#"))
            by_id = next((c for c in self._channels.values() if c.id == value), None)
        channel = by_id or by_name
        if channel is None:
            raise SlackApiError("channel_not_found")
        if not channel.member:
            raise SlackApiError("not_in_channel")
        return channel

    def _post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._resolve_channel(args.get("channel"))
        blocks = args.get("blocks")
        if isinstance(blocks, str):  # form-encoded bodies carry blocks as a JSON string
            try:
                blocks = json.loads(blocks)
            except json.JSONDecodeError:
                raise SlackApiError("invalid_blocks_format") from None
        text = args.get("text")
        if text is not None and not isinstance(text, str):
            text = str(text)
        if not text and not blocks and not args.get("attachments"):
            raise SlackApiError("no_text")
        if blocks is not None:
            errors = validate_blocks(blocks)
            if errors:
                raise SlackApiError(
                    "invalid_blocks",
                    errors=[e.removeprefix("[ERROR] ") for e in errors],
                    response_metadata={"messages": errors},
                )
            if _blocks_text_length(blocks) > MAX_BLOCKS_TOTAL_TEXT:
                raise SlackApiError("msg_blocks_too_long")
        if text and len(text) > MAX_MESSAGE_TEXT:
            raise SlackApiError("msg_too_long")
        ts = f"{int(time.time())}.{next(self._ts):06d}"
        message = {
            "user": BOT_USER_ID,
            "type": "message",
            "ts": ts,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "text": text or "",
            "team": TEAM_ID,
            "bot_profile": {
                "id": BOT_ID,
                "app_id": APP_ID,
                "name": BOT_NAME,
                "deleted": False,
                "team_id": TEAM_ID,
            },
        }
        if blocks:
            message["blocks"] = blocks
        with self._lock:
            self._messages.append(
                {
                    "channel": channel.id,
                    "channel_name": channel.name,
                    "ts": ts,
                    "text": text or "",
                    "blocks": blocks or [],
                    "args": dict(args),
                }
            )
        return {"ok": True, "channel": channel.id, "ts": ts, "message": message}


def _parse_request(
    content_type: str, body: bytes, query: str
) -> tuple[dict[str, Any], str | None, list[str]]:
    """(args, token from the body/query, warnings); raises SlackApiError for bad bodies."""
    args: dict[str, Any] = dict(parse_qsl(query, keep_blank_values=True))
    warnings: list[str] = []
    media_type, _, params = content_type.partition(";")
    media_type = media_type.strip().lower()
    if body:
        if media_type == "application/json":
            if "charset" not in params.lower():
                warnings.append("missing_charset")
            try:
                document = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise SlackApiError("invalid_json") from None
            if not isinstance(document, dict):
                raise SlackApiError("invalid_json")
            # A token inside a JSON body is not read: JSON needs the Authorization header.
            document.pop("token", None)
            args.update(document)
        elif media_type == "application/x-www-form-urlencoded":
            try:
                args.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
            except UnicodeDecodeError:
                raise SlackApiError("invalid_form_data") from None
        else:
            raise SlackApiError("invalid_post_type")
    token = args.pop("token", None)
    return args, token, warnings


def _make_handler(standin: SlackStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "slack-standin"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # requests are recorded in standin.requests; keep test output clean

        def do_GET(self) -> None:
            self._dispatch()

        def do_POST(self) -> None:
            self._dispatch()

        def _dispatch(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if not url.path.startswith("/api/"):
                self._send(404, b"Not Found", "text/plain")
                return
            method = url.path.removeprefix("/api/")
            failure = standin._take_failure()
            if failure is not None:
                self._fail(method, failure)
                return
            try:
                args, body_token, warnings = _parse_request(
                    self.headers.get("Content-Type", ""), body, url.query
                )
                token = _bearer(self.headers.get("Authorization")) or body_token
                answer = standin.call(method, token, args)
                if warnings:
                    answer["warning"] = ",".join(warnings)
                    answer["response_metadata"] = {"warnings": warnings}
                status = 200
            except SlackApiError as exc:
                answer = {"ok": False, "error": exc.error, **exc.extra}
                status = exc.status
            standin._record(method, status)
            self._send(status, json.dumps(answer).encode(), "application/json; charset=utf-8")

        def _fail(self, method: str, failure: dict[str, Any]) -> None:
            kind = failure["kind"]
            if kind == "disconnect":
                standin._record(method, "disconnect")
                self.close_connection = True  # no status line: the client sees the drop
                return
            if kind == "rate_limited":
                standin._record(method, 429)
                body = json.dumps({"ok": False, "error": "ratelimited"}).encode()
                self._send(
                    429,
                    body,
                    "application/json; charset=utf-8",
                    {"Retry-After": str(failure["retry_after"])},
                )
                return
            status = failure["status"]
            standin._record(method, status)
            page = f"<html><body><h1>{status} Server Error</h1></body></html>".encode()
            self._send(status, page, "text/html")

        def _send(
            self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Slack-Req-Id", uuid.uuid4().hex)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def start_slack_standin(
    token: str = "xoxb-test",  # noqa: S107 (the stand-in's own test token)
    channels: tuple[str, ...] = ("#wap-alerts",),
    *,
    port: int = 0,
) -> SlackStandin:
    """Start the stand-in on 127.0.0.1 (port 0: a free one); call `.stop()` when done."""
    return SlackStandin(token, tuple(channels), port=port).start()


def main(argv: list[str] | None = None) -> None:
    """`python -m local.slack_standin`: serve until interrupted, printing what arrives."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", default="xoxb-test")
    parser.add_argument("--channel", action="append", default=None)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    channels = tuple(args.channel or ["#wap-alerts"])
    standin = start_slack_standin(args.token, channels, port=args.port)
    print(f"Slack stand-in: WAP_SLACK_API_URL={standin.api_url}", flush=True)
    seen = 0
    try:
        while True:
            time.sleep(0.5)
            for message in standin.messages[seen:]:
                print(f"#{message['channel_name']} {message['ts']}: {message['text']}", flush=True)
            seen = len(standin.messages)
    except KeyboardInterrupt:
        pass
    finally:
        standin.stop()


if __name__ == "__main__":
    main()
