"""Overview: what broke, what runs, which branches wait, and ingests over time per table."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from wap.dashboard import shaping
from wap.dashboard.source import Overview
from wap.dashboard.views import common
from wap.dashboard.views.common import INFO

EMPTY_HINT = (
    "Ingests appear here once the first file went through the flow. Locally, "
    "`wap demo` runs one clean and one broken batch; `wap ingest FILE --table ns.table` "
    "ingests your own file (parquet, CSV or JSON Lines). On a deployed stack, upload it "
    "to the source bucket under `<namespace>/<table>/`."
)
MAX_ATTENTION = 15


def render() -> None:
    st.title("WAP quality dashboard")
    data = common.overview_data(common.target())
    _freshness(data)  # first: a late table is a drop that never came, so no ingest shows it
    if data.no_state is not None or not data.runs:
        st.info("**No ingests yet.** " + EMPTY_HINT, icon=INFO)
        if data.no_state:
            st.caption(shaping.md_escape(data.no_state))
        return
    loaded = data.loaded_at.strftime("%H:%M:%S UTC") if data.loaded_at else "-"
    st.caption(f"{len(data.runs)} ingest(s) in the ledger · read at {loaded}")

    counts = shaping.outcome_counts(data.runs)
    columns = st.columns(6)
    for column, (label, value) in zip(
        columns,
        (
            ("Published", counts[shaping.PUBLISHED]),
            ("Failed", counts[shaping.FAILED]),
            ("Rejected", counts[shaping.REJECTED]),
            ("Running", counts[shaping.RUNNING]),
            ("Queued", counts[shaping.QUEUED]),
            ("Open branches", len(data.branches)),
        ),
        strict=True,
    ):
        column.metric(label, value, border=True)

    _attention(data)
    _timeline(data)
    st.subheader("Running and queued")
    active = shaping.active_rows(data.runs, data.locks, data.loaded_at)
    if active:
        st.dataframe(pd.DataFrame(active), hide_index=True)
    else:
        st.caption("Nothing is running or waiting.")
    st.subheader("Open branches")
    branches = shaping.branch_rows(data.branches)
    if branches:
        st.dataframe(
            pd.DataFrame(branches)[["branch", "age", "table", "outcome", "reason"]],
            hide_index=True,
        )
    else:
        st.caption("No open WAP branches: every ingest was published or discarded.")
    _batches(data)
    _costs(data)
    _all_ingests(data)


def _freshness(data: Overview) -> None:
    rows = shaping.freshness_rows(data.freshness)
    if not rows:  # no table config has an `expect:` section
        return
    st.subheader("Freshness")
    late = [row for row in data.freshness if row.late]
    for row in late:
        st.error(shaping.md_escape(row.reason or row.subject), icon=":material/schedule:")
    st.caption(
        "Tables whose config says when drops are expected (`expect:`), late ones first. "
        "Only a published drop is an arrival: a failed, rejected or held one is not."
    )
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def _batches(data: Overview) -> None:
    rows = shaping.batch_rows(data.batches)
    if not rows:  # every file ran alone: nothing to add to the ingests below
        return
    st.subheader("Batches")
    st.caption(
        "Runs over several files (`batch:` and `arrival:` in the table config). "
        "SPLIT: the files went back to the queue, the good ones together and each "
        "failing one alone. Open a batch by its id on the Ingest page."
    )
    st.dataframe(pd.DataFrame(rows), hide_index=True)


def _costs(data: Overview) -> None:
    rows = shaping.cost_rows(data.runs)
    if not rows:  # no load was priced yet (EMR bills a run when it ends)
        return
    st.subheader("Cost per table per day")
    st.caption(
        "What EMR Serverless billed for the loads (vCPU, memory and storage of each job "
        "run, priced by contracts/pricing.py or the deploy's emrPrices; a batch's files "
        "share its cost by bytes). Idle pre-initialized workers are not in any load's "
        "cost (docs/deploy.md, Start-up time and cost)."
    )
    frame = pd.DataFrame(rows)
    chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("day:O", title="day (UTC)"),
            y=alt.Y("sum(cost_usd):Q", title="USD"),
            color=alt.Color("table:N", title="table"),
            tooltip=[
                alt.Tooltip("day:O"),
                alt.Tooltip("table:N"),
                alt.Tooltip("cost_usd:Q", title="USD", format="$.4f"),
                alt.Tooltip("loads:Q"),
            ],
        )
        .properties(height=200, width=760)
    )
    st.altair_chart(chart)
    st.dataframe(frame, hide_index=True)


def _attention(data: Overview) -> None:
    st.subheader("Needs attention")
    rows = shaping.attention_rows(data.runs, data.branches)
    if not rows:
        st.success(
            "Nothing failed: every ingest was published, discarded or is still running.",
            icon=":material/check_circle:",
        )
        return
    for row in rows[:MAX_ATTENTION]:
        icon = shaping.STATUS_ICONS[shaping.outcome_of(row["status"])]
        branch = "branch open" if row["branch_open"] else "no open branch"
        label = (
            f"**{shaping.md_escape(row['table'])}** · {shaping.md_escape(row['file'])} · "
            f"{shaping.md_escape(row['status'])} ({branch}) · {shaping.md_escape(row['when'])}"
        )
        with st.container(border=True):
            common.link_to_ingest(row["ingest_id"], label, icon=icon)
            st.caption(shaping.md_escape(row["reason"]))
    if len(rows) > MAX_ATTENTION:
        st.caption(f"… and {len(rows) - MAX_ATTENTION} more in the table below.")


def _timeline(data: Overview) -> None:
    st.subheader("Ingests over time")
    rows = shaping.timeline_rows(data.runs)
    if not rows:
        st.caption("No ingest has a timestamp yet.")
        return
    frame = pd.DataFrame(rows)
    unit = shaping.time_bucket_unit(list(frame["when"]))
    time_unit = "yearmonthdatehours" if unit == "hour" else "yearmonthdate"
    start, end = shaping.timeline_domain(
        list(frame["when"]), unit, data.loaded_at.replace(tzinfo=None)
    )
    present = [o for o in shaping.OUTCOMES if o in set(frame["outcome"])]
    chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X(
                f"{time_unit}(when):T",
                title=f"ingests per {unit} (UTC)",
                scale=alt.Scale(domain=[start.isoformat(), end.isoformat()]),
            ),
            y=alt.Y("count():Q", title=None, axis=alt.Axis(tickMinStep=1)),
            color=alt.Color(
                "outcome:N",
                title="outcome",
                scale=alt.Scale(domain=present, range=[shaping.OUTCOME_COLORS[o] for o in present]),
            ),
            row=alt.Row("table:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
            tooltip=[
                alt.Tooltip("table:N"),
                alt.Tooltip("outcome:N"),
                alt.Tooltip("count():Q", title="ingests"),
            ],
        )
        .properties(height=90, width=760)
    )
    st.altair_chart(chart)


def _all_ingests(data: Overview) -> None:
    st.subheader("All ingests")
    common.runs_table(data.runs)


if __name__ == "__main__":  # run as a page of `st.navigation` (see app.py)
    render()
