"""Turn ledger rows, audit reports and Iceberg snapshots into rows for tables and charts.

Plain functions over plain data: no Streamlit, no I/O, so each is unit-tested on its own.
Free text that came from outside (reasons, sample values, source keys) goes through
`redact` here; whatever is rendered as Markdown goes through `md_escape` in the views.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from contracts.report import AuditReport, samples_title
from contracts.table_config import TableConfig, quarantine_table_name
from ingestion import constants as c
from ingestion.arrivals import SubjectFreshness
from ingestion.ledger import IngestRecord, LedgerRecord, tables_of
from ingestion.time_split import time_split, upload_to_outcome_seconds
from wap.ops.backends import Target
from wap.ops.operations import BatchRow, BranchRow, RunRow
from wap.ops.report_view import QUARANTINED_SAMPLES_TITLE, ReportView, reason_of
from wap.text import age_text, size_text  # noqa: F401 (the views' one import)

# Outcome groups shown on the overview, in display order, with their chart colours.
PUBLISHED, FAILED, REJECTED, RUNNING, QUEUED, DISCARDED = (
    "published",
    "failed",
    "rejected",
    "running",
    "queued",
    "discarded",
)
OUTCOMES = (PUBLISHED, FAILED, REJECTED, RUNNING, QUEUED, DISCARDED)
OUTCOME_COLORS = {
    PUBLISHED: "#2e9e5b",
    FAILED: "#d64545",
    REJECTED: "#e8913a",
    RUNNING: "#3b7dd8",
    QUEUED: "#9aa5b1",
    DISCARDED: "#c9ced6",
}
_STATUS_OUTCOME = {
    c.PUBLISHED: PUBLISHED,
    c.AUDIT_FAILED: FAILED,
    c.JOB_FAILED: FAILED,
    c.PUBLISH_FAILED: FAILED,
    c.REJECTED: REJECTED,
    c.RUNNING: RUNNING,
    c.QUEUED: QUEUED,
    c.RECEIVED: QUEUED,
    c.DISCARDED: DISCARDED,
}
# Streamlit's bundled Material Symbols: they render without an emoji font on the machine.
STATUS_ICONS = {
    PUBLISHED: ":material/check_circle:",
    FAILED: ":material/error:",
    REJECTED: ":material/block:",
    RUNNING: ":material/pending:",
    QUEUED: ":material/schedule:",
    DISCARDED: ":material/delete:",
}
MAX_TEXT_CHARS = 300

# Credentials that could end up in an error message or a sample row: never shown.
_SECRET_PATTERNS = (
    re.compile(r"xox[abposr]-[A-Za-z0-9-]+"),  # Slack tokens
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key ids
    re.compile(
        r"(?i)\b(aws_secret_access_key|aws_session_token|secret[_-]?access[_-]?key|"
        r"session[_-]?token|password|passwd|secret|token|api[_-]?key)"
        r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
    ),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"(?<=://)[^/@\s:]+:[^/@\s]+(?=@)"),  # user:password@ in URLs
)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:])")


def redact(text: Any) -> str:
    """`text` as one line with credentials masked and length capped."""
    if text is None:
        return ""
    out = " ".join(str(text).split())
    for pattern in _SECRET_PATTERNS:
        if pattern.groups == 3:
            out = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}***", out)
        elif pattern.groups == 1:
            out = pattern.sub(lambda m: f"{m.group(1)}***", out)
        else:
            out = pattern.sub("***", out)
    return out if len(out) <= MAX_TEXT_CHARS else out[: MAX_TEXT_CHARS - 1] + "…"


def md_escape(text: Any) -> str:
    """Escape Markdown (and the `<`, `>` of HTML) so data renders as the literal text."""
    return _MD_SPECIAL.sub(r"\\\1", redact(text))


def md_code(text: Any) -> str:
    """`text` as an inline Markdown code span (backticks removed: a span cannot hold them)."""
    return "`" + redact(text).replace("`", "'") + "`"


def outcome_of(status: str | None) -> str:
    """The overview's outcome group of a ledger status (unknown statuses count as queued)."""
    return _STATUS_OUTCOME.get(status or "", QUEUED)


