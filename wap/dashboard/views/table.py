"""One table (`/table?name=ns.table`): rows on main over time, configured checks, ingests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import altair as alt
import pandas as pd
import streamlit as st
import yaml

from contracts.layout import table_config_key
from contracts.table_config import (
    TableConfig,
    TableConfigError,
    default_config,
    parse_table_config_text,
)
from wap.dashboard import metric_charts, shaping
from wap.dashboard.source import TablePage
from wap.dashboard.views import common
from wap.dashboard.views.common import INFO


def render() -> None:
    data = common.page_data("Table", "name", common.table_data, _pick)
    if data is None:
        return
    st.title(f"Table {shaping.md_escape(data.table)}")
    _quarantine(data)
    _history(data)
    _metrics(data)
    _maintenance(data)
    _config(data)
    _ingests(data)
    common.back_to_overview()


def _quarantine(data: TablePage) -> None:
    """Its quarantine table, named here beside it (never a table of its own in the lists):
    when its config quarantines rows or an ingest set some aside."""
    text = shaping.quarantine_note(data.table, data.runs, _parsed_config(data))
    if text:
        st.caption(shaping.md_escape(text))


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


# Published and failed drops in the overview's colours for those outcomes.
DROP_COLORS = alt.Scale(
    domain=[metric_charts.PUBLISHED, metric_charts.FAILED],
    range=[shaping.OUTCOME_COLORS[shaping.PUBLISHED], shaping.OUTCOME_COLORS[shaping.FAILED]],
)


def _metrics(data: TablePage) -> None:
    st.subheader("Monitored metrics")
    config = _parsed_config(data)
    if config is None:
        st.caption("The config is invalid (see Configured checks): no monitored metrics.")
        return
    if data.metrics_error:
        common.show_error(f"The metric history could not be read: {data.metrics_error}")
    charts = metric_charts.metric_charts(
        config, data.metric_rows, data.failed_reports, table=data.table
    )
    st.caption(
        "Each published drop with the band it was judged against (learned from the "
        "published drops before it); failed drops in red, from their audit reports."
    )
    for chart in charts:
        st.markdown(f"**{shaping.md_escape(chart.monitor.title)}**")
        if not chart.rows:
            st.caption("No published drop recorded it yet.")
            continue
        st.altair_chart(_metric_chart(chart), width="stretch")


def _metric_chart(chart: metric_charts.MetricChart) -> alt.LayerChart:
    """The band each published drop was judged against (drawn up to the drop), its value,
    and each failed drop with the band its report names as a red rule."""
    points = pd.DataFrame(chart.rows)
    published = points[points["drop"] == metric_charts.PUBLISHED]
    failed = points[points["drop"] == metric_charts.FAILED]
    # The value axis leaves out zero so that a band around 10,000 is not a flat line.
    x = alt.X(
        "at:T", title="recorded (UTC)", axis=alt.Axis(format="%m-%d %H:%M", labelOverlap=True)
    )
    y = alt.Y("value:Q", title=chart.monitor.label, scale=alt.Scale(zero=False))
    band = (
        alt.Chart(published.dropna(subset=["low", "high"]))
        .mark_area(opacity=0.2, interpolate="step-before")
        .encode(x=x, y=alt.Y("low:Q", scale=alt.Scale(zero=False)), y2="high:Q")
    )
    line = alt.Chart(published).mark_line().encode(x=x, y=y)
    failed_band = (
        alt.Chart(failed.dropna(subset=["low", "high"]))
        .mark_rule(color=shaping.OUTCOME_COLORS[shaping.FAILED], strokeDash=[4, 3])
        .encode(x=x, y=alt.Y("low:Q", scale=alt.Scale(zero=False)), y2="high:Q")
    )
    drops = (
        alt.Chart(points)
        .mark_point(filled=True, size=60)
        .encode(
            x=x,
            y=y,
            color=alt.Color("drop:N", scale=DROP_COLORS, title="drop"),
            shape=alt.Shape("drop:N", title="drop"),
            tooltip=[
                alt.Tooltip("at:T", title="at", format="%Y-%m-%d %H:%M:%S"),
                alt.Tooltip("drop:N"),
                alt.Tooltip("ingest_id:N", title="ingest"),
                alt.Tooltip("message:N", title="judged"),
            ],
        )
    )
    return alt.layer(band, line, failed_band, drops).properties(height=220)


def _parsed_config(data: TablePage) -> TableConfig | None:
    """The table's config (the defaults without a file); None when it is invalid."""
    if data.config_text is None:
        return default_config()
    try:
        return parse_table_config_text(data.config_text, data.table, yaml=yaml)
    except TableConfigError:
        return None


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
            "row count ≥ 1 and within the band its published history learned, Iceberg "
            "required columns non-null).",
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
