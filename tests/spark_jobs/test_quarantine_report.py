"""The report names the checks that set rows aside (issue 40): each quarantine check's
entry carries `quarantined_rows`, which the Slack warning, the dashboard and `wap show`
read; no other entry has it (pure functions, no Spark session)."""

from __future__ import annotations

from contracts.report import AuditReport, CheckResult
from contracts.table_config import QuarantineGate
from spark_jobs.quarantine import QUARANTINED, Split, judge_quarantine
from spark_jobs.writer import CatalogTable
from tests.fixtures.quarantine import quarantined_report


def _result(name: str, kind: str = "range") -> CheckResult:
    return CheckResult(name=name, kind=kind, severity="error", status="passed", violations=0)


def test_each_quarantine_check_that_set_rows_aside_says_how_many():
    split = Split(
        table=CatalogTable("lake", "sales", "orders__quarantine"),
        ingest_id="a" * 16,
        checks=[("amount_range", None), ("known_status", None)],
        counts={QUARANTINED: 3, "amount_range": 3, "known_status": 0},
    )
    checks, quarantined = judge_quarantine(
        [_result("amount_range"), _result("known_status"), _result("rows", "row_count")],
        split,
        QuarantineGate(max_rows=10),
        published=17,
    )

    by_name = {check.name: check for check in checks}
    assert quarantined == 3
    assert by_name["amount_range"].quarantined_rows == 3
    assert by_name["known_status"].quarantined_rows == 0
    assert by_name["rows"].quarantined_rows is None
    assert by_name["quarantine_gate"].quarantined_rows is None
    report = quarantined_report(rows_written=17, checks=tuple(checks))
    parsed = AuditReport.from_dict(report.to_dict())
    assert [check.name for check in parsed.quarantining_checks] == ["amount_range"]
    assert "quarantined_rows" not in report.to_dict()["checks"][2]  # other entries unchanged


def _amount_range_split() -> Split:
    """sales.orders' split after amount_range set 3 rows aside."""
    return Split(
        table=CatalogTable("lake", "sales", "orders__quarantine"),
        ingest_id="a" * 16,
        checks=[("amount_range", None)],
        counts={QUARANTINED: 3, "amount_range": 3},
    )


def test_a_quarantine_checks_message_names_the_table_with_its_namespace():
    # As the alert and the docs do: `wap show` prints it in the check's expected column.
    split = _amount_range_split()
    [check, _gate], _ = judge_quarantine(
        [_result("amount_range")], split, QuarantineGate(max_rows=10), published=17
    )
    assert check.message == "3 row(s) set aside in sales.orders__quarantine, not published"


def test_the_gates_reason_says_how_many_rows_of_how_many_and_which_bound():
    from spark_jobs.report import Report

    split = _amount_range_split()
    for gate, bound in (
        (QuarantineGate(max_fraction=0.5), "max_fraction 0.5"),
        (QuarantineGate(max_rows=2, max_fraction=0.9), "max_rows 2"),
    ):
        checks, _ = judge_quarantine([_result("amount_range")], split, gate, published=2)
        report = Report(ingest_id="a" * 16, table="sales.orders", source_uris=[], branch="b")
        report.checks = checks
        report.settle()

        assert f"3 of 5 rows (60%) quarantined, above {bound}" in report.reason


def test_whole_file_reads_overlapping_in_two_threads_restore_the_session_settings():
    # A multi-table dataset writes its tables side by side in one session: the second
    # table's setting-aside may start before the first one's ends, and end after it.
    from spark_jobs.quarantine import WHOLE_FILE_BYTES, WHOLE_FILE_CONFS, whole_files

    class _Conf(dict):
        def get(self, name):
            return self[name]

        def set(self, name, value):
            self[name] = value

    class _Spark:
        conf = _Conf({name: "128MB" for name in WHOLE_FILE_CONFS})

    first, second = whole_files(_Spark), whole_files(_Spark)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert set(_Spark.conf.values()) == {WHOLE_FILE_BYTES}  # the second still reads whole
    second.__exit__(None, None, None)

    assert _Spark.conf == {name: "128MB" for name in WHOLE_FILE_CONFS}
