"""What `wap` does, once for both backends: every test runs on a local home and on a
"deployed" stack (moto + our Nessie server), each seeded with the same lake
(tests/fixtures/lake_seed.py: main holds 2 orders and a customers table; the failed ingest's open
branch adds 3 orders, two with negative amounts; a JOB_FAILED branch, a branch that moved
since its audit, a branch whose table conflicts with main; published and discarded
ingests). Expected values come from the seeded rows and records, not from the code under
test; where the backends rightly differ, the expectation is keyed by `world.kind`.

The tests that change the lake (discard, publish) come last: the module's tests share one
lake per backend, in the order they are written.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.fixtures.backends import World
from tests.fixtures.lake_seed import (
    BRANCH,
    BRANCH_ROWS,
    CONFLICT_BRANCH,
    CONFLICT_ID,
    DISCARDED_BRANCH,
    DISCARDED_ID,
    FAILED_ID,
    FINISHED_AT,
    JOB_ERROR,
    JOB_FAILED_BRANCH,
    JOB_FAILED_ID,
    LEGACY_BRANCH,
    LEGACY_ID,
    MAIN_ROWS,
    MOVED_BRANCH,
    MOVED_ID,
    NAME_COLUMN,
    PUBLISHED_BRANCH,
    PUBLISHED_ID,
)
from tests.fixtures.wap_cli import assert_one_line_error, json_document

NEGATIVE = sorted((r["order_id"], r["amount"]) for r in BRANCH_ROWS if r["amount"] < 0)
OPEN_FAILED = {
    BRANCH: (FAILED_ID, "AUDIT_FAILED"),
    JOB_FAILED_BRANCH: (JOB_FAILED_ID, "JOB_FAILED"),
    MOVED_BRANCH: (MOVED_ID, "AUDIT_FAILED"),
    CONFLICT_BRANCH: (CONFLICT_ID, "AUDIT_FAILED"),
}


def as_json(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def table_rows(text: str) -> list[list[str]]:
    """The cells of every row of the tables `wap` printed."""
    return [
        [cell.strip() for cell in ln.split("│")[1:-1]]
        for ln in text.splitlines()
        if ln.startswith("│")
    ]


def line_with(text: str, fragment: str) -> str:
    return next(ln for ln in text.splitlines() if fragment in ln)


# ---- runs, branches, show -----------------------------------------------------------------


def test_runs_lists_every_record_with_its_outcome(world: World):
    result = world.wap("runs")
    assert result.exit_code == 0, result.output
    listed = set(re.findall(r"\b[0-9a-f]{16}\b", result.stdout))
    assert listed == set(world.records)
    for iid, record in world.records.items():
        line = line_with(result.stdout, iid)
        for name in ("status", "table", "branch", "source_uri", "finished_at"):
            assert record[name] in line, (name, line)
    assert f"s3://{world.source_bucket}/sales/orders/batch-2.parquet" in result.stdout


def test_runs_shows_a_table_late_by_its_expect_section(world: World, tmp_path):
    """Issue 42: the deployed config (the tables directory; the artifacts bucket's
    `tables/` on AWS) expects sales.orders daily; its last publish (the seed's) is days
    old and the failed drops after it do not count."""
    config = "expect: {every: 1d, by: '06:00'}\n"
    env = None
    if world.kind == "aws":
        world.extra["s3"].put_object(
            Bucket=world.artifacts_bucket, Key="tables/sales.orders.yaml", Body=config.encode()
        )
    else:
        (tmp_path / "sales.orders.yaml").write_text(config)
        env = {"WAP_TABLES_DIR": str(tmp_path)}
    try:
        document = json_document(world.wap("runs", "--json", env=env), "runs")
    finally:
        if world.kind == "aws":
            world.extra["s3"].delete_object(
                Bucket=world.artifacts_bucket, Key="tables/sales.orders.yaml"
            )

    [row] = document["freshness"]
    assert row["subject"] == "sales.orders" and row["late"]
    assert row["last_published_at"] == FINISHED_AT
    assert row["reason"].startswith("sales.orders: nothing published since 2026-11-22 10:20;")


def test_branches_lists_only_the_open_failed_branches_with_their_outcome(world: World):
    result = world.wap("branches")
    assert result.exit_code == 0, result.output
    assert set(re.findall(r"\bwap_\w+", result.stdout)) == set(OPEN_FAILED)
    for branch, (iid, status) in OPEN_FAILED.items():
        line = line_with(result.stdout, branch)
        assert status in line and iid in line, line
    assert "amount_range" in line_with(result.stdout, BRANCH)
    assert "OOM" in line_with(result.stdout, JOB_FAILED_BRANCH)
    assert "name_unique" in line_with(result.stdout, CONFLICT_BRANCH)
    for gone in (PUBLISHED_BRANCH, DISCARDED_BRANCH, LEGACY_BRANCH):
        assert gone not in result.stdout


@pytest.mark.parametrize("by", [BRANCH, FAILED_ID], ids=["branch", "ingest_id"])
def test_show_prints_counts_the_failed_check_and_violating_rows(world: World, by):
    result = world.wap("show", by)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"main: {len(MAIN_ROWS)}   branch: {len(MAIN_ROWS) + len(BRANCH_ROWS)}" in out
    checks = {cells[0]: cells[1:] for cells in table_rows(out)}
    assert checks["amount_range"] == ["range", "amount", "error", "failed", "2", "2"]
    assert checks["order_id_not_null"] == ["not_null", "order_id", "error", "passed", "0", "0"]
    for _, amount in NEGATIVE:
        assert str(amount) in out
    assert "order_id_not_null" in out and "passed" in out
    wap = shlex.join(["wap", *world.flags])
    assert f"{wap} publish {BRANCH}" in out
    # One line, never wrapped (a copied command must work), the reason left to the reviewer.
    assert (
        f'Next: {wap} publish {BRANCH} --reason "<why this data may go to main>"   or   '
        f"{wap} discard {BRANCH}\n"
    ) in out


def test_show_does_not_offer_to_publish_a_branch_whose_table_main_changed(world: World):
    """A merge carries the branch's state of a table: once main changed that table, `wap
    publish` would conflict, so `show` says so and offers discard alone (text, --json)."""
    before = world.state()
    result = world.wap("show", CONFLICT_BRANCH)
    assert result.exit_code == 0, result.output
    wap = shlex.join(["wap", *world.flags])
    assert "Not publishable: main changed sales.customers since the audit" in result.stdout
    assert f"{wap} publish {CONFLICT_BRANCH}" not in result.stdout
    assert f"Next: {wap} discard {CONFLICT_BRANCH}\n" in result.stdout
    shown = json_document(world.wap("show", CONFLICT_BRANCH, "--json"), "show")
    assert shown["publish_conflicts"] == ["sales.customers"]
    fresh = json_document(world.wap("show", BRANCH, "--json"), "show")
    assert fresh["publish_conflicts"] == []
    assert world.state() == before  # asking is a dry run: nothing merged


def test_runs_branches_and_show_print_one_json_document(world: World):
    """--json: the same records as the tables, valid against docs/cli-schemas/."""
    runs = json_document(world.wap("runs", "--json"), "runs")
    by_id = {r["ingest_id"]: r for r in runs["ingests"]}
    assert set(by_id) == set(world.records)
    for iid, record in world.records.items():
        assert (by_id[iid]["status"], by_id[iid]["branch"]) == (record["status"], record["branch"])

    branches = json_document(world.wap("branches", "--json"), "branches")["branches"]
    assert {b["name"]: (b["ingest_id"], b["status"]) for b in branches} == OPEN_FAILED

    for target in (BRANCH, FAILED_ID):
        shown = json_document(world.wap("show", target, "--json"), "show")
        assert shown["record"]["ingest_id"] == FAILED_ID
        assert shown["record"]["status"] == "AUDIT_FAILED" and shown["branch_open"] is True
        assert [(c["name"], c["violations"]) for c in shown["failed_checks"]] == [
            ("amount_range", len(NEGATIVE))
        ]
        assert (shown["main_rows"], shown["branch_rows"]) == (
            len(MAIN_ROWS),
            len(MAIN_ROWS) + len(BRANCH_ROWS),
        )


def test_show_without_a_report_says_so(world: World):
    result = world.wap("show", JOB_FAILED_ID)
    assert result.exit_code == 0, result.output
    assert "no audit report" in result.stdout and JOB_ERROR in result.stdout
    assert f"main: {len(MAIN_ROWS)}   branch: {len(MAIN_ROWS)}" in result.stdout


def test_show_links_the_branch_and_suggests_a_query_per_failed_check(world: World):
    result = world.wap("show", FAILED_ID)
    assert result.exit_code == 0, result.output
    ui = world.ui_url
    assert f"Catalog UI: {ui}/tree/{BRANCH}" in result.stdout
    assert f"sales.orders on the branch: {ui}/content/{BRANCH}/sales/orders" in result.stdout
    # Only the local catalog UI (`wap serve`) has the diff page.
    against_main = f"against main: {ui}/diff/{BRANCH}"
    assert (against_main in result.stdout) == {"local": True, "aws": False}[world.kind]
    [line] = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("amount_range:")]
    command = shlex.split(line.split(":", 1)[1])
    assert command[: len(world.flags) + 3] == ["wap", *world.flags, "query", BRANCH]
    rows = as_json(world.wap(*command[len(world.flags) + 1 :], "--json"))
    assert sorted((r["order_id"], r["amount"]) for r in rows) == NEGATIVE


# ---- query ----------------------------------------------------------------------------------


def test_a_failed_branch_holds_mains_rows_and_its_own(world: World):
    rows = as_json(
        world.wap("query", BRANCH, "SELECT order_id, amount FROM sales.orders ORDER BY 1", "--json")
    )
    everything = MAIN_ROWS + BRANCH_ROWS
    assert [(r["order_id"], r["amount"]) for r in rows] == [
        (r["order_id"], r["amount"]) for r in everything
    ]


def test_main_does_not_see_the_branch(world: World):
    rows = as_json(
        world.wap(
            "query", "main", "SELECT count(*) AS n FROM orders", "-t", "sales.orders", "--json"
        )
    )
    assert rows == [{"n": len(MAIN_ROWS)}]


def test_an_ingest_id_reads_its_open_branch(world: World):
    result = world.wap("query", FAILED_ID, "SELECT order_id, amount FROM orders WHERE amount < 0")
    assert result.exit_code == 0, result.output
    assert f"sales.orders on {BRANCH} (ingest {FAILED_ID})" in result.stdout
    for order_id, amount in NEGATIVE:
        line = next(ln for ln in result.stdout.splitlines() if f" {order_id} " in ln)
        assert str(amount) in line
    assert f"{len(NEGATIVE)} row(s)" in result.stdout
    rows = as_json(
        world.wap(
            "query",
            FAILED_ID,
            "SELECT order_id FROM sales.orders WHERE amount < 0 ORDER BY 1",
            "--json",
        )
    )
    assert [r["order_id"] for r in rows] == [order_id for order_id, _ in NEGATIVE]


def test_a_published_ingest_reads_main_as_of_its_snapshot(world: World):
    rows = as_json(world.wap("query", PUBLISHED_ID, "SELECT count(*) AS n FROM orders", "--json"))
    assert rows == [{"n": len(MAIN_ROWS)}]


def test_a_discarded_ingest_has_nothing_to_query(world: World):
    assert_one_line_error(world.wap("query", DISCARDED_ID, "SELECT 1"), "DISCARDED", "query main")


def test_an_ingest_whose_branch_is_gone_and_snapshot_unknown_is_one_line(world: World):
    assert_one_line_error(
        world.wap("query", LEGACY_ID, "SELECT 1"), "PUBLISHED", "nothing of it to query"
    )


def test_a_quoted_column_name(world: World):
    rows = as_json(
        world.wap(
            "query",
            BRANCH,
            f'SELECT "{NAME_COLUMN}" AS who FROM sales.orders WHERE order_id IN (4, 5) ORDER BY 1',
            "--json",
        )
    )
    expected = sorted(r[NAME_COLUMN] for r in BRANCH_ROWS if r["order_id"] in (4, 5))
    assert [r["who"] for r in rows] == expected


def test_bad_sql_is_one_line_and_exit_1(world: World):
    result = world.wap("query", BRANCH, "SELEC order_id FROM orders")
    assert result.exit_code == 1
    assert_one_line_error(result, "SQL error", "SELEC")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["SELECT 1", "--table", "sales.nope"], ["no table sales.nope on", "sales.orders"]),
        (["SELECT * FROM sales.nope"], ["no table sales.nope on", "sales.orders"]),
        (["SELECT 1", "--table", "Sales;drop"], ["invalid table name"]),
    ],
)
def test_a_table_that_is_not_on_the_ref(world: World, args, fragments):
    result = world.wap("query", BRANCH, *args)
    assert result.exit_code == 1
    assert_one_line_error(result, *fragments)


def test_several_tables_on_main_need_no_choice(world: World):
    # The SQL names the tables it reads (tests/wap/cli/test_query_tables.py).
    assert as_json(world.wap("query", "main", "SELECT 1 AS one", "--json")) == [{"one": 1}]
    # `orders` alone is the one table of that name.
    assert as_json(world.wap("query", BRANCH, "SELECT count(*) AS n FROM orders", "--json")) == [
        {"n": len(MAIN_ROWS) + len(BRANCH_ROWS)}
    ]


@pytest.mark.parametrize("target", ["no_such_branch", "../../etc", "0123456789abcdef"])
def test_unknown_targets_are_one_line(world: World, target):
    assert_one_line_error(world.wap("query", target, "SELECT 1"))


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE stolen AS SELECT * FROM orders",
        "INSERT INTO orders VALUES (9, 9.0, 'x')",
        "DELETE FROM orders",
        "SELECT 1; DROP VIEW orders",
        "SET enable_external_access = true",
        "ATTACH '{dir}/other.db'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "PRAGMA database_list",
        "COPY (SELECT * FROM orders) TO '{dir}/leak.csv'",
        "SELECT * FROM read_csv('{dir}/secret.csv')",
        "SELECT * FROM read_text('{dir}/secret.csv')",
        "SELECT * FROM '{dir}/secret.csv'",
        "SELECT * FROM glob('{dir}/*')",
    ],
)
def test_writes_and_local_files_are_refused(world: World, tmp_path, sql):
    (tmp_path / "secret.csv").write_text("password\nhunter2\n")
    result = world.wap("query", BRANCH, sql.format(dir=tmp_path))
    assert_one_line_error(result)
    assert "hunter2" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.csv"]


def test_rows_are_limited_by_default_and_csv_is_for_scripts(world: World):
    result = world.wap(
        "query", BRANCH, "SELECT order_id FROM orders ORDER BY 1", "--limit", "2", "--csv"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["order_id", "1", "2"]
    assert "first 2 rows" in result.stderr


# ---- refusals change nothing -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "wap_sales_orders_20200101T000000_00000000"), "unknown branch"),
        (("show", "0123456789abcdef"), "no ingest 0123456789abcdef"),
        (("show", "../etc/passwd"), "neither an ingest id"),
        (
            ("publish", "wap_sales_orders_20200101T000000_00000000", "--reason", "ok"),
            "unknown branch",
        ),
        (("discard", "wap_nope"), "unknown branch"),
    ],
)
def test_unknown_targets_change_nothing(world: World, args, message):
    before = world.state()
    assert_one_line_error(world.wap(*args), message)
    assert world.state() == before


def test_refused_publish_and_discard_change_nothing(world: World):
    before = world.state()
    assert_one_line_error(world.wap("publish", BRANCH, "--reason", "  "), "--reason")
    assert_one_line_error(world.wap("publish", PUBLISHED_ID, "--reason", "again"), "is PUBLISHED")
    assert_one_line_error(world.wap("discard", PUBLISHED_ID), "is PUBLISHED")
    assert world.state() == before


def test_a_publish_by_a_reader_is_refused_naming_the_operation_and_changes_nothing(world: World):
    before = world.state()
    result = world.wap("publish", BRANCH, "--reason", "looks fine", env=world.reader_env)
    assert_one_line_error(
        result,
        f"'COMMIT_CHANGE_AGAINST_REFERENCE' is not allowed for role '{world.reader_name}' on "
        "reference 'main'",
    )
    assert world.state() == before  # no merge, no ledger record claiming a publish


def test_a_branch_that_moved_since_its_audit_is_not_published(world: World):
    before = world.state()
    result = world.wap("publish", MOVED_BRANCH, "--reason", "looks fine")
    assert_one_line_error(result, "moved since its audit", world.lake.moved_hash[:12])
    assert world.state() == before


def test_a_publish_that_conflicts_with_main_changes_nothing(world: World):
    before = world.state()
    result = world.wap("publish", CONFLICT_BRANCH, "--reason", "looks fine")
    assert_one_line_error(result, "main changed sales.customers since the audit")
    assert world.state() == before


# ---- what changes the lake (last: the module's tests share it) -------------------------------


def test_discard_deletes_the_branch_and_records_it(world: World):
    before = world.ingests()
    result = world.wap("discard", JOB_FAILED_BRANCH, "--reason", "wrong export", "--by", "bob")
    assert result.exit_code == 0, result.output
    after = world.ingests()
    record = after[JOB_FAILED_ID]
    assert record["status"] == "DISCARDED" and record["previous_status"] == "JOB_FAILED"
    assert record["discarded_by"] == "bob"
    assert record["discard_reason"] == "discarded by bob: wrong export"
    assert record["error"] == JOB_ERROR  # why it failed outlives the discard
    assert JOB_FAILED_BRANCH not in world.refs()
    assert {i: r for i, r in after.items() if i != JOB_FAILED_ID} == {
        i: r for i, r in before.items() if i != JOB_FAILED_ID
    }
    assert JOB_FAILED_BRANCH not in world.wap("branches").stdout


def test_publish_merges_the_audited_hash_with_the_review_in_the_message(world: World):
    main_before = world.refs()["main"]
    result = world.wap(
        "publish",
        BRANCH,
        "--reason",
        "refunds are negative, confirmed with finance",
        "--by",
        "carol",
    )
    assert result.exit_code == 0, result.output

    record = world.ingests()[FAILED_ID]
    assert record["status"] == "PUBLISHED" and record["previous_status"] == "AUDIT_FAILED"
    assert record["published_by"] == "carol"
    assert record["publish_reason"] == "refunds are negative, confirmed with finance"
    head = world.main_head()
    assert head["hash"] == record["published_hash"] != main_before
    assert "refunds are negative, confirmed with finance" in head["message"]
    assert "carol" in head["message"] and BRANCH in head["message"]
    assert head["authors"] == ["carol"]
    assert head["allProperties"]["wap.ingest-id"] == [FAILED_ID]
    # The review stays on the merge itself, for whoever reads main's log in the catalog.
    assert head["allProperties"]["wap.action"] == ["manual-publish"]
    assert head["allProperties"]["wap.reviewed-by"] == ["carol"]
    assert head["allProperties"]["wap.reason"] == ["refunds are negative, confirmed with finance"]
    # The audited commit, nothing else: main's orders are the branch's as audited.
    assert world.metadata_location("main", "sales.orders") == world.lake.branch_metadata
    assert BRANCH not in world.refs()
    # The review is an OTHER event on the ingest's OpenLineage run (issue 29), in the home
    # or at the deployed stack's receiver (its `LineageUrl` output).
    reviews = [e for e in world.lineage(FAILED_ID) if e["eventType"] == "OTHER"]
    assert len(reviews) == 1, world.lineage(FAILED_ID)
    facet = reviews[0]["run"]["facets"]["wap_ingest"]
    assert (facet["reviewer"], facet["reviewReason"], facet["status"]) == (
        "carol",
        "refunds are negative, confirmed with finance",
        "PUBLISHED",
    )
    rows = as_json(
        world.wap(
            "query", "main", "SELECT count(*) AS n FROM orders", "-t", "sales.orders", "--json"
        )
    )
    assert rows == [{"n": len(MAIN_ROWS) + len(BRANCH_ROWS)}]
    # The decision as an OpenLineage event of the ingest's run (issue 29): kept under the
    # home locally; a deployed stack's events are at its receiver.
    lineage = world.wap("lineage", FAILED_ID, "--json")
    if world.kind == "local":
        from tests.fixtures.openlineage_models import parse_run_event

        [event] = [e for e in as_json(lineage) if e["eventType"] == "OTHER"]
        parse_run_event(event)
        facet = event["run"]["facets"]["wap_ingest"]
        assert (facet["status"], facet["reviewer"], facet["reviewReason"]) == (
            "PUBLISHED",
            "carol",
            "refunds are negative, confirmed with finance",
        )
        [output] = event["outputs"]
        assert output["name"] == "sales.orders"
        assert output["facets"]["wap_nessie"]["reference"] == "main"
        assert output["facets"]["wap_nessie"]["hash"] == record["published_hash"]
    else:
        assert_one_line_error(lineage, "lineageUrl")
