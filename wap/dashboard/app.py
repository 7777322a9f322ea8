"""Streamlit entry point: `streamlit run wap/dashboard/app.py -- [--home DIR | --aws ...]`.

Thin on purpose: read the target, set up the page, hand over to `st.navigation`.
Every page has a URL: `/` (overview), `/ingest?id=<ingest id>`, `/table?name=<ns.table>`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

from wap.dashboard.options import parse_args
from wap.dashboard.views import common


def _argv() -> list[str]:
    # `streamlit run app.py -- ARGS` leaves sys.argv = [app.py, *ARGS]; under Streamlit's
    # AppTest sys.argv belongs to the test runner, so only the environment applies there.
    if sys.argv and Path(sys.argv[0]).resolve() == Path(__file__).resolve():
        return sys.argv[1:]
    return []


st.set_page_config(page_title="WAP quality", page_icon=":material/verified:", layout="wide")
common.set_target(parse_args(_argv()))
VIEWS = Path(__file__).with_name("views")
pages = [
    st.Page(
        VIEWS / "overview.py",
        title="Overview",
        icon=":material/dashboard:",
        url_path="overview",
        default=True,
    ),
    st.Page(VIEWS / "ingest.py", title="Ingest", icon=":material/search:", url_path="ingest"),
    st.Page(VIEWS / "table.py", title="Table", icon=":material/table_chart:", url_path="table"),
]
common.register_pages(dict(zip(("overview", "ingest", "table"), pages, strict=True)))
common.sidebar()
st.navigation(pages).run()
