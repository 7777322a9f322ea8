"""Render an alert as a Slack Block Kit message plus its plain-text fallback.

Everything that comes from data (event, report) is escaped for Slack mrkdwn (`&`, `<`, `>`)
and clipped so the message stays inside Block Kit's limits whatever the report holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from contracts.alert import BLOCKED, LATE, RECOVERED, AlertEvent, ArrivalNotice, QuarantineNotice
from contracts.lifecycle import Status
from contracts.report import (
    AUDIT_FAILED_CODE,
    FAILED,
    PARSE_ERRORS_KIND,
    SOURCE_PASSED,
    AuditReport,
    CheckResult,
    samples_title,
)
from contracts.state import AUDIT_FAILED
from ingestion.alerting.links import (
    browsable_url,
    execution_console_url,
    nessie_branch_url,
    nessie_table_url,
)

# Block Kit limits (docs.slack.dev/reference/block-kit): 50 blocks per message, 3000 characters
# per section text, 150 per header. Slack also rejects messages whose blocks add up to roughly
# 12-13k characters (msg_blocks_too_long, not documented), so we keep a total budget below that.
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_TOTAL_TEXT = 11_000
MAX_FALLBACK_TEXT = 3000

# Raw (pre-escape) lengths for single values.
_MAX_VALUE = 500
_MAX_REASON = 1500
_MAX_SAMPLE = 300
_MAX_SCHEMA_CHANGES = 10
# A batch may hold 500 files: its section names this many failing files, in this many
# characters at most, and counts the rest.
_MAX_FILES_SHOWN = 20
_MAX_FILES_TEXT = 1800

_TITLES = {
    Status.AUDIT_FAILED: "Audit failed",
    Status.REJECTED: "Ingest rejected",
    Status.JOB_FAILED: "Ingest job failed",
    Status.PUBLISH_FAILED: "Publish failed",
    BLOCKED: "Table blocked",
    Status.PUBLISHED: ":warning: Published with quarantined rows",
    LATE: ":hourglass: Late: nothing published",
    RECOVERED: ":white_check_mark: Published again",
}
_SAFE_TABLE = re.compile(r"^[A-Za-z0-9_.]{1,120}$")
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")


@dataclass(frozen=True)
class SlackMessage:
    """What chat.postMessage gets: `text` (notification fallback) and `blocks`."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