def parse_time(stamp: str | None) -> datetime | None:
    """An ISO-8601 ledger/report timestamp as an aware UTC datetime; None when absent or bad."""
    if not stamp:
        return None
    try:
        at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def file_of(source: str | None) -> str:
    """The file name of a source URI (`s3://b/ns/t/x.parquet` -> `x.parquet`)."""
    return redact((source or "").rsplit("/", 1)[-1]) or "-"


# ---- overview ---------------------------------------------------------------------------------


def outcome_counts(runs: Iterable[RunRow]) -> dict[str, int]:
    """How many ingests are in each outcome group (every group present, zero included)."""
    counted = Counter(outcome_of(r.status) for r in runs)
    return {name: counted.get(name, 0) for name in OUTCOMES}


def time_bucket_unit(times: Sequence[datetime]) -> str:
    """`hour` when the ingests span at most three days, else `day`."""
    if len(times) < 2:
        return "hour"
    return "hour" if (max(times) - min(times)).total_seconds() <= 3 * 86400 else "day"


def timeline_domain(
    times: Sequence[datetime], unit: str, now: datetime
) -> tuple[datetime, datetime]:
    """The chart's time axis: at least the last 24 hours (or 14 days), up to the current bucket.

    A fixed minimum window keeps one bar one bucket wide instead of filling the chart.
    """
    step = timedelta(hours=1) if unit == "hour" else timedelta(days=1)
    window = 24 if unit == "hour" else 14

    def floor(at: datetime) -> datetime:
        at = at.replace(minute=0, second=0, microsecond=0)
        return at if unit == "hour" else at.replace(hour=0)

    end = floor(now) + step
    start = end - window * step
    if times:
        start = min(start, floor(min(times)))
        end = max(end, floor(max(times)) + step)
    return start, end


def timeline_rows(runs: Iterable[RunRow]) -> list[dict[str, Any]]:
    """One chart row per ingest with a known time: when, table, outcome, tooltip fields."""
    rows = []
    for r in runs:
        when = parse_time(r.when)
        if when is None:
            continue
        rows.append(
            {
                "when": when.replace(tzinfo=None),
                "table": r.table or "(unrouted)",
                "outcome": outcome_of(r.status),
                "status": r.status,
                "ingest_id": r.ingest_id,
                "file": file_of(r.source),
            }
        )
    return sorted(rows, key=lambda row: row["when"])


def cost_rows(runs: Iterable[RunRow]) -> list[dict[str, Any]]:
    """What loads cost per table and day (UTC, by when each ingest last changed), oldest
    first: one row per (day, table) with the sum of its ingests' `cost_usd` (a batch's
    files hold their shares, so a batch counts once) and how many loads were priced."""
    totals: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        when = parse_time(r.when)
        if r.cost_usd is None or when is None:
            continue
        key = (when.date().isoformat(), r.table or "(unrouted)")
        total = totals.setdefault(key, [0.0, 0])
        total[0] += r.cost_usd
        total[1] += 1
    return [
        {"day": day, "table": table, "cost_usd": round(cost, 6), "loads": int(loads)}
        for (day, table), (cost, loads) in sorted(totals.items())
    ]


def time_split_text(record: LedgerRecord) -> str | None:
    """Where an ingest's time went: 'to trigger 2 s · ... · to outcome 31 s (153 s from
    upload)'; None before it has an outcome."""
    phases = time_split(record)
    if not phases:
        return None
    total = upload_to_outcome_seconds(record) or 0
    parts = " · ".join(f"{phase.name} {phase.seconds:.0f} s" for phase in phases)
    return f"{parts} ({total:.0f} s from {'upload' if record.uploaded_at else 'record'})"


