"""One ingest (`/ingest?id=...`): checks, violating samples, schema changes, main vs branch,
Nessie links and the `wap publish` / `wap discard` commands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from ingestion.ledger import BatchRecord, IngestRecord, LedgerRecord, tables_of
from wap.dashboard import shaping
from wap.dashboard.views import common
from wap.dashboard.views.common import INFO
from wap.ops.operations import IngestView, conflict_text
from wap.ops.report_view import ReportView, reason_of

STATUS_COLORS = {
    "passed": "color: #2e9e5b",
    "failed": "color: #d64545; font-weight: bold",
    "error": "color: #e8913a; font-weight: bold",
}

Record = shaping.Report  # an audit report


def render() -> None:
    data = common.page_data("Ingest", "id", common.ingest_data, _pick)
    if data is None:
        return
    view, record = data.view, data.view.record
    report = view.report  # parsed by its contract when it was read
    status = record.status or "?"
    outcome = shaping.outcome_of(status)
    st.title(f"Ingest {shaping.md_escape(record.ingest_id)}")
    if outcome in (shaping.FAILED, shaping.REJECTED):
        reason = reason_of(record, ReportView.of(report)) or "no reason recorded"
        st.error(
            f"**{shaping.md_escape(status)}**: {shaping.md_escape(reason)}", icon=":material/error:"
        )
    elif outcome == shaping.DISCARDED:
        # Discarded after it failed: why it failed still matters (what to fix in the file).
        lines = shaping.discarded_lines(record, report)
        st.warning(
            "**DISCARDED**  \n"
            + "  \n".join(f"**{label}**: {shaping.md_escape(text)}" for label, text in lines),
            icon=":material/delete:",
        )
    elif outcome == shaping.PUBLISHED and record.quarantined_rows:
        st.warning(
            f"**PUBLISHED** with {record.quarantined_rows} rows quarantined: set aside in "
            f"{shaping.md_escape(shaping.quarantine_tables_text(record))} by the checks "
            "below, published by the same merge.",
            icon=":material/warning:",
        )
    elif outcome == shaping.PUBLISHED:
        st.success(
            "**PUBLISHED**: passed its audits and was merged into main.",
            icon=":material/check_circle:",
        )

    _summary(record, view.branch_open)
    _counts(view, record, data.counts_error)
    _files(report)
    _checks(report, report is not None)
    _samples(report)
    _schema_changes(report)
    _actions(
        record, view.branch_open, data.nessie_ui_url, data.local_catalog, view.publish_conflicts
    )
    common.back_to_overview()


def _pick() -> None:
    st.title("Ingest")
    runs = common.overview_data(common.target()).runs
    if not runs:
        st.info("No ingests yet: nothing to show.", icon=INFO)
        return
    labels = {
        r.ingest_id: f"{r.ingest_id} · {r.table or '-'} · {r.status} · {shaping.file_of(r.source)}"
        for r in runs
    }
    chosen = st.selectbox(
        "Ingest",
        list(labels),
        format_func=labels.get,
        index=None,
        placeholder="Choose an ingest (newest first)",
    )
    if chosen:
        st.query_params["id"] = chosen
        st.rerun()


def _summary(record: LedgerRecord, branch_open: bool) -> None:
    branch = record.branch
    rows = [
        ("table", ", ".join(tables_of(record)) or "-"),
        ("source", record.source_uri or "-"),
        ("branch", f"{branch} ({'open' if branch_open else 'deleted'})" if branch else "-"),
        ("started", record.created_at or "-"),
        ("finished", record.finished_at or "-"),
        ("attempts", "-" if record.attempts is None else record.attempts),
    ]
    if isinstance(record, BatchRecord) and record.members:
        rows.append(("files", f"{len(record.members)} in this batch"))
    if isinstance(record, IngestRecord) and record.batch_id:
        rows.append(("batch", record.batch_id))
    if record.published_by:
        rows.append(("published by", f"{record.published_by}: {record.publish_reason or ''}"))
    if record.cost_usd is not None:
        share = (
            " (its share of the batch, by bytes)"
            if isinstance(record, IngestRecord) and (record.batch_id)
            else ""
        )
        rows.append(("cost", f"${record.cost_usd:.4f}{share}"))
    if (split := shaping.time_split_text(record)) is not None:
        rows.append(("time", split))
    st.markdown(
        "  \n".join(f"**{label}** &nbsp; {shaping.md_escape(value)}" for label, value in rows)
    )
    for table in tables_of(record):  # a multi-table dataset: each of its tables
        common.link_to_table(table, f"Table {shaping.md_escape(table)}")


def _counts(view: IngestView, record: LedgerRecord, problem: str | None) -> None:
    if view.tables:  # a multi-table dataset: one row per table, published together
        st.subheader(f"Rows per table ({len(view.tables)} tables, published together)")
        common.text_table(
            [
                {
                    "table": t.table,
                    "written": _number(t.written),
                    "on main now": _number(t.main_rows),
                    "on the branch": _number(t.branch_rows),
                }
                for t in view.tables
            ]
        )
        return
    st.subheader("Rows: main vs branch")
    first, second, third = st.columns(3)
    first.metric("on main now", _number(view.main_rows), border=True)
    if view.branch_open:
        # The branch forked from main when the ingest started: main may have moved since,
        # so "written" comes from the job, not from the difference of the two counts.
        second.metric("on the branch", _number(view.branch_rows), border=True)
    else:
        second.metric("branch", "deleted" if record.branch else "none", border=True)
    third.metric("written by this ingest", _number(record.rows_written), border=True)
    if record.quarantined_rows:
        st.metric("quarantined", _number(record.quarantined_rows), border=True)
    if problem:
        st.caption(f"Row counts unavailable: {shaping.md_escape(problem)}")


def _number(value: Any) -> str:
    return "-" if value is None else str(value)


def _checks(report: Record, has_report: bool) -> None:
    st.subheader("Audit checks")
    rows = shaping.check_rows(report)
    if not rows:
        st.caption(
            "No checks in the report."
            if has_report
            else "No audit report: the ingest stopped before the job wrote one."
        )
        return
    frame = pd.DataFrame(rows, dtype=object)
    if not frame["message"].astype(bool).any():
        frame = frame.drop(columns=["message"])
    # A table, not a data grid: a handful of rows, all visible, real text (searchable).
    common.text_table(
        frame, styler=lambda style: style.map(lambda s: STATUS_COLORS.get(s, ""), subset=["status"])
    )


def _files(report: Record) -> None:
    rows = shaping.source_rows(report)
    if not rows:  # one file: its verdict is the run's
        return
    failing = sum(not verdict.passed for verdict in ReportView.of(report).batch_files)
    st.subheader(f"Files: {len(rows)} in this run, {failing} did not pass")
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def _samples(report: Record) -> None:
    for title, rows in shaping.sample_tables(report):
        st.subheader(shaping.md_escape(title))
        common.text_table(rows)


def _schema_changes(report: Record) -> None:
    rows = shaping.schema_change_rows(report)
    note = shaping.schema_note(report)
    if not rows and note is None:  # nothing known: no claim either way
        return
    st.subheader("Schema changes")
    if rows:
        common.text_table(rows)
    if note:
        st.caption(shaping.md_escape(note))


def _actions(
    record: LedgerRecord,
    branch_open: bool,
    ui_url: str | None,
    local: bool,
    conflicts: Sequence[str] = (),
) -> None:
    st.subheader("What to do")
    if conflicts:
        st.warning(f"Not publishable: {shaping.md_escape(conflict_text(conflicts))}.")
    links = shaping.nessie_links(ui_url, record.branch, record.table, branch_open, with_diff=local)
    if not links and record.branch and branch_open:
        st.caption("No Nessie UI link: the stack has no NessieUiUrl output.")
    if links:
        columns = st.columns(len(links))
        for column, (label, url) in zip(columns, links, strict=True):
            column.link_button(f"Nessie UI: {shaping.md_escape(label)}", url)
        if local:
            st.caption(
                f"The local catalog UI at {shaping.md_escape(ui_url or '')}: "
                "`wap dashboard` serves it while it runs, `wap serve` otherwise."
            )
    for what, command in shaping.next_commands(record, branch_open, common.target(), conflicts):
        st.caption(shaping.md_escape(what))
        st.code(command, language="bash")


if __name__ == "__main__":  # run as a page of `st.navigation` (see app.py)
    render()