def escape(text: str) -> str:
    """Escape the three characters Slack mrkdwn treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value(value: Any, limit: int = _MAX_VALUE) -> str:
    """A data value as escaped mrkdwn, clipped before escaping so no entity is cut."""
    return escape(_clip(str(value), limit))


def _code(value: Any, limit: int = _MAX_VALUE) -> str:
    # A backtick inside inline code would end it early.
    return "`" + _value(str(value).replace("`", "'"), limit) + "`"


def fit(text: str, limit: int) -> str:
    """Cut already-escaped mrkdwn to `limit` characters without splitting an entity."""
    if len(text) <= limit:
        return text
    cut = _PARTIAL_ENTITY.sub("", text[: limit - 1])
    return cut + "…"


def outcome_title(outcome: str) -> str:
    """A human title for an outcome; unknown outcomes are named generically."""
    if outcome in _TITLES:
        return _TITLES[outcome]
    name = re.sub(r"[^A-Za-z0-9_]", "", outcome)[:40] or "UNKNOWN"
    return f"Ingest ended with {name}"


def _text_length(blocks: list[dict[str, Any]]) -> int:
    total = 0
    for block in blocks:
        if "text" in block:
            total += len(block["text"]["text"])
        for element in block.get("elements", ()):
            total += len(element.get("text", ""))
    return total


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": fit(text, MAX_SECTION_TEXT)}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": fit(text, 2000)}]}


def _link(url: str | None, label: str) -> str:
    """`<url|label>` when there is a URL, else the label alone; label is already escaped."""
    if not url:
        return label
    return f"<{escape(url)}|{label}>"


def _linked(url: str | None, label: str) -> str:
    # Formatting inside a link label is not reliably rendered: plain label when linked.
    return _link(url, _value(label)) if url else _code(label)


def _summary(event: AlertEvent, report: AuditReport | None, *, with_reason: bool) -> str:
    lines = [f"*Table:* {_code(event.table)}"]
    if event.source_uri:
        lines.append(f"*Source:* {_code(event.source_uri)}")
    lines.append(f"*Outcome:* {_code(event.outcome, 80)}")
    if event.reason and with_reason:
        lines.append(f"*Reason:* {_value(event.reason, _MAX_REASON)}")
    lines.append(f"*Ingest:* {_code(event.ingest_id, 80)}")
    if report:
        lines.append(f"*Rows written on the branch:* {report.rows_written}")
    changes = report.schema_changes if report else ()
    if changes:
        shown = ", ".join(_code(_schema_change(c), 120) for c in changes[:_MAX_SCHEMA_CHANGES])
        more = (
            f" and {len(changes) - _MAX_SCHEMA_CHANGES} more"
            if len(changes) > _MAX_SCHEMA_CHANGES
            else ""
        )
        lines.append(f"*Schema changes:* {shown}{more}")
    return "\n".join(lines)


def _schema_change(change: Any) -> str:
    if not isinstance(change, dict):
        return str(change)
    parts = [change.get("change"), change.get("column"), change.get("type")]
    return " ".join(str(p) for p in parts if p)


def _files(report: AuditReport | None) -> str | None:
    """For a run over several files: how many it held, and which did not pass and why."""
    if report is None or len(report.sources) < 2:
        return None
    failing = [verdict for verdict in report.sources if verdict.status != SOURCE_PASSED]
    lines = [f"*Files:* {len(report.sources)} in this run, {len(failing)} did not pass"]
    used = len(lines[0])
    for shown, verdict in enumerate(failing):
        line = (
            f"• {_code(verdict.uri.rsplit('/', 1)[-1], 120)} {_value(verdict.status, 20)}: "
            f"{_value(verdict.why, 160)}"
        )
        if shown == _MAX_FILES_SHOWN or used + len(line) > _MAX_FILES_TEXT:
            lines.append(f"…and {len(failing) - shown} more: see the report's `sources`")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _branch(event: AlertEvent, nessie_ui_url: str | None) -> str | None:
    if not event.branch:
        return None
    branch_url = nessie_branch_url(nessie_ui_url, event.branch)
    table_url = nessie_table_url(nessie_ui_url, event.branch, event.table)
    label = _value(event.branch, 250) if branch_url else _code(event.branch, 250)
    text = f"*Branch:* {_link(branch_url, label)}"
    if branch_url:
        text += " (open in the Nessie UI)"
    if table_url:
        text += f" · {_link(table_url, 'table on this branch')}"
    if event.outcome == AUDIT_FAILED:
        text += (
            "\nThe branch stays open: inspect it, then publish it after review "
            "(`wap publish`) or discard it (`wap discard`)."
        )
    else:  # only an audited branch can be published by hand
        text += (
            "\nThe branch stays open because the job wrote to it: inspect it, then "
            "discard it (`wap discard`) and upload fixed data."
        )
    return text


def _threshold(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _sample_line(sample: Any) -> str:
    if isinstance(sample, str):
        raw = sample
    else:
        raw = json.dumps(sample, default=str, ensure_ascii=False, separators=(", ", ": "))
    # Three backticks inside the code block would close it.
    return _value(raw.replace("```", "'''"), _MAX_SAMPLE)


def _check_text(index: int, check: CheckResult, samples_name: str | None = None) -> str:
    head = f"*{index}. {_value(check.name, 200)}* · {_code(check.kind, 60)}"
    if check.columns:
        head += f" on {_code(', '.join(check.columns), 300)}"
    head += f" · severity {_value(check.severity, 20)}"
    if check.status != FAILED:
        head += f" · status *{_value(check.status, 20)}*"
    lines = [head]
    count = "unknown" if check.violations is None else str(check.violations)
    detail = f"Violations: *{count}*"
    if check.threshold is not None:
        detail += f" (threshold: {_code(_threshold(check.threshold), 200)})"
    lines.append(detail)
    if check.message:  # a learned band or history bound says what was expected, from what
        lines.append(_value(check.message, 400))
    text = "\n".join(lines)
    if not check.samples:
        return text
    # Close the code block ourselves so a long sample list cannot leave it open.
    title = samples_name or samples_title(check.kind)
    budget = MAX_SECTION_TEXT - len(text) - len(f"\n{title}:\n``````") - 40
    samples: list[str] = []
    for position, sample in enumerate(check.samples):
        line = _sample_line(_unparsed_line(sample) if check.kind == PARSE_ERRORS_KIND else sample)
        if sum(len(s) + 1 for s in samples) + len(line) > budget:
            samples.append(f"… {len(check.samples) - position} more")
            break
        samples.append(line)
    return text + f"\n{title}:\n```" + "\n".join(samples) + "```"


def _unparsed_line(sample: Any) -> Any:
    """`orders.csv:17: 2,bob`: where a row that did not parse is, then its text."""
    if not isinstance(sample, Mapping):
        return sample
    name = str(sample.get("file") or "?").rsplit("/", 1)[-1].split("?", 1)[0]
    return f"{name}:{sample.get('line') or '?'}: {sample.get('text')}"


def _links(event: AlertEvent, aws_console_links: bool) -> str | None:
    """The report, the execution and the logs: linked in the AWS console when there is one,
    else named (an http(s) URI is linked either way: it opens as it is)."""

    def url_of(uri: str, *, prefix: bool = False) -> str | None:
        if aws_console_links or urlsplit(uri).scheme in ("http", "https"):
            return browsable_url(uri, prefix=prefix)
        return None

    lines = []
    if event.report_uri:
        lines.append(f"*Report:* {_linked(url_of(event.report_uri), event.report_uri)}")
    if event.execution_arn:
        url = execution_console_url(event.execution_arn) if aws_console_links else None
        label = event.execution_arn.rsplit(":", 1)[-1] if url else event.execution_arn
        lines.append(f"*Execution:* {_linked(url, label)}")
    if event.log_uri:
        url = url_of(event.log_uri, prefix=True)
        lines.append(f"*Logs:* {_linked(url, event.log_uri)}")
    return "\n".join(lines) or None


def _fallback(event: AlertEvent, report: AuditReport | None, checks: list[CheckResult]) -> str:
    """One line: what happened to which file, and why. The reason (the job's, as the
    ledger records it) names the failed checks and files itself; only without one does
    this line name them from the report."""
    text = f"{outcome_title(event.outcome)}: {_value(event.table, 200)}"
    if event.source_uri:
        text += f" from {_value(event.source_uri, 300)}"
    if event.reason:
        text += f". {_value(event.reason, 500)}"
    else:
        text += _derived_reason(report, checks)
    if event.branch:
        text += f". Branch: {_value(event.branch, 250)}"
    return fit(text, MAX_FALLBACK_TEXT)


def _derived_reason(report: AuditReport | None, checks: list[CheckResult]) -> str:
    """The fallback's "why" from the report, for an event without a reason."""
    text = ""
    if report and len(report.sources) > 1:
        failing = sum(verdict.status != SOURCE_PASSED for verdict in report.sources)
        text += f" ({failing} of {len(report.sources)} files did not pass)"
    if checks:
        names = ", ".join(_value(c.name, 80) for c in checks[:5])
        more = f" and {len(checks) - 5} more" if len(checks) > 5 else ""
        text += f". {len(checks)} check(s) did not pass: {names}{more}"
    return text


