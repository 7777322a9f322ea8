"""Plain renderings of the CLI that need no backend."""

from __future__ import annotations

import json

import pytest

from ingestion.ledger import BatchRecord, IngestRecord, QueueStat
from tests.fixtures.run_rows import run_row
from tests.fixtures.wap_cli import valid_cli_json
from wap.cli import render


def _text(*renderables) -> str:
    """What a 200-column terminal shows for `renderables`."""
    from rich.console import Console

    console = Console(width=200, record=True)
    for renderable in renderables:
        console.print(renderable)
    return console.export_text()


def _run_row(char: str, rows: int, **extra):
    """A PUBLISHED row of `wap runs` for ingest `char * 16` of s.t."""
    source = f"s3://b/s/t/{char}.parquet"
    return run_row(char * 16, table="s.t", source=source, when="now", rows_written=rows, **extra)


def _closed_view(record, report=None):
    """What `wap show` knows of an ingest whose branch is gone (no row counts to compare)."""
    from wap.ops.operations import IngestView

    return IngestView(
        record=record,
        report=report,
        branch_open=False,
        main_rows=None,
        branch_rows=None,
        failed_checks=[],
    )


def test_queue_lines_say_how_many_files_wait_and_for_how_long():
    lines = render.queue_lines(
        [QueueStat("sales.orders", 3, 754.0), QueueStat("sales.refunds", 1, 12.0)]
    )
    assert lines == [
        "queued for sales.orders: 3 files, the oldest waiting 12m",
        "queued for sales.refunds: 1 file, the oldest waiting 12s",
    ]
    assert render.queue_lines([]) == []


def test_runs_show_a_batch_column_only_when_an_ingest_ran_in_a_batch():

    from wap.cli import render

    def shown(*rows) -> str:
        return _text(render.runs_table(rows))

    alone = _run_row("a", 1)
    batched = _run_row("b", 1, batch_id="c" * 16)
    assert "batch" not in shown(alone)
    assert "batch" in shown(alone, batched) and "c" * 16 in shown(alone, batched)


def test_show_lists_the_files_of_a_batch_that_did_not_pass():

    from contracts.report import AuditReport, SourceVerdict

    def shown(*sources: SourceVerdict) -> str:
        report = AuditReport(
            ingest_id="d" * 16, table="s.t", branch="wap_s_t_x", outcome="failed", sources=sources
        )
        record = BatchRecord(ingest_id="d" * 16, members=("x",) * len(sources))
        return _text(*render.show_view(_closed_view(record, report)))

    good = SourceVerdict("s3://b/s/t/run/part-0.parquet", "passed", rows=5)
    bad = SourceVerdict(
        "s3://b/s/t/run/part-1.parquet", "failed", rows=3, failed_checks=("amount_positive",)
    )
    broken = SourceVerdict("s3://b/s/t/run/part-2.parquet", "rejected", reason="not a parquet file")
    text = shown(good, bad, broken)
    assert "Files: 3 in this run, 2 did not pass" in text
    assert "part-1.parquet" in text and "amount_positive" in text
    assert "part-2.parquet" in text and "not a parquet file" in text
    assert "part-0.parquet" not in text
    assert "Files:" not in shown(good)  # one file: nothing to list


@pytest.mark.parametrize("status", ["AUDIT_FAILED", "REJECTED", "JOB_FAILED", "PUBLISH_FAILED"])
def test_next_steps_suggest_publish_only_where_it_is_accepted(status):

    from wap.cli.next_steps import REASON_PLACEHOLDER, decisions
    from wap.ops.operations import PUBLISHABLE

    record = IngestRecord(
        ingest_id="0123456789abcdef",
        status=status,
        table="sales.orders",
        branch="wap_sales_orders_20261122T101500_01234567",
    )
    lines = decisions(record, "wap")
    assert lines[-1] == f"wap discard {record.branch}"
    published = [line for line in lines if " publish " in line]
    if status in PUBLISHABLE:
        assert published == [f'wap publish {record.branch} --reason "{REASON_PLACEHOLDER}"']
    else:
        assert published == []


