"""Before any ingest: a helpful message, never a traceback (Streamlit AppTest, no browser)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from wap.dashboard import APP_PATH
from wap.runtime.home import ENV_HOME, WapHome

LOAD_TIMEOUT = 60  # the first load imports moto and starts the local catalog server


def _app(home, monkeypatch, **query: str) -> AppTest:
    monkeypatch.setenv(ENV_HOME, str(home))
    app = AppTest.from_file(str(APP_PATH), default_timeout=LOAD_TIMEOUT)
    app.query_params.update(query)
    return app


def _texts(app: AppTest) -> str:
    parts = [
        e.value
        for kind in ("info", "error", "caption", "markdown", "title")
        for e in getattr(app, kind)
    ]
    return "\n".join(str(p) for p in parts)


@pytest.fixture
def empty_home(tmp_path):
    """A home `wap` created but never ingested into (marker, empty state directory)."""
    return WapHome(tmp_path / "wap-home").create().root


def test_no_home_yet_shows_how_to_start(tmp_path, monkeypatch):
    app = _app(tmp_path / "never-created", monkeypatch).run()

    assert not app.exception
    assert app.info[0].value.startswith("**No ingests yet.**")
    assert "wap demo" in _texts(app)
    assert not (tmp_path / "never-created").exists()  # looking creates nothing


def test_empty_home_shows_the_same_message(empty_home, monkeypatch):
    app = _app(empty_home, monkeypatch).run()

    assert not app.exception
    assert "No ingests yet" in app.info[0].value
    assert not app.metric  # no counters of nothing


@pytest.mark.parametrize(
    ("page", "param", "value", "error"),
    [
        ("views/ingest.py", "id", "0123456789abcdef", "no ingest 0123456789abcdef in the ledger"),
        # Refused before any lookup: the name never reaches the ledger or Nessie.
        ("views/table.py", "name", "sales.orders; drop table x", "invalid table name"),
    ],
)
def test_a_page_for_a_bad_or_unknown_name_is_a_clear_error(
    empty_home, monkeypatch, page, param, value, error
):
    app = _app(empty_home, monkeypatch).run()
    app.switch_page(page)
    app.query_params[param] = value
    app.run()

    assert not app.exception
    assert error in app.error[0].value