def _published_with_quarantine(
    event: AlertEvent,
    notice: QuarantineNotice,
    report: AuditReport | None,
    title: str,
    nessie_ui_url: str | None,
    aws_console_links: bool,
) -> SlackMessage:
    """The warning of a publish that set rows aside: counts, the quarantine table(s) and
    each quarantining check with its samples (ingestion/alerting/quarantine.py)."""
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _clip(title, MAX_HEADER_TEXT), "emoji": True},
        },
        _section(_quarantine_summary(event, notice, nessie_ui_url)),
    ]
    checks = report.quarantining_checks if report else ()
    if checks:
        blocks += [{"type": "divider"}, _section("*Checks that set rows aside*")]
    used = _text_length(blocks) + 400
    for index, check in enumerate(checks, start=1):
        block = _section(
            _check_text(index, replace(check, samples=check.samples[:5]), "Quarantined rows")
        )
        # Room for the "more" note and the links below.
        if len(blocks) + 4 > MAX_BLOCKS or used + len(block["text"]["text"]) > MAX_TOTAL_TEXT:
            blocks.append(_context(f"…and {len(checks) - index + 1} more: see the report."))
            break
        blocks.append(block)
        used += len(block["text"]["text"])
    links = _links(event, aws_console_links)
    if links:
        blocks += [{"type": "divider"}, _section(links)]
    text = _quarantine_line(event.table, notice, report)
    return SlackMessage(text=fit(text, MAX_FALLBACK_TEXT), blocks=blocks)


def _quarantine_line(table: str, notice: QuarantineNotice, report: AuditReport | None) -> str:
    """`published 999,997 rows of sales.orders; 3 quarantined: amount_range` (the checks
    from the report, when it could be read)."""
    text = (
        f"published {notice.rows_published:,} rows of {_value(table, 200)}; "
        f"{notice.rows_quarantined:,} quarantined"
    )
    names = [check.name for check in report.quarantining_checks] if report else []
    if names:
        text += ": " + ", ".join(_value(name, 80) for name in names[:10])
        text += f" and {len(names) - 10} more" if len(names) > 10 else ""
    return text


