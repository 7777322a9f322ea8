"""What every page shares: the backend target, cached loaders, links between pages."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from wap.dashboard import shaping, source
from wap.dashboard.shaping import md_escape
from wap.exceptions import DashboardError
from wap.ops.backends import Target

T = TypeVar("T")

INFO = ":material/info:"
CACHE_SECONDS = 15  # ingests take minutes; a page may be 15 s old, "Refresh" clears it
_TARGET, _PAGES = "wap_target", "wap_pages"


def set_target(target: Target) -> None:
    st.session_state[_TARGET] = target


def target() -> Target:
    return st.session_state[_TARGET]


def register_pages(pages: Mapping[str, Any]) -> None:
    st.session_state[_PAGES] = dict(pages)


def page(name: str) -> Any:
    """The registered `st.Page` called `name` (overview, ingest, table)."""
    return st.session_state[_PAGES][name]


def sidebar() -> None:
    with st.sidebar:
        st.caption(md_escape(source.describe(target())))
        if st.button(
            "Refresh", icon=":material/refresh:", help="read the ledger, reports and Nessie again"
        ):
            st.cache_data.clear()


@st.cache_data(ttl=CACHE_SECONDS, show_spinner="Reading the ledger and Nessie…")
def overview_data(target: Target) -> source.Overview:
    return source.load_overview(target)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner="Reading the ingest, its report and row counts…")
def ingest_data(target: Target, ref: str) -> source.IngestPage:
    return source.load_ingest(target, ref)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner="Reading the table's snapshots, config and metrics…")
def table_data(target: Target, name: str) -> source.TablePage:
    return source.load_table(target, name)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def table_names(target: Target) -> list[str]:
    return source.list_tables(target)


def link_to_ingest(ingest_id: str, label: str, icon: str | None = None) -> None:
    """A link to the ingest page; `label` must already be Markdown-escaped."""
    st.page_link(page("ingest"), label=label, icon=icon, query_params={"id": ingest_id})


def link_to_table(name: str, label: str | None = None) -> None:
    st.page_link(
        page("table"),
        label=label or md_escape(name),
        icon=":material/table_chart:",
        query_params={"name": name},
    )


def back_to_overview() -> None:
    st.page_link(page("overview"), label="Back to the overview", icon=":material/arrow_back:")


def text_table(rows: Any, styler: Any = None) -> None:
    """A small static table; `st.table` renders cells as Markdown, so each cell is escaped."""
    frame = pd.DataFrame(rows, dtype=object).map(lambda v: "-" if v is None else md_escape(v))
    st.table(styler(frame.style) if styler else frame, hide_index=True)


def show_error(message: str) -> None:
    st.error(md_escape(message), icon=":material/warning:")


def runs_table(runs: Any, *, hide: tuple[str, ...] = ()) -> None:
    """Ledger rows as a table whose first column links to each ingest's page."""
    frame = pd.DataFrame(shaping.run_rows(runs))
    frame.insert(0, "open", [shaping.ingest_page_url(i) for i in frame["ingest_id"]])
    st.dataframe(
        frame.drop(columns=["ingest_id", *hide]),
        hide_index=True,
        column_config={
            "open": st.column_config.LinkColumn("ingest", display_text=r"id=([0-9a-f]+)"),
            "rows": st.column_config.NumberColumn("rows written", format="%d"),
            "quarantined": st.column_config.NumberColumn("rows quarantined", format="%d"),
        },
    )


def page_data(
    title: str, param: str, load: Callable[[Target, str], T], pick: Callable[[], None]
) -> T | None:
    """What a page shows for its query parameter `param`: `load(target, value)`. None when
    the page is already drawn: the picker (no value) or the error, in one line."""
    value = (st.query_params.get(param) or "").strip()
    if not value:
        pick()
        return None
    try:
        return load(target(), value)
    except DashboardError as exc:
        st.title(title)
        show_error(str(exc))
        back_to_overview()
        return None
