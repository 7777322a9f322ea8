"""`on_fail:` on row-level checks and the table's `quarantine:` gate
(contracts/table_config.py, issue 40): hold is the default, every other choice is typed,
and a wrong one is refused naming the check and the option."""

from __future__ import annotations

import pytest

from contracts.table_config import (
    HOLD,
    QUARANTINE,
    ROW_LEVEL_KINDS,
    WARN,
    QuarantineGate,
    TableConfigError,
    default_config,
    parse_table_config,
)

GATE = {"max_fraction": 0.01, "max_rows": 1000}


def _config(*checks: dict, gate: dict | None = GATE):
    raw: dict = {"checks": list(checks)}
    if gate is not None:
        raw["quarantine"] = gate
    return parse_table_config(raw, "t.yaml")


def test_hold_is_the_default_and_today_s_behaviour():
    config = _config({"kind": "range", "column": "amount", "min": 0}, gate=None)
    assert config.checks[0].on_fail == HOLD
    assert config.checks[0].severity == "error"
    assert config.quarantine is None
    assert config.quarantine_checks == ()
    assert default_config().quarantine is None


def test_every_row_level_check_takes_each_action():
    specs = {
        "not_null": {"column": "id"},
        "accepted_values": {"column": "status", "values": ["NEW"]},
        "range": {"column": "amount", "min": 0},
        "regex": {"column": "email", "pattern": "@"},
        "expression": {"sql": "amount >= 0"},
        "parse_errors": {},
    }
    assert set(specs) == set(ROW_LEVEL_KINDS)
    for action in (HOLD, QUARANTINE, WARN):
        config = _config(*({"kind": kind, "on_fail": action, **p} for kind, p in specs.items()))
        assert {c.on_fail for c in config.checks} == {action}


def test_quarantine_checks_and_the_gate_are_typed():
    config = _config(
        {
            "kind": "range",
            "name": "amount_range",
            "column": "amount",
            "min": 0,
            "on_fail": "quarantine",
        },
        {"kind": "not_null", "column": "id"},
    )
    assert [c.name for c in config.quarantine_checks] == ["amount_range"]
    assert config.quarantine == QuarantineGate(max_fraction=0.01, max_rows=1000)
    only_rows = _config(
        {"kind": "not_null", "column": "id", "on_fail": "quarantine"}, gate={"max_rows": 0}
    )
    assert only_rows.quarantine == QuarantineGate(max_fraction=None, max_rows=0)


def test_warn_records_without_holding():
    [check] = _config({"kind": "regex", "column": "e", "pattern": "@", "on_fail": "warn"}).checks
    assert (check.on_fail, check.severity) == (WARN, "warn")


@pytest.mark.parametrize(
    ("check", "gate", "message"),
    [
        (
            {"kind": "range", "column": "a", "min": 0, "on_fail": "drop"},
            GATE,
            r"on_fail must be hold, quarantine or warn, got 'drop'",
        ),
        (
            {"kind": "range", "column": "a", "min": 0, "on_fail": True},
            GATE,
            r"on_fail must be hold, quarantine or warn",
        ),
        (
            {"kind": "unique", "column": "a", "on_fail": "quarantine"},
            GATE,
            r"checks\[0\] \(unique\): on_fail applies to row-level checks",
        ),
        (
            {"kind": "row_count", "min": 1, "on_fail": "warn"},
            GATE,
            r"row_count\): on_fail applies to row-level checks .*use severity",
        ),
        (
            {"kind": "range", "column": "a", "min": 0, "on_fail": "quarantine", "severity": "warn"},
            GATE,
            r"severity: warn keeps failing rows in the table; on_fail: quarantine",
        ),
        (
            {"kind": "range", "column": "a", "min": 0, "on_fail": "warn", "severity": "error"},
            GATE,
            r"on_fail: warn is severity: warn",
        ),
        (
            {"kind": "parse_errors", "max": 3, "on_fail": "quarantine"},
            GATE,
            r"parse_errors\): max does not apply with on_fail: quarantine",
        ),
        (
            {"kind": "range", "column": "a", "min": 0, "on_fail": "quarantine"},
            None,
            r"t.yaml: check 'a_range' has on_fail: quarantine, which needs the table's",
        ),
        (
            {"kind": "range", "column": "a", "min": 0},
            {"max_fraction": 1.5},
            r"t.yaml: quarantine: max_fraction must be a number in \[0, 1\], got 1.5",
        ),
        (
            {"kind": "range", "column": "a", "min": 0},
            {"max_rows": -1},
            r"quarantine: max_rows must be a whole number >= 0, got -1",
        ),
        (
            {"kind": "range", "column": "a", "min": 0},
            {"max_rows": True},
            r"max_rows must be a whole number",
        ),
        (
            {"kind": "range", "column": "a", "min": 0},
            {},
            r"quarantine: give max_fraction and/or max_rows",
        ),
        (
            {"kind": "range", "column": "a", "min": 0},
            {"max": 3},
            r"quarantine: unknown option\(s\) \['max'\]",
        ),
        (
            {"kind": "range", "column": "a", "min": 0},
            [1],
            r"quarantine: expected a mapping, got list",
        ),
    ],
)
def test_bad_choices_are_config_errors_naming_the_option(check, gate, message):
    with pytest.raises(TableConfigError, match=message):
        _config(check, gate=gate)