def test_runs_and_show_say_how_many_rows_were_quarantined():

    from tests.fixtures.quarantine import quarantined_report

    clean = _run_row("a", 5)
    quarantined = _run_row("b", 17, quarantined_rows=3)
    assert "quarantined" not in _text(render.runs_table([clean]))
    listing = _text(render.runs_table([clean, quarantined]))
    assert "quarantined" in listing and " 3 " in listing
    document = render.runs_json([clean, quarantined], [], [])
    assert [r["quarantined_rows"] for r in document["ingests"]] == [None, 3]
    valid_cli_json(document, "runs")

    report = quarantined_report(
        ingest_id="b" * 16, table="s.t", branch="wap_s_t_x", rows_written=17, quarantined_rows=3
    )
    record = IngestRecord(ingest_id="b" * 16, table="s.t", status="PUBLISHED", quarantined_rows=3)
    shown = _text(*render.show_view(_closed_view(record, report)))
    assert "quarantined" in shown and "3 rows in s.t__quarantine" in shown


def test_runs_and_show_say_what_a_load_cost_and_where_its_time_went():

    costed = _run_row("a", 5, cost_usd=0.01234, upload_to_outcome_seconds=153.0)
    uncosted = _run_row("b", 5)
    assert "cost" not in _text(render.runs_table([uncosted]))
    listing = _text(render.runs_table([costed, uncosted]))
    assert "cost" in listing and "$0.0123" in listing
    document = render.runs_json([costed, uncosted], [], [])
    assert [r["cost_usd"] for r in document["ingests"]] == [0.01234, None]
    valid_cli_json(document, "runs")

    record = IngestRecord(
        ingest_id="a" * 16,
        table="s.t",
        status="PUBLISHED",
        batch_id="c" * 16,
        uploaded_at="2026-11-27T09:59:58Z",
        created_at="2026-11-27T10:00:00Z",
        job_submitted_at="2026-11-27T10:00:05Z",
        job_running_at="2026-11-27T10:01:10Z",
        job_ended_at="2026-11-27T10:02:00Z",
        finished_at="2026-11-27T10:02:31Z",
        vcpu_hours=0.04,
        memory_gb_hours=0.16,
        storage_gb_hours=0.0,
        cost_usd=0.01234,
        price_region="us-east-1",
    )
    view = _closed_view(record)
    shown = _text(*render.show_view(view))
    assert "$0.0123 its share by bytes of batch " + "c" * 16 in shown
    assert "0.0400 vCPU-h" in shown and "us-east-1 prices" in shown
    assert "EMR start-up 65 s" in shown and "= 153 s from upload" in shown
    document = render.show_json(view)
    assert sum(phase["seconds"] for phase in document["time_split"]) == 153
    valid_cli_json(json.loads(render.to_json(document)), "show")


def test_show_says_a_billed_load_without_a_price_has_an_unknown_cost():
    record = IngestRecord(
        ingest_id="d" * 16,
        table="s.t",
        status="PUBLISHED",
        vcpu_hours=0.04,
        memory_gb_hours=0.16,
        storage_gb_hours=0.0,
    )
    shown = _text(*render.show_view(_closed_view(record)))
    assert "unknown" in shown and "emrPrices" in shown and "0.0400 vCPU-h" in shown


def test_runs_says_a_billed_load_without_a_price_has_an_unknown_cost():
    unpriced = _run_row("e", 5, cost_unknown=True)
    listing = _text(render.runs_table([unpriced, _run_row("f", 5)]))
    assert "cost" in listing and "unknown" in listing
    document = render.runs_json([unpriced], [], [])
    assert document["ingests"][0]["cost_usd"] is None
    assert document["ingests"][0]["cost_unknown"] is True
    valid_cli_json(document, "runs")


def _review_event(status: str, reviewer: str, reason: str) -> dict:
    """An OTHER event of an ingest's run carrying a review, as `wap lineage --json` lists it."""
    facet = {"status": status, "reviewer": reviewer, "reviewReason": reason}
    return {
        "eventTime": "2026-11-28T03:00:00Z",
        "eventType": "OTHER",
        "job": {"name": "s.t"},
        "run": {"facets": {"wap_ingest": facet}},
    }


def test_a_discard_names_its_reviewer_once():
    # The ledger's discard_reason says who already ("discarded by bob: ..."); a manual
    # publish's reason is the reviewer's text alone.
    discarded = render.lineage_line(
        _review_event("DISCARDED", "bob", "discarded by bob: wrong export")
    )
    assert discarded.endswith("  discarded by bob: wrong export"), discarded
    published = render.lineage_line(_review_event("PUBLISHED", "carol", "confirmed"))
    assert published.endswith("  by carol: confirmed"), published
