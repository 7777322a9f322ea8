"""Expected arrivals (issue 42): which tables and datasets expect drops (`expect:` in their
configs), whether each is late now, and the sweep's step that alerts once when one
becomes late and once when it recovers.

Only a PUBLISHED drop is an arrival: a held, failed or rejected one is not, nor is a
compaction. The state that makes each alert go once is the ledger's (ledger/arrivals.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.alert import LATE, RECOVERED, AlertEvent
from contracts.arrivals import ExpectedArrival, Freshness
from contracts.dataset_config import DATASET_CONFIGS_DIR, parse_dataset_config_bytes
from contracts.table_config import MAX_CONFIG_BYTES, TableConfigError, parse_table_config_text
from ingestion import aws
from ingestion.config import Settings
from ingestion.ledger import ArrivalState, Ledger, dataset_subject
from ingestion.naming import TableRef, iso, parse_iso, split_s3_uri

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Expectation:
    """A subject that expects drops: a table (`ns.table`) or a dataset (`dataset:<name>`,
    whose records are indexed under its first table in lock order)."""

    subject: str
    expect: ExpectedArrival
    dataset: str | None = None
    first_table: str | None = None


@dataclass(frozen=True)
class SubjectFreshness:
    """One subject's arrivals now, as `wap runs`, the dashboard and the metrics show them
    (times ISO 8601 UTC)."""

    subject: str
    expected: str  # `daily by 06:00 Europe/Berlin`
    late: bool
    last_published_at: str | None  # None: no published drop on record
    deadline: str | None  # the latest deadline passed
    age_seconds: float | None  # since the last publish
    late_alerted_at: str | None = None  # when the sweeper said so (None: not yet)
    reason: str | None = None  # the one line of the alert, when late


def expectations(
    table_texts: Mapping[str, str], dataset_texts: Mapping[str, bytes] | None = None
) -> list[Expectation]:
    """The subjects with an `expect:` section, from their configs' texts (`ns.table` ->
    YAML text; dataset name -> bytes). A config that does not parse is left out: its
    drops are refused anyway, with that error."""
    import yaml

    found: list[Expectation] = []
    for table, text in sorted(table_texts.items()):
        try:
            expect = parse_table_config_text(text, table, yaml=yaml).expect
        except TableConfigError as exc:
            _log.warning("table config %s left out of expected arrivals: %s", table, exc)
            continue
        if expect is not None:
            found.append(Expectation(table, expect))
    for name, data in sorted((dataset_texts or {}).items()):
        try:
            config = parse_dataset_config_bytes(data, f"{name}.yaml", yaml=yaml)
        except TableConfigError as exc:
            _log.warning("dataset config %s left out of expected arrivals: %s", name, exc)
            continue
        if config.expect is not None:
            found.append(
                Expectation(
                    dataset_subject(config.name),
                    config.expect,
                    dataset=config.name,
                    first_table=config.tables[0],
                )
            )
    return found


def freshness_of(ledger: Ledger, expectation: Expectation, now: datetime) -> Freshness:
    """Whether the subject is late at `now`, from its newest published drop."""
    if expectation.dataset and expectation.first_table:
        last = ledger.last_dataset_published(expectation.first_table, expectation.dataset)
    else:
        last = ledger.last_published(expectation.subject)
    return expectation.expect.freshness(last, now)


def late_reason(expectation: Expectation, freshness: Freshness) -> str:
    """`sales.orders: nothing published since 2026-11-25 06:02; expected daily by 06:00
    Europe/Berlin` (times on the zone's wall clock)."""
    expect = expectation.expect
    since = (
        f"since {expect.local_text(freshness.last_published)}"
        if freshness.last_published
        else "on record"
    )
    return f"{expectation.subject}: nothing published {since}; expected {freshness.expected}"


def recovered_reason(expectation: Expectation, freshness: Freshness, late_since: str) -> str:
    """`sales.orders: published again at 2026-11-26 09:14, late since the 06:00 deadline...`"""
    expect = expectation.expect
    published = freshness.last_published
    at = expect.local_text(published) if published else "?"
    missed = expect.local_text(parse_iso(late_since))
    return (
        f"{expectation.subject}: published again at {at}, late since its deadline "
        f"{missed}; expected {freshness.expected}"
    )


def subject_freshness(
    ledger: Ledger, found: Iterable[Expectation], now: datetime
) -> list[SubjectFreshness]:
    """Every subject's freshness, late ones first, then by subject."""
    states = {state.subject: state for state in ledger.list_arrivals()}
    rows = [
        _row(
            expectation,
            freshness_of(ledger, expectation, now),
            states.get(expectation.subject),
            now,
        )
        for expectation in found
    ]
    return sorted(rows, key=lambda row: (not row.late, row.subject))


def check_arrivals(
    ledger: Ledger,
    found: Iterable[Expectation],
    now: datetime,
    send: Callable[[AlertEvent], Any],
) -> list[SubjectFreshness]:
    """The sweep's step: alert (through `send`) once when a subject becomes late and once
    when it recovers; the conditional writes of the ledger make each go once, however
    many sweeps see it. Returns every subject's freshness (for the metrics)."""
    states = {state.subject: state for state in ledger.list_arrivals()}
    rows = []
    for expectation in found:
        freshness = freshness_of(ledger, expectation, now)
        state = states.get(expectation.subject) or ArrivalState(expectation.subject)
        deadline = freshness.deadline
        if freshness.late and deadline is not None and not state.late:
            if ledger.mark_late(expectation.subject, deadline.due, now, freshness.last_published):
                send(_event(expectation, freshness, LATE, iso(deadline.due)))
                state = ArrivalState(expectation.subject, iso(deadline.due), iso(now))
        elif not freshness.late and state.late and freshness.last_published is not None:
            late_since = state.late_since or ""
            if ledger.mark_recovered(expectation.subject, freshness.last_published, now):
                send(_event(expectation, freshness, RECOVERED, late_since))
                state = ArrivalState(expectation.subject, recovered_at=iso(now))
        rows.append(_row(expectation, freshness, state, now))
    return sorted(rows, key=lambda row: (not row.late, row.subject))


def _event(
    expectation: Expectation, freshness: Freshness, outcome: str, deadline: str
) -> AlertEvent:
    reason = (
        late_reason(expectation, freshness)
        if outcome == LATE
        else recovered_reason(expectation, freshness, deadline)
    )
    return AlertEvent.from_dict(
        {
            "ingest_id": f"late:{expectation.subject}:{deadline}",
            "table": expectation.subject,
            "outcome": outcome,
            "reason": reason,
            "arrival": {
                "expected": freshness.expected,
                "deadline": deadline,
                "last_published_at": iso(freshness.last_published)
                if freshness.last_published
                else None,
            },
        }
    )


def _row(
    expectation: Expectation, freshness: Freshness, state: ArrivalState | None, now: datetime
) -> SubjectFreshness:
    last = freshness.last_published
    return SubjectFreshness(
        subject=expectation.subject,
        expected=freshness.expected,
        late=freshness.late,
        last_published_at=iso(last) if last else None,
        deadline=iso(freshness.deadline.due) if freshness.deadline else None,
        age_seconds=max(0.0, (now - last).total_seconds()) if last else None,
        late_alerted_at=state.late_alerted_at if state and state.late else None,
        reason=late_reason(expectation, freshness) if freshness.late else None,
    )


def deployed_expectations(settings: Settings) -> list[Expectation]:
    """The expectations of the deployed configs (the config prefix's `<ns.table>.yaml` and
    `datasets/<name>.yaml`): one listing, then one read per config."""
    if not settings.tables_config_prefix:
        return []
    root = settings.tables_config_prefix.rstrip("/") + "/"
    bucket, prefix = split_s3_uri(root)
    s3 = aws.client("s3")

    def listed() -> list[str]:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    keys = aws.call(f"list the configs under {root}", listed)
    tables: dict[str, str] = {}
    for table in configured_tables_of(keys, prefix):
        data = aws.read_bytes_s3(f"s3://{bucket}/{prefix}{table}.yaml", max_bytes=MAX_CONFIG_BYTES)
        if data is not None:
            tables[table] = data.decode("utf-8", "replace")
    datasets: dict[str, bytes] = {}
    for name in dataset_config_names(keys, prefix):
        uri = f"s3://{bucket}/{prefix}{DATASET_CONFIGS_DIR}/{name}.yaml"
        data = aws.read_bytes_s3(uri, max_bytes=MAX_CONFIG_BYTES)
        if data is not None:
            datasets[name] = data
    return expectations(tables, datasets)


def configured_tables_of(keys: Iterable[str], prefix: str) -> list[str]:
    """The `ns.table` of each table config key directly under `prefix`."""
    found = []
    for key in keys:
        name = key[len(prefix) :]
        if key.startswith(prefix) and name.endswith(".yaml") and "/" not in name:
            try:
                found.append(TableRef.parse(name[: -len(".yaml")]).qualified)
            except ValueError:
                continue
    return sorted(found)


def dataset_config_names(keys: Iterable[str], prefix: str) -> list[str]:
    """The dataset names of config keys under `prefix` (`<prefix>datasets/<name>.yaml`)."""
    head = f"{prefix}{DATASET_CONFIGS_DIR}/"
    return sorted(
        key[len(head) : -len(".yaml")]
        for key in keys
        if key.startswith(head) and key.endswith(".yaml") and "/" not in key[len(head) :]
    )
