"""`wap maintain` on a seeded home (tests/fixtures/lake_seed.py): the command's wiring, JSON
and ledger record. What compaction does to a table is tested on a lake the real flow
wrote (tests/wap/ops/test_compaction_run.py)."""

from __future__ import annotations

import pytest

from tests.fixtures.backends import local_world
from tests.fixtures.wap_cli import assert_one_line_error, json_document, run_wap

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    with local_world(tmp_path_factory.mktemp("maintain")) as world:
        yield world


def test_maintain_runs_as_a_ledger_run_and_answers_in_json(home, spark):
    result = run_wap(*home.flags, "maintain", "sales.orders", "--json", spark=spark)

    assert result.exit_code == 0, result.output
    [run] = json_document(result, "maintain")["runs"]
    assert (run["table"], run["status"]) == ("sales.orders", "PUBLISHED")
    assert run["files_before"] >= 1 and run["rows"] >= 2
    runs = run_wap(*home.flags, "runs", "--json")
    [listed] = [
        r for r in json_document(runs, "runs")["ingests"] if r["ingest_id"] == run["run_id"]
    ]
    assert (listed["source"], listed["status"]) == ("maintenance:compaction", "PUBLISHED")
    assert run["branch"] not in home.refs()  # the branch is gone
    shown = run_wap(*home.flags, "show", run["run_id"])
    assert shown.exit_code == 0, shown.output
    assert "maintenance:compaction" in shown.stdout


def test_maintain_refuses_an_unknown_table(home, spark):
    result = run_wap(*home.flags, "maintain", "sales.nothing", spark=spark)

    assert_one_line_error(result, "main has no table sales.nothing")