def _quarantine_summary(
    event: AlertEvent, notice: QuarantineNotice, nessie_ui_url: str | None
) -> str:
    tables = ", ".join(
        _linked(nessie_table_url(nessie_ui_url, "main", name), name)
        for name in notice.quarantine_tables[:20]
    )
    lines = [f"*Table:* {_code(event.table)}"]
    if event.source_uri:
        lines.append(f"*Source:* {_code(event.source_uri)}")
    lines += [
        f"*Outcome:* {_code(event.outcome, 80)}",
        f"*Ingest:* {_code(event.ingest_id, 80)}",
        f"*Rows published:* {notice.rows_published:,}",
        f"*Rows quarantined:* {notice.rows_quarantined:,} in {tables}",
        "They are on main beside the table: fix them and drop them again "
        "(see tables/README.md, quarantine).",
    ]
    return "\n".join(lines)


def _arrival_message(event: AlertEvent, notice: ArrivalNotice, title: str) -> SlackMessage:
    """A table late by its `expect:` deadline, or published again: the reason says it in
    one line (`sales.orders: nothing published since ...; expected daily by 06:00`)."""
    lines = [
        f"*Table:* {_code(event.table)}",
        f"*Expected:* {_value(notice.expected, 200)}",
        f"*Deadline missed:* {_code(notice.deadline, 40)}",
        f"*Last published:* {_code(notice.last_published_at or 'never on record', 40)}",
    ]
    if event.outcome == LATE:
        lines.append(
            "Nothing failed: no drop was published (a failed, rejected or held drop does not "
            "count). Ask the sender, or see `wap runs` for drops that did not publish."
        )
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _clip(title, MAX_HEADER_TEXT), "emoji": True},
        },
        _section(f"{_value(event.reason or '', _MAX_REASON)}\n" + "\n".join(lines)),
    ]
    text = f"{outcome_title(event.outcome)}: {_value(event.reason or event.table, 500)}"
    return SlackMessage(text=fit(text, MAX_FALLBACK_TEXT), blocks=blocks)


def build_message(
    event: AlertEvent,
    report: AuditReport | None,
    checks: list[CheckResult],
    *,
    nessie_ui_url: str | None = None,
    report_problem: str | None = None,
    aws_console_links: bool = True,
) -> SlackMessage:
    """Render the alert; the result always satisfies the limits above. Without
    `aws_console_links` (no AWS console: the local stack) nothing links to it."""
    title = outcome_title(event.outcome)
    if _SAFE_TABLE.match(event.table):
        title = f"{title}: {event.table}"
    if event.quarantine is not None:  # a warning, not a failure: no checks failed
        return _published_with_quarantine(
            event, event.quarantine, report, title, nessie_ui_url, aws_console_links
        )
    if event.arrival is not None:  # about a drop that did not come: no ingest, no report
        return _arrival_message(event, event.arrival, title)
    head: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _clip(title, MAX_HEADER_TEXT), "emoji": True},
        },
        # A failed audit's reason lists the failed checks, which the checks section below
        # lists with their details: say it there only.
        _section(
            _summary(
                event,
                report,
                with_reason=not (
                    checks and report is not None and report.reason_code == AUDIT_FAILED_CODE
                ),
            )
        ),
    ]
    files = _files(report)
    if files:
        head.append(_section(files))
    branch = _branch(event, nessie_ui_url)
    if branch:
        head.append(_section(branch))
    if report_problem:
        head.append(_context(f":warning: Audit report unavailable: {_value(report_problem)}"))

    tail: list[dict[str, Any]] = []
    links = _links(event, aws_console_links)
    if links:
        tail = [{"type": "divider"}, _section(links)]

    body: list[dict[str, Any]] = []
    if checks:
        total = len(report.checks) if report else len(checks)
        body.append({"type": "divider"})
        body.append(_section(f"*{len(checks)} of {total} checks did not pass*"))
        reserved = len(head) + len(tail) + len(body) + 1  # +1: the "more" note
        used = _text_length(head) + _text_length(tail) + _text_length(body) + 200
        shown = 0
        for check in checks:
            block = _section(_check_text(shown + 1, check))
            size = len(block["text"]["text"])
            if reserved + shown + 1 > MAX_BLOCKS or used + size > MAX_TOTAL_TEXT:
                break
            body.append(block)
            used += size
            shown += 1
        if shown < len(checks):
            hidden = len(checks) - shown
            body.append(_context(f"…and {hidden} more not shown here: see the report."))
    blocks = head + body + tail
    return SlackMessage(text=_fallback(event, report, checks), blocks=blocks)