def attention_rows(runs: Iterable[RunRow], branches: Iterable[BranchRow]) -> list[dict[str, Any]]:
    """Failed and rejected ingests still waiting for a decision, newest first.

    An ingest waits while its branch is open; one that wrote nothing (no branch, or
    branch already gone) is listed too, since its file still needs fixing.
    """
    open_branches = {b.name for b in branches}
    rows = []
    for r in runs:
        if outcome_of(r.status) not in (FAILED, REJECTED):
            continue
        rows.append(
            {
                "ingest_id": r.ingest_id,
                "table": r.table or "-",
                "status": r.status,
                "file": file_of(r.source),
                "when": r.when or "-",
                "reason": redact(r.reason) or "-",
                "branch": r.branch,
                "branch_open": bool(r.branch and r.branch in open_branches),
            }
        )
    return rows  # list_runs is newest first already


def active_rows(
    runs: Iterable[RunRow], locks: Iterable[Mapping[str, Any]], now: datetime
) -> list[dict[str, Any]]:
    """Running and queued ingests, with their place in the table's queue."""
    place: dict[str, str] = {}
    for lock in locks:
        if lock.get("active"):
            place[lock["active"]] = "running"
        members = lock.get("batch") or []
        for member in members:
            place[member] = f"running in a batch of {len(members)}"
        for i, queued in enumerate(lock.get("queue") or [], start=1):
            place[queued] = f"#{i} in queue"
    rows = []
    for r in runs:
        outcome = outcome_of(r.status)
        if outcome not in (RUNNING, QUEUED):
            continue
        since = parse_time(r.when)
        rows.append(
            {
                "ingest_id": r.ingest_id,
                "table": r.table or "-",
                "status": r.status,
                "file": file_of(r.source),
                "place": place.get(r.ingest_id, outcome),
                "for": age_text((now - since).total_seconds() if since else None),
            }
        )
    return rows


def branch_rows(branches: Iterable[BranchRow]) -> list[dict[str, Any]]:
    """Open WAP branches, oldest first, with age and the outcome of the ingest behind each."""
    return [
        {
            "branch": b.name,
            "table": b.table or "-",
            "ingest_id": b.ingest_id,
            "outcome": b.status or "no ledger record",
            "age": age_text(b.age_seconds),
            "age_hours": round(b.age_seconds / 3600, 1) if b.age_seconds is not None else None,
            "reason": redact(b.reason) or "-",
        }
        for b in branches
    ]


def batch_rows(batches: Iterable[BatchRow]) -> list[dict[str, Any]]:
    """Runs over several files, newest first: one row each, its files listed as ingests."""
    return [
        {
            "batch": b.batch_id,
            "table": b.table or "-",
            "files": b.files,
            "outcome": b.status,
            "branch": b.branch or "-",
            "when": b.when or "-",
            "reason": redact(b.reason) or "",
        }
        for b in batches
    ]


def run_rows(runs: Iterable[RunRow]) -> list[dict[str, Any]]:
    """Every ingest for the 'all ingests' table, newest first; a `quarantined` column (rows
    set aside in the quarantine table) only when some ingest set rows aside."""
    runs = list(runs)
    quarantined = any(r.quarantined_rows for r in runs)
    return [
        {
            "ingest_id": r.ingest_id,
            "table": r.table or "-",
            "outcome": r.status,
            "file": file_of(r.source),
            "batch": r.batch_id or "-",
            "rows": r.rows_written,
            **({"quarantined": r.quarantined_rows or 0} if quarantined else {}),
            "when": r.when or "-",
            "reason": redact(r.reason) or "",
        }
        for r in runs
    ]


# ---- one ingest -------------------------------------------------------------------------------


def quarantine_tables_text(record: LedgerRecord) -> str:
    """The quarantine table(s) of the tables a run writes: `ns.t__quarantine`, ..."""
    return ", ".join(quarantine_table_name(table) for table in tables_of(record))


def quarantine_note(table: str, runs: Iterable[RunRow], config: TableConfig | None) -> str | None:
    """`Quarantine table: ns.t__quarantine (3 rows set aside by 1 ingest)`, for a table
    whose config quarantines rows or whose ingests set some aside; else None."""
    counts = [r.quarantined_rows for r in runs if r.quarantined_rows]
    if not counts and not (config is not None and config.quarantine_checks):
        return None
    ingests = f"{len(counts)} ingest{'s' if len(counts) != 1 else ''}"
    return (
        f"Quarantine table: {quarantine_table_name(table)} "
        f"({sum(counts)} rows set aside by {ingests} listed below)"
    )


