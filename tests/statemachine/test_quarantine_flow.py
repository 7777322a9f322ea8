"""A drop whose job set rows aside (issue 40) through the real state machine: it is
PUBLISHED, and the count of quarantined rows reaches the ledger record that `wap runs`
and `wap show` read, and Slack is warned (the checks that set rows aside, the quarantine
table); a clean drop alerts nobody."""

from __future__ import annotations

import json

from ingestion.lineage.events import run_id
from tests.fixtures.local_stack import fake_parquet, wait_for_key
from tests.fixtures.openlineage_models import parse_run_event


def test_a_published_drop_records_its_quarantined_rows(make_stack):
    stack = make_stack()
    stack.drop_file("clean/qorders/with-quarantine.parquet", fake_parquet("q"))
    record = wait_for_key(stack, "clean/qorders/with-quarantine.parquet")
    stack.wait_idle()

    assert (record.status, record.rows_written, record.quarantined_rows) == ("PUBLISHED", 10, 3)


def test_a_published_drop_with_quarantined_rows_warns_slack(make_stack, slack):
    stack = make_stack()
    stack.drop_file("clean/qorders/with-quarantine.parquet", fake_parquet("q"))
    record = wait_for_key(stack, "clean/qorders/with-quarantine.parquet")
    stack.wait_idle()

    [message] = slack.messages
    assert message["text"] == (
        f"published 10 rows of {record.table}; 3 quarantined: amount_positive"
    )
    text = json.dumps(message["blocks"])
    assert f"{record.table}__quarantine" in text and "amount_positive" in text


def test_the_runs_lineage_outputs_the_quarantine_table_with_its_rows(make_stack, receiver):
    stack = make_stack(lineage_url=receiver.url)
    stack.drop_file("clean/qorders/with-quarantine.parquet", fake_parquet("q"))
    record = wait_for_key(stack, "clean/qorders/with-quarantine.parquet")
    stack.wait_idle()

    [complete] = [
        event
        for event in receiver.events_of(run_id(record.ingest_id))
        if event["eventType"] == "COMPLETE"
    ]
    parse_run_event(complete)
    rows = {
        o["name"]: o["outputFacets"]["outputStatistics"]["rowCount"] for o in complete["outputs"]
    }
    assert rows == {record.table: 10, f"{record.table}__quarantine": 3}


def test_a_clean_drop_records_none(make_stack, slack):
    stack = make_stack()
    stack.drop_file("clean/qorders/plain.parquet", fake_parquet("p"))
    record = wait_for_key(stack, "clean/qorders/plain.parquet")
    stack.wait_idle()

    assert (record.status, record.quarantined_rows) == ("PUBLISHED", None)
    assert slack.messages == []
