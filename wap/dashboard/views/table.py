"""One table (`/table?name=ns.table`): rows on main over time, configured checks, ingests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import altair as alt
import pandas as pd
import streamlit as st
import yaml

from contracts.layout import table_config_key
from contracts.table_config import TableConfigError, default_config, parse_table_config_text
from wap.dashboard import shaping
from wap.dashboard.source import TablePage
from wap.dashboard.views import common
from wap.dashboard.views.common import INFO


def render() -> None:
    data = common.page_data("Table", "name", common.table_data, _pick)
    if data is None:
        return
    st.title(f"Table {shaping.md_escape(data.table)}")
    _history(data)
    _maintenance(data)
    _config(data)
    _ingests(data)
    common.back_to_overview()


def _pick() -> None:
    st.title("Table")
    names = common.table_names(common.target())
    if not names:
        st.info("No tables yet: none has an ingest or a config file.", icon=INFO)
        return
    chosen = st.selectbox("Table", names, index=None, placeholder="Choose a table")
    if chosen:
        st.query_params["name"] = chosen
        st.rerun()


def _history(data: TablePage) -> None:
    st.subheader("Rows on main over time")
    if not data.on_main:
        st.info("Not on main yet: no ingest of this table has been published.", icon=INFO)
        return
    rows = shaping.snapshot_rows(data.snapshots, data.current_snapshot_id)
    if not rows:
        st.caption("The table exists on main but has no snapshot yet.")
        return
    latest = rows[-1]
    first, second, third = st.columns(3)
    first.metric(
        "rows on main", "-" if latest["total_rows"] is None else latest["total_rows"], border=True
    )
    second.metric("snapshots on main", len(rows), border=True)
    third.metric(
        "last change (UTC)", latest["committed_at"].strftime("%Y-%m-%d %H:%M"), border=True
    )
    now = datetime.now(UTC).replace(tzinfo=None)
    points = pd.DataFrame(shaping.rows_over_time(rows, now))
    start = min(rows[0]["committed_at"], now - timedelta(hours=1))  # no zoom into seconds
    chart = (
        alt.Chart(points)
        .mark_line(point=True, interpolate="step-after")
        .encode(
            x=alt.X(
                "at:T",
                title="time (UTC)",
                scale=alt.Scale(domain=[start.isoformat(), now.isoformat()]),
                axis=alt.Axis(format="%m-%d %H:%M", tickCount=6, labelOverlap=True),
            ),
            y=alt.Y("rows:Q", title="rows on main", scale=alt.Scale(zero=True)),
            tooltip=[
                alt.Tooltip("at:T", title="at", format="%Y-%m-%d %H:%M:%S"),
                alt.Tooltip("rows:Q"),
                alt.Tooltip("what:N"),
            ],
        )
        .properties(height=260)
    )
    st.altair_chart(chart, width="stretch")
    with st.expander("Snapshots"):
        st.dataframe(pd.DataFrame(rows), hide_index=True)


def _maintenance(data: TablePage) -> None:
    st.subheader("Files and maintenance")
    health = shaping.table_health(
        data.table, data.snapshots, data.current_snapshot_id, data.gc_summary, data.runs
    )
    files, average, reclaimable, compaction = st.columns(4)
    files.metric(
        "data files on main", "-" if health.data_files is None else health.data_files, border=True
    )
    average.metric("average file size", shaping.size_text(health.average_file_bytes), border=True)
    reclaimable.metric(
        "reclaimable (last GC)", shaping.size_text(health.reclaimable_bytes), border=True
    )
    last = health.last_compaction
    compaction.metric("last compaction", "never" if last is None else last.status, border=True)
    notes = []
    if health.collected_at is not None:
        notes.append(f"garbage collected {health.collected_at:%Y-%m-%d %H:%M} UTC")
    else:
        notes.append("no garbage collection yet (`wap gc`, or the stack's daily run)")
    if last is not None:
        when = shaping.parse_time(last.when)
        notes.append(
            f"last compaction {last.status}"
            + (f" at {when:%Y-%m-%d %H:%M} UTC" if when else "")
            + (f": {last.reason}" if last.reason else "")
        )
    st.caption(shaping.md_escape(" · ".join(notes)))
    if last is not None:
        common.link_to_ingest(last.ingest_id, "Open the last compaction run")


def _config(data: TablePage) -> None:
    where = data.config_uri or table_config_key(data.table)
    st.subheader("Configured checks")
    if data.config_text is None:
        st.info(
            f"No {shaping.md_code(where)}: the defaults apply (schema policy additive, "
            "row count ≥ 1, Iceberg required columns non-null).",
            icon=INFO,
        )
        config = default_config()
    else:
        try:
            config = parse_table_config_text(data.config_text, where, yaml=yaml)
        except TableConfigError as exc:
            common.show_error(f"{where} is invalid, ingests of this table are rejected: {exc}")
            return
        st.caption(
            f"From {shaping.md_code(where)} · schema policy "
            f"**{shaping.md_escape(config.schema_policy)}**"
            + (
                " · partitioned by "
                + ", ".join(
                    shaping.md_escape(f"{p.transform}({p.column})") for p in config.partition_by
                )
                if config.partition_by
                else ""
            )
        )
    common.text_table(shaping.config_check_rows(config.checks))


def _ingests(data: TablePage) -> None:
    st.subheader("Ingests of this table")
    if not data.runs:
        st.caption("None yet.")
        return
    common.runs_table(data.runs, hide=("table",))  # the page is about one table


if __name__ == "__main__":  # run as a page of `st.navigation` (see app.py)
    render()
