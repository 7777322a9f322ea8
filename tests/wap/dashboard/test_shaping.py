"""Data shaping: ledger rows, reports and snapshots in, rows for tables and charts out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
import yaml

from contracts.table_config import parse_table_config_text
from ingestion.ledger import IngestRecord
from tests.fixtures.ledger_items import DISCARDED_BY_ALICE
from tests.fixtures.run_rows import run_row
from wap.dashboard import shaping
from wap.ops.backends import Target
from wap.ops.operations import BranchRow

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


RUNS = [  # newest first, as list_runs returns them
    run_row("a" * 16, "QUEUED", when="2026-11-22T11:58:00Z"),
    run_row("b" * 16, "RUNNING", when="2026-11-22T11:50:00Z"),
    run_row(
        "c" * 16,
        "AUDIT_FAILED",
        when="2026-11-22T10:00:00Z",
        branch="wap_sales_orders_c",
        reason="1 error-severity check(s) did not pass: amount_range",
    ),
    run_row(
        "d" * 16,
        "REJECTED",
        table="sales.refunds",
        when="2026-11-21T09:00:00Z",
        reason="schema policy strict: column `x` added",
    ),
    run_row("e" * 16, "PUBLISHED", when="2026-11-21T08:00:00Z"),
    run_row("f" * 16, "DISCARDED", when="2026-11-20T08:00:00Z", branch="wap_sales_orders_f"),
    run_row("0" * 16, "JOB_FAILED", when=None, branch="wap_sales_orders_0"),
]
BRANCHES = [
    BranchRow(
        name="wap_sales_orders_c",
        hash="ab" * 32,
        table="sales.orders",
        ingest_id="c" * 16,
        status="AUDIT_FAILED",
        reason="amount_range",
        since="2026-11-22T10:00:00Z",
        age_seconds=7200.0,
    )
]


def test_outcome_counts_group_statuses_and_list_every_group():
    assert shaping.outcome_counts(RUNS) == {
        "published": 1,
        "failed": 2,
        "rejected": 1,
        "running": 1,
        "queued": 1,
        "discarded": 1,
    }
    assert shaping.outcome_counts([]) == dict.fromkeys(shaping.OUTCOMES, 0)


def test_timeline_has_one_row_per_timed_ingest_oldest_first():
    rows = shaping.timeline_rows(RUNS)

    assert [r["ingest_id"][0] for r in rows] == ["f", "e", "d", "c", "b", "a"]
    assert rows[2] == {
        "when": datetime(2026, 11, 21, 9, 0),
        "table": "sales.refunds",
        "outcome": "rejected",
        "status": "REJECTED",
        "ingest_id": "d" * 16,
        "file": "a.parquet",
    }


def test_timeline_buckets_by_hour_up_to_three_days_then_by_day():
    day = datetime(2026, 11, 1)
    assert shaping.time_bucket_unit([day]) == "hour"
    assert shaping.time_bucket_unit([day, day.replace(day=4)]) == "hour"
    assert shaping.time_bucket_unit([day, day.replace(day=4, hour=1)]) == "day"


def test_timeline_domain_covers_at_least_the_last_day_and_every_ingest():
    now = datetime(2026, 11, 22, 12, 30)
    assert shaping.timeline_domain([datetime(2026, 11, 22, 11, 5)], "hour", now) == (
        datetime(2026, 11, 21, 13),
        datetime(2026, 11, 22, 13),
    )
    assert shaping.timeline_domain([datetime(2026, 11, 19, 7, 5)], "hour", now)[0] == datetime(
        2026, 11, 19, 7
    )
    assert shaping.timeline_domain([], "day", now) == (
        datetime(2026, 11, 9),
        datetime(2026, 11, 23),
    )


def test_attention_lists_failed_and_rejected_newest_first_with_branch_state():
    rows = shaping.attention_rows(RUNS, BRANCHES)

    assert [(r["ingest_id"][0], r["status"], r["branch_open"]) for r in rows] == [
        ("c", "AUDIT_FAILED", True),
        ("d", "REJECTED", False),
        ("0", "JOB_FAILED", False),
    ]
    assert rows[0]["reason"] == "1 error-severity check(s) did not pass: amount_range"
    assert rows[2]["when"] == "-"


def test_active_rows_show_queue_place_and_waiting_time():
    locks = [{"table": "sales.orders", "active": "b" * 16, "queue": ["a" * 16]}]
    rows = shaping.active_rows(RUNS, locks, NOW)

    assert rows == [
        {
            "ingest_id": "a" * 16,
            "table": "sales.orders",
            "status": "QUEUED",
            "file": "a.parquet",
            "place": "#1 in queue",
            "for": "2m",
        },
        {
            "ingest_id": "b" * 16,
            "table": "sales.orders",
            "status": "RUNNING",
            "file": "a.parquet",
            "place": "running",
            "for": "10m",
        },
    ]


def test_branch_rows_carry_age_in_words_and_hours():
    [row] = shaping.branch_rows(BRANCHES)
    assert (row["branch"], row["age"], row["age_hours"], row["outcome"]) == (
        "wap_sales_orders_c",
        "2h",
        2.0,
        "AUDIT_FAILED",
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (5, "5s"),
        (61, "1m"),
        (7199, "119m"),
        (7200, "2h"),
        (47 * 3600, "47h"),
        (49 * 3600, "2d"),
    ],
)
def test_age_text(seconds, text):
    assert shaping.age_text(seconds) == text


REPORT = {
    "checks": [
        {
            "name": "order_id_not_null",
            "kind": "not_null",
            "columns": ["order_id"],
            "severity": "error",
            "status": "passed",
            "violations": 0,
            "threshold": None,
            "observed": 0,
            "samples": [],
        },
        {
            "name": "email_regex",
            "kind": "regex",
            "columns": ["email"],
            "severity": "warn",
            "status": "failed",
            "violations": 2,
            "threshold": {"pattern": "^.+@.+$"},
            "observed": 2,
            "samples": [{"order_id": 7, "email": "nope"}],
        },
        {
            "name": "amount_range",
            "kind": "range",
            "columns": ["amount"],
            "severity": "error",
            "status": "failed",
            "violations": 3,
            "threshold": {"min": 0, "max": None},
            "observed": 3,
            "samples": [
                {"order_id": 1, "amount": "-1.50"},
                {"order_id": 2, "amount": None, "note": "x"},
            ],
        },
    ],
    "schema_changes": [
        {"change": "add_column", "column": "discount", "type": "double"},
        {"change": "widen", "column": "id", "type": "bigint", "from": "int"},
    ],
}


def test_check_rows_put_error_failures_first_then_warnings_then_passes():
    rows = shaping.check_rows(REPORT)

    assert [r["check"] for r in rows] == ["amount_range", "email_regex", "order_id_not_null"]
    assert rows[0] == {
        "check": "amount_range",
        "kind": "range",
        "columns": "amount",
        "severity": "error",
        "status": "failed",
        "violations": 3,
        "threshold": "min 0",
        "observed": "3",
        "message": "",
    }
    assert rows[2]["threshold"] == "-"
    assert shaping.check_rows(None) == []


def test_sample_tables_only_for_checks_that_did_not_pass_with_every_column():
    tables = shaping.sample_tables(REPORT)

    assert [title for title, _ in tables] == [
        "Sample violating rows: email_regex",
        "Sample violating rows: amount_range",
    ]
    assert tables[1][1] == [
        {"order_id": "1", "amount": "-1.50", "note": "null"},
        {"order_id": "2", "amount": "null", "note": "x"},
    ]


def test_unparsable_lines_have_their_own_title():
    check = {
        "name": "parse_errors",
        "kind": "parse_errors",
        "status": "failed",
        "samples": [{"line": 3, "file": "s3://b/k.csv", "text": "2,bob"}],
    }

    tables = shaping.sample_tables({**REPORT, "checks": [check]})

    assert tables == [
        (
            "Unparsable lines (file, line, text): parse_errors",
            [{"line": "3", "file": "s3://b/k.csv", "text": "2,bob"}],
        )
    ]


def test_schema_change_rows_keep_extra_detail():
    assert shaping.schema_change_rows(REPORT) == [
        {"change": "add_column", "column": "discount", "type": "double", "detail": ""},
        {"change": "widen", "column": "id", "type": "bigint", "detail": '{"from": "int"}'},
    ]


def test_commands_for_a_failed_ingest_with_open_branch_reach_the_same_home():
    record = IngestRecord(ingest_id="c" * 16, status="AUDIT_FAILED", branch="wap_sales_orders_c")
    commands = [cmd for _, cmd in shaping.next_commands(record, True, Target(home="/data/my home"))]
    assert commands == [
        "wap --home '/data/my home' publish wap_sales_orders_c --reason \"reviewed: ...\"",
        "wap --home '/data/my home' discard wap_sales_orders_c --reason \"...\"",
        "wap --home '/data/my home' show wap_sales_orders_c",
    ]


def test_no_publish_command_for_a_branch_whose_table_main_changed():
    record = IngestRecord(ingest_id="c" * 16, status="AUDIT_FAILED", branch="wap_sales_orders_c")
    commands = shaping.next_commands(record, True, Target(aws=True), ["sales.orders"])
    assert [cmd for _, cmd in commands] == [
        'wap --aws discard wap_sales_orders_c --reason "..."',
        "wap --aws show wap_sales_orders_c",
    ]


def test_commands_on_aws_and_for_ingests_without_a_branch():
    rejected = IngestRecord(ingest_id="d" * 16, status="REJECTED", branch=None)
    commands = [
        cmd
        for _, cmd in shaping.next_commands(
            rejected, False, Target(profile="ops", region="eu-west-1", stack="Wap2")
        )
    ]
    assert commands == [
        f'wap --profile ops --region eu-west-1 --stack Wap2 discard {"d" * 16} --reason "..."',
        f"wap --profile ops --region eu-west-1 --stack Wap2 show {'d' * 16}",
    ]
    published = IngestRecord(ingest_id="e" * 16, status="PUBLISHED")
    assert [cmd for _, cmd in shaping.next_commands(published, False, Target(aws=True))] == [
        f"wap --aws show {'e' * 16}"
    ]


def test_nessie_links_only_for_open_branches_and_http_bases():
    links = shaping.nessie_links("https://nessie.example.com/", "wap_a_b_1", "sales.orders", True)
    assert links == [
        ("branch wap_a_b_1", "https://nessie.example.com/tree/wap_a_b_1"),
        ("sales.orders on the branch", "https://nessie.example.com/content/wap_a_b_1/sales/orders"),
        ("main", "https://nessie.example.com/tree/main"),
    ]
    assert shaping.nessie_links("https://n", "wap_a_b_1", "sales.orders", False) == []
    local = shaping.nessie_links("http://127.0.0.1:19120", "wap_a_b_1", None, True, with_diff=True)
    assert ("the branch against main", "http://127.0.0.1:19120/diff/wap_a_b_1") in local
    assert shaping.nessie_links("javascript:alert(1)", "wap_a_b_1", "sales.orders", True) == []


def test_snapshot_rows_follow_mains_lineage_oldest_first():
    snapshots = [
        {
            "snapshot_id": 1,
            "parent_id": None,
            "timestamp_ms": 1_795_000_000_000,
            "operation": "append",
            "summary": {"total-records": "40", "added-records": "40"},
        },
        {
            "snapshot_id": 2,
            "parent_id": 1,
            "timestamp_ms": 1_795_000_600_000,
            "operation": "append",
            "summary": {"total-records": "80", "added-records": "40"},
        },
        {
            "snapshot_id": 3,
            "parent_id": 1,
            "timestamp_ms": 1_795_000_300_000,  # rolled back
            "operation": "append",
            "summary": {"total-records": "45"},
        },
    ]
    rows = shaping.snapshot_rows(snapshots, current_id=2)

    assert [(r["snapshot_id"], r["total_rows"], r["added_rows"]) for r in rows] == [
        ("1", 40, 40),
        ("2", 80, 40),
    ]
    assert rows[0]["committed_at"] == datetime(2026, 11, 18, 11, 6, 40)
    assert shaping.snapshot_rows(snapshots, current_id=None) == []


def test_rows_over_time_reaches_now():
    rows = [{"committed_at": datetime(2026, 11, 22, 10), "total_rows": 40, "operation": "append"}]
    points = shaping.rows_over_time(rows, datetime(2026, 11, 22, 12))
    assert points == [
        {"at": datetime(2026, 11, 22, 10), "rows": 40, "what": "append"},
        {"at": datetime(2026, 11, 22, 12), "rows": 40, "what": "now"},
    ]


def test_config_check_rows_show_configured_settings():
    config = parse_table_config_text(
        "checks:\n"
        "  - {kind: range, column: amount, min: 0}\n"
        "  - {kind: expression, name: positive, sql: 'a > 0', severity: warn}\n",
        yaml=yaml,
    )
    assert shaping.config_check_rows(config.checks) == [
        {
            "check": "amount_range",
            "kind": "range",
            "columns": "amount",
            "severity": "error",
            "settings": "min 0",
        },
        {
            "check": "positive",
            "kind": "expression",
            "columns": "-",
            "severity": "warn",
            "settings": "sql a > 0",
        },
    ]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("token=xoxb-123-456-abc failed", "token=*** failed"),
        ("posting with xoxb-123-456-abc failed", "posting with *** failed"),
        ("key AKIAABCDEFGHIJKLMNOP leaked", "key *** leaked"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = ***"),
        ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer ***"),
        ("https://user:pa55@nessie.example.com/api", "https://***@nessie.example.com/api"),
        ("line one\n  line two", "line one line two"),
    ],
)
def test_redact_masks_credentials(text, shown):
    assert shaping.redact(text) == shown


def test_redact_caps_length():
    assert len(shaping.redact("x" * 1000)) == shaping.MAX_TEXT_CHARS


def test_md_escape_renders_data_literally():
    assert (
        shaping.md_escape("**bold** [x](javascript:y) <b>")
        == r"\*\*bold\*\* \[x\]\(javascript\:y\) \<b\>"
    )
    assert shaping.md_code("a`b") == "`a'b`"


def test_a_batch_member_is_shown_running_in_its_batch():
    member = replace(
        run_row(
            "c" * 16, "RUNNING", when="2026-11-22T10:00:00Z", source="s3://b/sales/orders/c.parquet"
        ),
        rows_written=None,
        batch_id="d" * 16,
    )
    locks = [
        {"table": "sales.orders", "active": "d" * 16, "queue": [], "batch": ["c" * 16, "e" * 16]}
    ]
    [row] = shaping.active_rows([member], locks, NOW)
    assert row["place"] == "running in a batch of 2"
    assert shaping.run_rows([member])[0]["batch"] == "d" * 16


def test_a_batch_shows_its_files_verdicts_failing_first_and_its_own_row():
    from wap.ops.operations import BatchRow

    report = {
        "sources": [
            {
                "uri": "s3://b/s/t/run/part-0.parquet",
                "status": "passed",
                "rows": 5,
                "failed_checks": [],
            },
            {
                "uri": "s3://b/s/t/run/part-1.parquet",
                "status": "failed",
                "rows": 3,
                "failed_checks": ["amount_positive"],
            },
            {
                "uri": "s3://b/s/t/run/part-2.parquet",
                "status": "rejected",
                "rows": None,
                "failed_checks": [],
                "reason": "not a parquet file",
            },
        ]
    }
    rows = shaping.source_rows(report)
    assert [(r["file"].rsplit("/", 1)[-1], r["verdict"], r["why"]) for r in rows] == [
        ("part-1.parquet", "failed", "amount_positive"),
        ("part-2.parquet", "rejected", "not a parquet file"),
        ("part-0.parquet", "passed", ""),
    ]
    assert shaping.source_rows({"sources": report["sources"][:1]}) == []  # one file alone
    [row] = shaping.batch_rows(
        [
            BatchRow(
                "d" * 16,
                "s.t",
                3,
                "AUDIT_FAILED",
                "wap_s_t_x",
                "2026-11-22T10:00:00Z",
                "1 of 3 files failed",
            )
        ]
    )
    assert (row["batch"], row["files"], row["outcome"]) == ("d" * 16, 3, "AUDIT_FAILED")


def test_a_failed_dataset_part_points_at_its_batch_not_at_a_publish_of_its_own():
    part = IngestRecord(
        ingest_id="c" * 16,
        status="AUDIT_FAILED",
        batch_id="d" * 16,
        dataset="s/t/run-1/",
        branch=None,
    )
    assert [cmd for _, cmd in shaping.next_commands(part, False, Target(aws=True))] == [
        f"wap --aws show {'d' * 16}"
    ]
    alone = replace(part, dataset=None)  # a coalesced file decides for itself
    commands = shaping.next_commands(alone, False, Target(aws=True))
    assert any(" discard " in cmd for _, cmd in commands)


# ---- a schema-rejected ingest, a freshness threshold, a discarded ingest -----------------------

SCHEMA_REJECTED = {
    "outcome": "rejected",
    "reason": "schema policy 'strict' rejects the file: new column discount (double)",
    "reason_code": "schema_policy",
    "rows_written": 0,
    "schema_changes": [],
    "checks": [],
}


def test_a_schema_rejected_ingest_says_what_was_refused_never_that_it_matched():
    note = shaping.schema_note(SCHEMA_REJECTED)
    assert note == (
        "Refused by the table's schema policy: schema policy 'strict' rejects the file: "
        "new column discount (double)"
    )
    assert "matched" not in note


def test_the_schema_matched_only_when_the_run_wrote_its_files():
    written = {"outcome": "failed", "schema_changes": [], "checks": [], "rows_written": 40}
    assert shaping.schema_note(written) == "None: the batch matched the table's schema."
    assert shaping.schema_note({**written, "outcome": "passed"}) is not None
    # Stopped before comparing schemas (unreadable file, job error), or no report: nothing.
    assert (
        shaping.schema_note(
            {
                "outcome": "rejected",
                "reason_code": "unreadable_input",
                "reason": "not a parquet file",
            }
        )
        is None
    )
    assert shaping.schema_note({"outcome": "error", "reason": "job error: boom"}) is None
    assert shaping.schema_note(None) is None
    # A run over several files that refused one of them: not "matched" either.
    some_refused = {
        **written,
        "sources": [
            {"uri": "s3://b/a.parquet", "status": "passed", "rows": 1, "failed_checks": []},
            {
                "uri": "s3://b/b.parquet",
                "status": "rejected",
                "rows": None,
                "failed_checks": [],
                "reason": "schema policy 'strict' rejects the file: new column x (int)",
            },
        ],
    }
    assert "matched" not in (shaping.schema_note(some_refused) or "")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (604800, "max_age 7d"),
        (129600, "max_age 36h"),
        (1800, "max_age 30m"),
        (90, "max_age 90s"),
        (86400, "max_age 1d"),
    ],
)
def test_a_freshness_threshold_shows_in_its_configured_form(seconds, shown):
    assert shaping.threshold_text({"max_age_s": seconds}) == shown
    [row] = shaping.check_rows(
        {
            "checks": [
                {
                    "name": "fresh",
                    "kind": "freshness",
                    "columns": ["ts"],
                    "severity": "error",
                    "status": "failed",
                    "violations": 1,
                    "threshold": {"max_age_s": seconds},
                    "observed": {"age_s": 1800.0},
                }
            ]
        }
    )
    assert row["threshold"] == shown
    assert "max_age_s" not in row["threshold"]


def test_a_discarded_ingest_keeps_why_it_failed_and_says_who_discarded_it():
    record = IngestRecord(ingest_id="c" * 16, **DISCARDED_BY_ALICE)
    assert shaping.discarded_lines(record, None) == [
        (
            "failed as",
            "AUDIT_FAILED: 1 error-severity check(s) did not pass: amount_range "
            "(failed, 3 violation(s))",
        ),
        ("discarded", "discarded by alice: wrong export"),
    ]
    # The sweeper discards old branches (no person); an old record without the error: the report's.
    swept = replace(
        record, error=None, discarded_by=None, discard_reason="branch older than 7 days"
    )
    assert shaping.discarded_lines(swept, {"reason": "2 error-severity check(s) did not pass"}) == [
        ("failed as", "AUDIT_FAILED: 2 error-severity check(s) did not pass"),
        ("discarded", "branch older than 7 days"),
    ]


def test_table_health_counts_mains_files_and_takes_reclaimable_bytes_from_the_last_gc():
    snapshots = [
        {"snapshot_id": 1, "summary": {"total-data-files": "200", "total-files-size": "200000"}},
        {"snapshot_id": 2, "summary": {"total-data-files": "2", "total-files-size": "180000"}},
    ]
    gc = {
        "collected_at": "2026-11-22T03:00:00+00:00",
        "tables": {"sales.orders": {"data_files": 3, "data_bytes": 3, "reclaimable_bytes": 4096}},
    }
    compaction = "maintenance:compaction"
    runs = [
        run_row("a" * 16, "PUBLISHED", when="2026-11-22T11:00:00Z"),
        run_row(
            "b" * 16,
            "AUDIT_FAILED",
            when="2026-11-22T10:00:00Z",
            source=compaction,
            reason="content changed",
        ),
        run_row("c" * 16, "PUBLISHED", when="2026-11-21T10:00:00Z", source=compaction),
    ]

    health = shaping.table_health("sales.orders", snapshots, 2, gc, runs)

    assert (health.data_files, health.average_file_bytes) == (2, 90000)  # main's, not GC's
    assert health.reclaimable_bytes == 4096
    assert health.collected_at == datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
    assert health.last_compaction is not None
    assert (health.last_compaction.ingest_id, health.last_compaction.status) == (
        "b" * 16,
        "AUDIT_FAILED",
    )


def test_table_health_without_totals_or_a_collection():
    gc = {
        "collected_at": "2026-11-22T03:00:00+00:00",
        "tables": {"sales.orders": {"data_files": 4, "data_bytes": 4000, "reclaimable_bytes": 0}},
    }
    no_totals = [{"snapshot_id": 1, "summary": {}}]

    counted = shaping.table_health("sales.orders", no_totals, 1, gc, [])
    unseen = shaping.table_health("sales.other", [], None, gc, [])
    never = shaping.table_health("sales.orders", [], None, None, RUNS)

    assert (counted.data_files, counted.average_file_bytes) == (4, 1000)  # the GC's count
    assert unseen.reclaimable_bytes == 0  # collected, nothing of it found
    assert (
        never.data_files,
        never.reclaimable_bytes,
        never.collected_at,
        never.last_compaction,
    ) == (None, None, None, None)
    assert shaping.size_text(1536) == "1.5 KiB" and shaping.size_text(None) == "-"


def test_cost_per_table_per_day_sums_the_priced_loads():
    runs = [
        replace(run_row("a" * 16, "PUBLISHED", when="2026-11-22T11:58:00Z"), cost_usd=0.01),
        replace(run_row("b" * 16, "PUBLISHED", when="2026-11-22T01:00:00Z"), cost_usd=0.02),
        replace(
            run_row("c" * 16, "AUDIT_FAILED", table="sales.refunds", when="2026-11-22T03:00:00Z"),
            cost_usd=0.005,
        ),
        replace(run_row("d" * 16, "PUBLISHED", when="2026-11-21T23:00:00Z"), cost_usd=0.04),
        run_row("e" * 16, "RUNNING", when="2026-11-22T12:00:00Z"),  # not billed yet
    ]

    assert shaping.cost_rows(runs) == [
        {"day": "2026-11-21", "table": "sales.orders", "cost_usd": 0.04, "loads": 1},
        {"day": "2026-11-22", "table": "sales.orders", "cost_usd": 0.03, "loads": 2},
        {"day": "2026-11-22", "table": "sales.refunds", "cost_usd": 0.005, "loads": 1},
    ]
    assert shaping.cost_rows(runs[-1:]) == []


def test_the_ingest_page_says_where_the_time_went():
    record = IngestRecord(
        ingest_id="a" * 16,
        uploaded_at="2026-11-22T10:00:00Z",
        created_at="2026-11-22T10:00:02Z",
        job_running_at="2026-11-22T10:01:00Z",
        finished_at="2026-11-22T10:02:00Z",
    )

    assert shaping.time_split_text(record) == (
        "to trigger 2 s · EMR start-up 58 s · to outcome 60 s (120 s from upload)"
    )
    assert shaping.time_split_text(IngestRecord(ingest_id="b" * 16)) is None
