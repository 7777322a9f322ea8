"""`wap query --aws`: the same SQL against a "deployed" stack (tests/cli/test_aws_backend.py's
moto stack and Nessie server; the failed branch adds order ids 3, 4 and 5, the last two with
negative amounts, to main's 1 and 2)."""

from __future__ import annotations

import json

from tests.cli.conftest import assert_one_line_error, run_wap
from tests.cli.test_aws_backend import (  # noqa: F401 (deployed is a fixture)
    DONE_ID,
    FAILED_BRANCH,
    FAILED_ID,
    REGION,
    STACK,
    deployed,
)


def aws(*args: str):
    return run_wap("--aws", "--region", REGION, "--stack", STACK, *args)


def test_query_reads_the_branch_of_a_deployed_stack(deployed):  # noqa: F811
    sql = "SELECT order_id FROM sales.orders WHERE amount < 0 ORDER BY 1"
    for target in (FAILED_BRANCH, FAILED_ID):
        result = aws("query", target, sql, "--json")
        assert result.exit_code == 0, result.output
        assert [r["order_id"] for r in json.loads(result.stdout)] == [4, 5]
    result = aws("query", "main", "SELECT count(*) AS n FROM orders", "--json")
    assert json.loads(result.stdout) == [{"n": 2}]


def test_an_ingest_whose_branch_is_gone_is_one_line(deployed):  # noqa: F811
    assert_one_line_error(aws("query", DONE_ID, "SELECT 1"), "nothing of it to query")


def test_a_profile_selects_the_account(deployed, tmp_path, monkeypatch):  # noqa: F811
    config = tmp_path / "config"
    config.write_text(
        f"[profile wap-test]\nregion = {REGION}\n"
        "aws_access_key_id = testing\naws_secret_access_key = testing\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    result = run_wap(
        "--profile",
        "wap-test",
        "--stack",
        STACK,
        "query",
        FAILED_ID,
        "SELECT count(*) AS n FROM orders",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"n": 5}]