def cell(value: Any) -> str:
    """A report value as short text: JSON for structures, `-` for null."""
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return redact(json.dumps(value, default=str, sort_keys=True))
    return redact(value)


# A duration the job reports in seconds, shown in the form the table config takes
# (`max_age: 7d`, contracts.table_config.parse_max_age): report key -> shown key.
_SECONDS_KEYS = {"max_age_s": "max_age"}
_DURATION_UNITS = (("d", 86400), ("h", 3600), ("m", 60))


def duration_text(seconds: int) -> str:
    """`7d`, `36h`, `30m`, `90s`: the largest unit that states `seconds` exactly."""
    for unit, size in _DURATION_UNITS:
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _threshold_part(key: str, value: Any) -> str:
    shown = _SECONDS_KEYS.get(key)
    if shown and isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"{shown} {duration_text(value)}"
    return f"{key} {cell(value)}"


def threshold_text(threshold: Any) -> str:
    """`min 0, max 1000000` for a report threshold mapping; JSON for anything else."""
    if isinstance(threshold, Mapping):
        parts = [_threshold_part(k, v) for k, v in threshold.items() if v is not None]
        return redact(", ".join(parts)) or "-"
    return cell(threshold)


Report = AuditReport | Mapping[str, Any] | None  # parsed, or its JSON (tests, older tools)


def source_rows(report: Report) -> list[dict[str, Any]]:
    """A run over several files: each file's own verdict, those that did not pass first."""
    files = ReportView.of(report).batch_files
    return [
        {
            "file": redact(v.uri),
            "verdict": redact(v.status),
            "rows": v.rows,
            "why": redact(v.cause) or "",
        }
        for v in sorted(files, key=lambda v: v.passed)
    ]


def check_rows(report: Report) -> list[dict[str, Any]]:
    """The report's checks, failures first (error before warn), then in report order."""
    return [
        {
            "check": redact(ch.name),
            "kind": redact(ch.kind),
            "columns": ", ".join(redact(col) for col in ch.columns) or "-",
            "severity": redact(ch.severity),
            "status": redact(ch.status),
            "violations": ch.violations,
            "threshold": threshold_text(ch.threshold),
            "observed": cell(ch.observed),
            "message": redact(ch.message) or "",
        }
        for ch in ReportView.of(report).checks_failures_first()
    ]


def sample_tables(report: Report) -> list[tuple[str, list[dict[str, str]]]]:
    """(title naming the check, its samples as text) for every check that did not pass."""
    out = []
    for ch in ReportView.of(report).sampled_checks:
        columns = ch.sample_columns
        rows = [
            {redact(k): "null" if row.get(k) is None else cell(row.get(k)) for k in columns}
            for row in ch.samples
            if isinstance(row, Mapping)
        ]
        title = QUARANTINED_SAMPLES_TITLE if ch.quarantined_rows else samples_title(str(ch.kind))
        out.append((f"{title}: {redact(ch.name)}", rows))
    return out


def schema_change_rows(report: Report) -> list[dict[str, str]]:
    """The report's schema changes as rows (change, column, type, detail)."""
    rows = []
    for change in ReportView.of(report).schema_changes:
        if not isinstance(change, Mapping):
            rows.append({"change": cell(change), "column": "-", "type": "-", "detail": ""})
            continue
        rest = {k: v for k, v in change.items() if k not in ("change", "column", "type")}
        rows.append(
            {
                "change": cell(change.get("change")),
                "column": cell(change.get("column")),
                "type": cell(change.get("type")),
                "detail": cell(rest) if rest else "",
            }
        )
    return rows


def schema_note(report: Report) -> str | None:
    """A line under the schema changes: what the schema policy refused; or, when the report
    lists no change, that the schema matched (only when the run wrote every file). None
    when there is nothing to add (no report, the run stopped before comparing schemas,
    or the changes' table says it all)."""
    view = ReportView.of(report)
    if not view.present:
        return None
    if view.refused_by_schema_policy:
        return "Refused by the table's schema policy: " + (
            redact(view.reason) or "no reason recorded"
        )
    if not view.wrote_rows or view.schema_changes:
        return None  # nothing compared, or the changes' table says it
    refused = view.rejected_files
    if refused:
        return f"None in the files written; {len(refused)} file(s) not written: see Files for why."
    return "None: the batch matched the table's schema."


