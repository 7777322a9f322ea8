"""WAP_TABLES_DIR is checked where it is read: a path that is not a directory ends every
command that reads table configs with one line (exit 1), rather than running the table
without its config's checks. Unset, the repository's tables/ is read as before (and a
missing default means no configs, as before)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.wap_cli import assert_one_line_error, run_wap
from wap.exceptions import OpsError
from wap.runtime import embedded_stack
from wap.runtime.embedded_stack import DEFAULT_TABLES_DIR, ENV_TABLES_DIR, tables_dir_from_env


@pytest.fixture
def not_a_dir(tmp_path):
    file = tmp_path / "tables.yaml"
    file.write_text("checks: []\n")
    return {"missing": tmp_path / "nonexistent", "file": file}


@pytest.mark.parametrize(("kind", "words"), [("missing", "does not exist"), ("file", "is not")])
def test_a_setting_that_is_not_a_directory_is_refused(monkeypatch, not_a_dir, kind, words):
    monkeypatch.setenv(ENV_TABLES_DIR, str(not_a_dir[kind]))
    with pytest.raises(OpsError, match=f"{ENV_TABLES_DIR}={not_a_dir[kind]} {words}"):
        tables_dir_from_env()


def test_unset_or_empty_reads_the_default_even_when_it_is_absent(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_TABLES_DIR, raising=False)
    assert tables_dir_from_env() == DEFAULT_TABLES_DIR
    monkeypatch.setenv(ENV_TABLES_DIR, "")
    assert tables_dir_from_env() == DEFAULT_TABLES_DIR
    monkeypatch.setattr(embedded_stack, "DEFAULT_TABLES_DIR", tmp_path / "no-tables")
    assert tables_dir_from_env() == tmp_path / "no-tables"  # no configs, as before


@pytest.mark.parametrize(
    "command",
    [
        ("ingest", "{file}", "--table", "lab.q"),
        ("ingest-dataset", "orders_with_items", "{dir}"),
        ("replay", "lab.q", "wap_lab_q_20261122T101500_01234567"),
        ("demo",),
    ],
)
def test_every_command_reading_table_configs_fails_with_one_line(tmp_path, command):
    data = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": [1]}), data)
    args = [a.format(file=data, dir=tmp_path) for a in command]
    env = {ENV_TABLES_DIR: str(tmp_path / "nonexistent")}

    result = run_wap("--home", str(tmp_path / "home"), *args, env=env)

    assert_one_line_error(result, f"{ENV_TABLES_DIR}={tmp_path / 'nonexistent'}")
    assert result.exit_code == 1
    assert not (tmp_path / "home" / "nessie").exists()  # nothing started


def test_the_dashboard_is_refused_before_it_is_served(tmp_path, monkeypatch):
    """Its table pages read the configs: refused at launch, not page by page."""
    import wap.dashboard

    launched = []
    monkeypatch.setattr(wap.dashboard, "launch", lambda *a, **k: launched.append(a) or 0)
    env = {ENV_TABLES_DIR: str(tmp_path / "nonexistent")}

    result = run_wap("--home", str(tmp_path / "home"), "dashboard", env=env)

    assert_one_line_error(result, f"{ENV_TABLES_DIR}={tmp_path / 'nonexistent'}")
    assert launched == []
