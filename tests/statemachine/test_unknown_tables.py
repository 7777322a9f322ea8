"""Unknown tables are refused at the trigger: an upload for a table with neither a config
nor a table on main (a mistyped prefix) creates nothing unless the deploy opts in
(`-c createTablesFromUploads=true`). These stacks run with the deploy's default (refusal)
unless a test opts in.
"""

from __future__ import annotations

import json

from tests.fixtures.catalog_auth import harness_auth
from tests.fixtures.local_stack import branch_exists, fake_parquet, table_on, wait_for_key
from tests.fixtures.standin_job import commit_table_on_branch

ORDERS_CONFIG = "schema_policy: additive\nchecks:\n  - {kind: row_count, min: 1}\n"


def _refs(nessie_client) -> set[str]:
    return {ref.name for ref in nessie_client.list_references().references}


def test_a_mistyped_table_is_rejected_naming_the_configured_one_and_nothing_is_created(
    make_stack, slack, nessie_client, tmp_path
):
    (tmp_path / "sales.orders.yaml").write_text(ORDERS_CONFIG)
    stack = make_stack(tables_dir=tmp_path, create_tables=False)
    refs_before = _refs(nessie_client)
    main_before = nessie_client.get_reference("main").hash_

    stack.drop_file("sales/ordres/2026-11-22.parquet", fake_parquet("typo"))
    record = wait_for_key(stack, "sales/ordres/2026-11-22.parquet", timeout=20)
    stack.wait_idle(timeout=30)

    assert record.status == "REJECTED", stack.describe()
    assert record.reason_code == "unknown_table"
    assert "unknown table sales.ordres" in record.error
    assert "did you mean sales.orders?" in record.error
    assert "createTablesFromUploads" in record.error
    assert not record.branch
    assert _refs(nessie_client) == refs_before  # no branch
    assert nessie_client.get_reference("main").hash_ == main_before  # no table
    assert table_on(nessie_client, "main", "sales.ordres") is None
    assert stack.emr.started_runs == [] and stack.executions() == []
    assert stack.ledger().get_lock("sales.ordres").active is None
    [alert] = slack.messages
    assert "sales.ordres" in json.dumps(alert) and "sales.orders" in json.dumps(alert)


def test_the_suggestions_include_tables_on_main(make_stack, slack, nessie_client, nessie):
    commit_table_on_branch(
        nessie.api_v1, "inventory.stock", "main", "seed-stock", auth=harness_auth(nessie)
    )
    stack = make_stack(create_tables=False)

    stack.drop_file("inventory/stok/f.parquet", fake_parquet("stok"))
    record = wait_for_key(stack, "inventory/stok/f.parquet", timeout=20)
    stack.wait_idle(timeout=30)  # the trigger alerts after it recorded the rejection

    assert record.status == "REJECTED" and record.reason_code == "unknown_table"
    assert "did you mean inventory.stock?" in record.error
    assert stack.emr.started_runs == []
    assert len(slack.messages) == 1


def test_with_the_opt_in_an_upload_creates_its_table_as_before(make_stack, slack, nessie_client):
    stack = make_stack(create_tables=True)
    assert stack.env["WAP_CREATE_TABLES_FROM_UPLOADS"] == "true"

    stack.drop_file("fresh/events/a.parquet", fake_parquet("fresh"))
    record = wait_for_key(stack, "fresh/events/a.parquet")

    assert record.status == "PUBLISHED", record
    assert table_on(nessie_client, "main", "fresh.events") is not None
    assert not branch_exists(nessie_client, record.branch)
    assert slack.messages == []


def test_a_table_on_main_without_a_config_is_accepted(make_stack, slack, nessie_client, nessie):
    commit_table_on_branch(
        nessie.api_v1, "legacy.events", "main", "seed-legacy", auth=harness_auth(nessie)
    )
    stack = make_stack(create_tables=False)
    assert stack.env["WAP_CREATE_TABLES_FROM_UPLOADS"] == "false"

    stack.drop_file("legacy/events/a.parquet", fake_parquet("legacy"))
    record = wait_for_key(stack, "legacy/events/a.parquet")

    assert record.status == "PUBLISHED", record
    assert len(stack.emr.started_runs) == 1
    assert slack.messages == []


def test_a_configured_table_not_yet_on_main_is_created(make_stack, slack, nessie_client, tmp_path):
    (tmp_path / "newcfg.orders.yaml").write_text(ORDERS_CONFIG)
    stack = make_stack(tables_dir=tmp_path, create_tables=False)

    stack.drop_file("newcfg/orders/a.parquet", fake_parquet("newcfg"))
    record = wait_for_key(stack, "newcfg/orders/a.parquet")

    assert record.status == "PUBLISHED", record
    assert table_on(nessie_client, "main", "newcfg.orders") is not None


def test_an_upload_into_a_metrics_table_is_refused_even_when_uploads_create_tables(
    make_stack, slack, nessie_client, nessie
):
    """docs/metric-history.md: `<table>__audit_metrics` is written by the audits only; an
    upload under its prefix would make drops their own baseline."""
    commit_table_on_branch(
        nessie.api_v1, "inventory.stock__audit_metrics", "main", "seed", auth=harness_auth(nessie)
    )
    stack = make_stack(create_tables=True)

    stack.drop_file("inventory/stock__audit_metrics/f.parquet", fake_parquet("m"))
    record = wait_for_key(stack, "inventory/stock__audit_metrics/f.parquet", timeout=20)
    stack.wait_idle(timeout=30)

    assert record.status == "REJECTED" and record.reason_code == "unknown_table"
    assert "is the metric history of inventory.stock" in record.error
    assert stack.emr.started_runs == []


def test_an_upload_into_a_quarantine_table_is_refused_and_creates_nothing(
    make_stack, slack, nessie_client, tmp_path
):
    """contracts/job_tables.py: `<table>__quarantine` holds the rows the audits set aside;
    an upload under its prefix is refused like one into the metric history."""
    (tmp_path / "lab.q.yaml").write_text(ORDERS_CONFIG)
    stack = make_stack(tables_dir=tmp_path, create_tables=True)
    refs_before = _refs(nessie_client)

    stack.drop_file("lab/q__quarantine/clean.parquet", fake_parquet("q"))
    record = wait_for_key(stack, "lab/q__quarantine/clean.parquet", timeout=20)
    stack.wait_idle(timeout=30)

    assert record.status == "REJECTED" and record.reason_code == "unknown_table"
    assert "is the quarantine table of lab.q" in record.error
    assert stack.emr.started_runs == [] and _refs(nessie_client) == refs_before
    assert table_on(nessie_client, "main", "lab.q__quarantine") is None
    assert table_on(nessie_client, "main", "lab.q__quarantine__audit_metrics") is None
    assert len(slack.messages) == 1
