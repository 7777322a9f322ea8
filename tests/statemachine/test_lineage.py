"""OpenLineage with its receiver down (issue 29). The receiver's events of real ingests
(the PySpark job) are checked in test_end_to_end.py's audited-table test."""

from __future__ import annotations

import io
import json

from ingestion import metrics
from ingestion.lineage import transport
from ingestion.lineage.events import run_id
from tests.fixtures.lineage import FAST
from tests.fixtures.local_stack import fake_parquet, wait_for_key


def test_a_receiver_that_is_down_changes_no_outcome_and_waits_a_bounded_time(
    make_stack, receiver, waits, monkeypatch, caplog
):
    stack = make_stack(lineage_url=receiver.url)
    stack.drop_file("lin_down/orders/first.parquet", fake_parquet("one"))
    up = wait_for_key(stack, "lin_down/orders/first.parquet")
    stack.wait_idle()
    assert len(receiver.events_of(run_id(up.ingest_id))) == 2
    receiver.stop()  # the port now refuses connections
    seen_at_send: list[str | None] = []
    real = transport._transport

    def watched(*args):
        sender = real(*args)
        emit = sender.emit

        def emit_after_recording(event):
            if event.eventType.value != "START":
                seen_at_send.append(
                    stack.ledger().get_ingest(event.run.facets["wap_ingest"].ingestId).status
                )
            return emit(event)

        sender.emit = emit_after_recording
        return sender

    transport._transport, restore = watched, real
    try:
        emitted = io.StringIO()
        monkeypatch.setattr(metrics, "_log_stream", lambda: emitted)
        stack.drop_file("lin_down/orders/second.parquet", fake_parquet("two"))
        down = wait_for_key(stack, "lin_down/orders/second.parquet")
        stack.drop_file("lin_down/orders/third-fail.parquet", fake_parquet("three"))
        failed = wait_for_key(stack, "lin_down/orders/third-fail.parquet")
        stack.wait_idle()
    finally:
        transport._transport = restore

    assert (up.status, down.status, failed.status) == ("PUBLISHED", "PUBLISHED", "AUDIT_FAILED")
    assert down.finished_at and down.error is None
    # Each outcome was recorded before its event was tried (the ledger's times are the
    # ingest's own), and each try of each event waited only the policy's bounded backoff.
    assert seen_at_send == ["PUBLISHED"] * FAST.tries + ["AUDIT_FAILED"] * FAST.tries
    assert waits == [FAST.delay(1), FAST.delay(2)] * 4  # START + outcome, two ingests
    counted = [
        json.loads(line)
        for line in emitted.getvalue().splitlines()
        if '"LineageEventsNotSent"' in line
    ]
    assert sum(doc["LineageEventsNotSent"] for doc in counted) == 4
    assert [doc["Table"] for doc in counted] == ["lin_down.orders"] * 4
    given_up = [r for r in caplog.records if r.getMessage() == "OpenLineage event not sent"]
    assert [r.event_type for r in given_up] == ["START", "COMPLETE", "START", "FAIL"]