def discarded_lines(record: LedgerRecord, report: Report) -> list[tuple[str, str]]:
    """(label, text) for a discarded ingest: how it had failed, and who discarded it why.

    `error` stays on the record through a discard (wap.ops.operations.discard); a record
    without one falls back on the report's reason."""
    why = reason_of(record, ReportView.of(report)) or "no reason recorded"
    was = record.previous_status
    lines = [("failed as", redact(f"{was}: {why}" if was else why))]
    if record.discard_reason:
        lines.append(("discarded", redact(record.discard_reason)))
    elif record.discarded_by:
        lines.append(("discarded", redact(f"discarded by {record.discarded_by}")))
    return lines


def next_commands(
    record: LedgerRecord, branch_open: bool, target: Target, conflicts: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """(what it does, shell command) for the decisions an operator can take on this ingest;
    no publish when main changed its tables since the audit (`conflicts`)."""
    status, branch = record.status, record.branch
    iid = record.ingest_id
    ref = branch if branch and branch_open else iid
    wap = shlex.join(["wap", *target.cli_flags()])
    batch = record.batch_id if isinstance(record, IngestRecord) else None
    if record.dataset and batch and not branch and status in c.FAILED_STATUSES:
        # Its rows are on the dataset's branch, with the other parts': one decision for all.
        return [
            (
                "one part of a dataset, published or discarded whole: open its batch",
                f"{wap} show {shlex.quote(str(batch))}",
            )
        ]
    commands: list[tuple[str, str]] = []
    if status == c.AUDIT_FAILED and branch_open and not conflicts:
        commands.append(
            (
                "publish anyway, after review (merges the audited commit into main)",
                f'{wap} publish {shlex.quote(ref)} --reason "reviewed: ..."',
            )
        )
    if status in c.FAILED_STATUSES:
        commands.append(
            (
                "discard (deletes the branch; the source file stays)",
                f'{wap} discard {shlex.quote(ref)} --reason "..."',
            )
        )
    commands.append(("show in the terminal", f"{wap} show {shlex.quote(ref)}"))
    return commands


def nessie_links(
    ui_base: str | None,
    branch: str | None,
    table: str | None,
    branch_open: bool,
    *,
    with_diff: bool = False,
) -> list[tuple[str, str]]:
    """(label, URL) of the branch and of the table on it in the Nessie UI (http(s) only);
    `with_diff` adds the local catalog UI's page of what the branch adds to main."""
    from contracts.catalog_ui import branch_diff_url
    from ingestion.alerting.links import nessie_branch_url, nessie_table_url

    if (
        not ui_base
        or not ui_base.startswith(("http://", "https://"))
        or not branch
        or not branch_open
    ):
        return []
    links = []
    branch_url = nessie_branch_url(ui_base, branch)
    if branch_url:
        links.append((f"branch {branch}", branch_url))
    if table:
        table_url = nessie_table_url(ui_base, branch, table)
        if table_url:
            links.append((f"{table} on the branch", table_url))
    if with_diff and branch_url:
        links.append(("the branch against main", branch_diff_url(ui_base, branch)))
    main_url = nessie_branch_url(ui_base, c.MAIN_BRANCH)
    if main_url:
        links.append(("main", main_url))
    return links


def ingest_page_url(ingest_id: str) -> str:
    """Relative URL of an ingest's page (the dashboard's `ingest` page, `id` query param)."""
    return f"ingest?id={quote(ingest_id, safe='')}"


# ---- one table --------------------------------------------------------------------------------


def snapshot_rows(
    snapshots: Sequence[Mapping[str, Any]], current_id: int | None
) -> list[dict[str, Any]]:
    """Rows on main over time: the current snapshot and its ancestors, oldest first.

    `snapshots` are plain dicts (`snapshot_id`, `parent_id`, `timestamp_ms`, `operation`,
    `summary`). Walking parents from the current snapshot leaves out snapshots that
    are in the metadata file but not in main's lineage (rolled back ones).
    """
    by_id = {s["snapshot_id"]: s for s in snapshots}
    lineage = []
    seen: set[int] = set()
    at = current_id
    while at is not None and at in by_id and at not in seen:
        seen.add(at)
        lineage.append(by_id[at])
        at = by_id[at].get("parent_id")
    rows = []
    for s in reversed(lineage):
        summary = s.get("summary") or {}
        rows.append(
            {
                "committed_at": datetime.fromtimestamp(s["timestamp_ms"] / 1000, UTC).replace(
                    tzinfo=None
                ),
                "total_rows": _int(summary.get("total-records")),
                "added_rows": _int(summary.get("added-records")),
                "deleted_rows": _int(summary.get("deleted-records")),
                "operation": s.get("operation") or "-",
                "snapshot_id": str(s["snapshot_id"]),
            }
        )
    return rows


def rows_over_time(rows: Sequence[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """Chart points of `snapshot_rows`: one per commit, plus `now` holding the latest count,
    so a step line reaches the present instead of ending at the last commit."""
    points = [
        {"at": r["committed_at"], "rows": r["total_rows"], "what": r["operation"]} for r in rows
    ]
    if points and now > points[-1]["at"]:
        points.append({"at": now, "rows": points[-1]["rows"], "what": "now"})
    return points


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def config_check_rows(checks: Iterable[Any]) -> list[dict[str, str]]:
    """Configured checks (`contracts.table_config.CheckSpec`) as rows."""
    return [
        {
            "check": redact(ch.name),
            "kind": ch.kind,
            "columns": ", ".join(ch.columns) or "-",
            "severity": ch.severity,
            "settings": threshold_text(ch.params) if ch.params else "-",
        }
        for ch in checks
    ]


@dataclass(frozen=True)
class TableHealth:
    """The table page's maintenance figures: what readers of main open (its current
    snapshot's summary, else the latest garbage collection's count), what that collection
    found reclaimable, and the table's latest compaction run."""

    data_files: int | None
    average_file_bytes: int | None
    reclaimable_bytes: int | None
    collected_at: datetime | None  # when the garbage collection ran (None: never)
    last_compaction: RunRow | None


def table_health(
    table: str,
    snapshots: Sequence[Mapping[str, Any]],
    current_id: int | None,
    gc_summary: Mapping[str, Any] | None,
    runs: Iterable[RunRow],
) -> TableHealth:
    """`gc_summary`: `ingestion.maintenance.health.summary` of the latest collection."""
    current = next((s for s in snapshots if s["snapshot_id"] == current_id), None)
    summary = (current or {}).get("summary") or {}
    files, size = _int(summary.get("total-data-files")), _int(summary.get("total-files-size"))
    measured = ((gc_summary or {}).get("tables") or {}).get(table) or {}
    if files is None:  # a summary without totals: the collection counted them
        files, size = measured.get("data_files"), measured.get("data_bytes")
    compactions = [r for r in runs if r.source == c.MAINTENANCE_SOURCE]
    collected = parse_time((gc_summary or {}).get("collected_at"))
    return TableHealth(
        data_files=files,
        average_file_bytes=size // files if files and size is not None else None,
        reclaimable_bytes=measured.get("reclaimable_bytes", 0 if gc_summary else None),
        collected_at=collected,
        last_compaction=max(compactions, key=lambda r: r.when or "", default=None),
    )


def freshness_rows(rows: Iterable[SubjectFreshness]) -> list[dict[str, Any]]:
    """The overview's freshness per table (`expect:` in its config), late ones first as
    `ingestion.arrivals` orders them."""
    return [
        {
            "table": row.subject,
            "arrival": "LATE" if row.late else "on time",
            "expected": row.expected,
            "last published": row.last_published_at or "never",
            "ago": age_text(row.age_seconds),
            "deadline passed": row.deadline or "-",
            "alerted": row.late_alerted_at or "-",
        }
        for row in rows
    ]
