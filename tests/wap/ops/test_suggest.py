"""`wap suggest`'s rules, from a profile to checks and YAML (no Spark: the profile is
written out here; tests/wap/ops/test_profiling.py makes real ones)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
import yaml

from contracts.table_config import parse_table_config_text
from wap.exceptions import InvalidInputError
from wap.ops import suggest as s
from wap.ops.profile import ColumnProfile, Profile

ROWS = 10_000


def profile(*columns: ColumnProfile, rows: int = ROWS, **kw) -> Profile:
    return Profile(files=("file:///tmp/orders.parquet",), rows=rows, columns=columns, **kw)


def checks_of(*columns: ColumnProfile, rows: int = ROWS) -> dict[tuple[str, str], s.Suggestion]:
    """The suggestions by (kind or anomaly metric, column)."""
    found = {}
    for suggestion in s.suggest(profile(*columns, rows=rows)):
        check = suggestion.check
        kind = check["metric"] + "_anomaly" if check["kind"] == "anomaly" else check["kind"]
        found[(kind, check.get("column", ""))] = suggestion
    return found


def test_not_null_where_the_sample_has_no_nulls_and_a_null_fraction_anomaly_where_it_has():
    found = checks_of(
        ColumnProfile("status", "string", nulls=0, distinct=9_000),
        ColumnProfile("note", "string", nulls=12, distinct=9_000),
    )

    assert found[("not_null", "status")].reason == "0 nulls in 10,000 rows"
    assert ("not_null", "note") not in found
    anomaly = found[("null_fraction_anomaly", "note")]
    assert anomaly.check == {
        "kind": "anomaly",
        "name": "note_null_fraction_anomaly",
        "metric": "null_fraction",
        "column": "note",
        "sensitivity": 3,
        "window": 10,
        "min_history": 4,
        "severity": "warn",
    }
    assert anomaly.reason == "12 nulls in 10,000 rows (0.12%)"
    assert ("null_fraction_anomaly", "status") not in found


@pytest.mark.parametrize(
    ("nulls", "rows", "share"),
    [
        (50, 50, "100%"),
        (1, 200, "0.5%"),
        (25, 1_000, "2.5%"),
        (125, 1_000, "12%"),
        (9_999, 10_000, "99%"),  # not all of them: never rounded up to 100%
        (1, 1_000_000, "<0.01%"),
    ],
)
def test_the_null_share_is_a_plain_percentage(nulls, rows, share):
    found = checks_of(ColumnProfile("note", "string", nulls=nulls, distinct=9), rows=rows)
    reason = found[("null_fraction_anomaly", "note")].reason
    assert reason == f"{nulls:,} nulls in {rows:,} rows ({share})"


def test_every_sample_gets_a_row_count_minimum_and_a_row_count_anomaly():
    found = checks_of(ColumnProfile("x", "boolean", nulls=0, distinct=2))

    assert found[("row_count", "")].check == {"kind": "row_count", "min": 1}
    anomaly = found[("row_count_anomaly", "")]
    assert anomaly.check["severity"] == "warn" and "column" not in anomaly.check
    assert anomaly.reason.startswith("the sample has 10,000 rows")


@pytest.mark.parametrize(
    ("name", "type_", "distinct", "nulls", "unique"),
    [
        ("order_id", "bigint", ROWS, 0, True),
        ("id", "int", ROWS, 0, True),
        ("customerId", "string", ROWS, 0, True),
        ("event_uuid", "string", ROWS, 0, True),
        ("order_id", "bigint", ROWS - 1, 0, False),  # a duplicate
        ("order_id", "bigint", ROWS - 1, 1, False),  # a null
        ("amount", "bigint", ROWS, 0, False),  # all distinct, but no key by name
        ("paid", "string", ROWS, 0, False),  # `id` inside a word is not a key
        ("order_id", "double", ROWS, 0, False),  # not a key's type
    ],
)
def test_unique_for_key_like_columns_only(name, type_, distinct, nulls, unique):
    found = checks_of(ColumnProfile(name, type_, nulls=nulls, distinct=distinct))

    assert (("unique", name) in found) is unique
    if unique:
        assert found[("unique", name)].check == {
            "kind": "unique",
            "column": name,
            "against_main": True,  # a key is the table's: a file dropped twice must fail
        }
        assert found[("unique", name)].reason.startswith(
            "10,000 distinct values in 10,000 rows, none null; the name says key"
        )


def test_a_key_gets_no_range_it_grows():
    found = checks_of(ColumnProfile("order_id", "bigint", nulls=0, distinct=ROWS, minimum=1))

    assert ("range", "order_id") not in found


def test_accepted_values_for_low_cardinality_strings():
    few = ColumnProfile("status", "string", nulls=0, distinct=4, values=("A", "B", "C", "D"))
    found = checks_of(few)

    assert found[("accepted_values", "status")].check == {
        "kind": "accepted_values",
        "column": "status",
        "values": ["A", "B", "C", "D"],
    }
    assert (
        found[("accepted_values", "status")].reason == "4 distinct values in 10,000 non-null rows"
    )


@pytest.mark.parametrize(
    ("distinct", "rows", "suggested"),
    [(20, ROWS, True), (21, ROWS, False), (3, 6, True), (3, 5, False)],
)
def test_accepted_values_needs_at_most_20_values_each_seen_twice_on_average(
    distinct, rows, suggested
):
    values = tuple(f"v{i}" for i in range(distinct)) if distinct <= 20 else None
    column = ColumnProfile("status", "string", nulls=0, distinct=distinct, values=values)

    assert (("accepted_values", "status") in checks_of(column, rows=rows)) is suggested


def range_of(column: ColumnProfile) -> s.Suggestion | None:
    return checks_of(column).get(("range", column.name))


def test_a_range_is_widened_by_a_tenth_of_the_span_and_stays_at_or_above_zero():
    found = range_of(
        ColumnProfile("amount", "double", nulls=0, distinct=900, minimum=3.5, maximum=990.0)
    )

    assert found.check == {"kind": "range", "column": "amount", "min": 0, "max": 1090}
    assert found.reason == (
        "sample range 3.5 .. 990.0; widened by 10% of the span, min kept at 0: no negatives"
    )


def test_a_float_is_shown_to_six_significant_digits():
    found = range_of(
        ColumnProfile("x", "double", nulls=0, distinct=9, minimum=1 / 3, maximum=999.99681)
    )

    assert found.reason.startswith("sample range 0.333333 .. 999.997;")


def test_a_range_with_negatives_is_widened_below_them():
    found = range_of(
        ColumnProfile("delta", "bigint", nulls=0, distinct=90, minimum=-40, maximum=60)
    )

    assert found.check == {"kind": "range", "column": "delta", "min": -50, "max": 70}
    assert found.reason == "sample range -40 .. 60; widened by 10% of the span"


def test_decimal_bounds_round_to_the_columns_scale_and_integers_to_whole_numbers():
    money = range_of(
        ColumnProfile(
            "price",
            "decimal(12,2)",
            nulls=0,
            distinct=3,
            minimum=Decimal("10.00"),
            maximum=Decimal("10.05"),
        )
    )
    count = range_of(ColumnProfile("qty", "int", nulls=0, distinct=3, minimum=5, maximum=7))

    assert (money.check["min"], money.check["max"]) == (9.99, 10.06)
    assert (count.check["min"], count.check["max"]) == (4, 8)
    assert isinstance(count.check["min"], int)


def test_a_constant_column_gets_a_tenth_of_its_value_and_zeros_stay_zero():
    ten = range_of(ColumnProfile("n", "double", nulls=0, distinct=1, minimum=10.0, maximum=10.0))
    zero = range_of(ColumnProfile("z", "bigint", nulls=0, distinct=1, minimum=0, maximum=0))

    assert (ten.check["min"], ten.check["max"]) == (9, 11)
    assert (zero.check["min"], zero.check["max"]) == (0, 0)


def test_no_range_over_nan_or_infinity():
    nan = ColumnProfile(
        "x", "double", nulls=0, distinct=3, minimum=1.0, maximum=float("nan"), nan=1
    )
    infinite = ColumnProfile("y", "double", nulls=0, distinct=3, minimum=1.0, maximum=float("inf"))

    assert range_of(nan) is None and range_of(infinite) is None


def test_dates_and_timestamps_get_a_minimum_only():
    day = range_of(
        ColumnProfile(
            "day",
            "date",
            nulls=0,
            distinct=20,
            minimum=date(2026, 11, 1),
            maximum=date(2026, 11, 21),
        )
    )
    at = range_of(
        ColumnProfile(
            "at",
            "timestamp",
            nulls=0,
            distinct=2,
            minimum=datetime(2026, 11, 25, 10, 0, tzinfo=UTC),
            maximum=datetime(2026, 11, 25, 20, 0, tzinfo=UTC),
        )
    )

    assert day.check == {"kind": "range", "column": "day", "min": "2026-10-30"}
    assert day.reason.startswith("sample range 2026-11-01 .. 2026-11-21; widened by 10%")
    assert "no max: a later drop carries later dates" in day.reason
    assert at.check == {"kind": "range", "column": "at", "min": "2026-11-25T09:00:00Z"}


ODD = "select: #1, 'yes'"
COLUMNS = (
    ColumnProfile("order_id", "bigint", nulls=0, distinct=ROWS, minimum=1, maximum=ROWS),
    ColumnProfile("amount", "decimal(12,2)", nulls=3, distinct=500, minimum=0, maximum=10),
    ColumnProfile(ODD, "string", nulls=0, distinct=3, values=("yes", "no", "#x: y")),
)


def suggested_text(**kw) -> str:
    sample = profile(*COLUMNS, **kw)
    return s.config_yaml(sample, {"csv": {"delimiter": ";"}}, s.suggest(sample))


def test_the_yaml_holds_the_schema_the_reading_options_and_every_check_under_its_reason():
    text = suggested_text(inferred=True)
    loaded = yaml.safe_load(text)

    assert loaded["csv"] == {"delimiter": ";"}
    assert loaded["schema"] == [
        {"name": "order_id", "type": "bigint"},
        {"name": "amount", "type": "decimal(12,2)"},
        {"name": ODD, "type": "string"},
    ]
    suggested = s.suggest(profile(*COLUMNS))
    assert loaded["checks"] == [suggestion.check for suggestion in suggested]
    for suggestion in suggested:
        assert f"  # {suggestion.reason}\n  - kind: {suggestion.check['kind']}\n" in text
    assert "required" not in text
    assert "# types inferred from the text" in text


def test_the_service_accepts_the_yaml_with_every_check_as_suggested():
    config = parse_table_config_text(suggested_text(), "suggested", yaml=yaml)

    suggested = s.suggest(profile(*COLUMNS))
    assert [check.name for check in config.checks] == [
        "row_count",
        "order_id_not_null",
        "order_id_unique",
        "amount_range",
        f"{ODD}_not_null",
        f"{ODD}_accepted_values",
        "row_count_anomaly",
        "amount_null_fraction_anomaly",
    ]
    assert [check.kind for check in config.checks] == [x.check["kind"] for x in suggested]
    assert config.csv.delimiter == ";"
    assert {c.severity for c in config.checks if c.kind == "anomaly"} == {"warn"}


def test_the_yaml_names_the_first_three_samples_and_counts_the_rest():
    sample = Profile(
        files=tuple(f"file:///tmp/part-{i}.csv" for i in range(5)),
        rows=ROWS,
        columns=COLUMNS,
    )

    text = s.config_yaml(sample, {}, s.suggest(sample))

    assert text.startswith(
        "# Suggested by `wap suggest` from part-0.csv, part-1.csv, part-2.csv and 2 more "
        "(10,000 rows).\n"
    )


def test_the_yaml_says_when_rows_did_not_parse():
    assert "# 7 row(s) of the sample did not parse" in suggested_text(parse_errors=7)


def test_required_is_kept_only_where_the_given_config_says_so():
    sample = profile(ColumnProfile("id", "bigint", nulls=0, distinct=ROWS, required=True))

    text = s.config_yaml(sample, {}, s.suggest(sample))

    assert yaml.safe_load(text)["schema"] == [{"name": "id", "type": "bigint", "required": True}]


def test_the_reading_options_are_the_configs_with_the_flags_over_them(tmp_path):
    config = tmp_path / "shop.payments.yaml"
    config.write_text(
        "format: csv\ncsv: {delimiter: ';', null_value: NA}\n"
        "schema:\n  - {name: id, type: bigint}\nchecks:\n  - {kind: not_null, column: id}\n"
    )

    raw = s.reading_config(config, {"csv": {"delimiter": "|"}, "parse": {"time_zone": "UTC"}})

    assert raw == {
        "format": "csv",
        "csv": {"delimiter": "|", "null_value": "NA"},
        "schema": [{"name": "id", "type": "bigint"}],
        "parse": {"time_zone": "UTC"},
    }
    assert s.table_config(raw).csv.delimiter == "|"


@pytest.mark.parametrize(
    ("text", "overrides", "fragment"),
    [
        ("checks: [{kind: nope}]\n", {}, "unknown check kind 'nope'"),
        ("csv: [\n", {}, "shop.payments.yaml"),
        (None, {"csv": {"delimiter": ";;"}}, "delimiter must be one character"),
        (None, {"format": "xlsx"}, "format must be one of parquet, csv, jsonl"),
    ],
)
def test_a_config_or_flag_the_service_refuses_is_refused(tmp_path, text, overrides, fragment):
    config = None
    if text is not None:
        config = tmp_path / "shop.payments.yaml"
        config.write_text(text)

    with pytest.raises(InvalidInputError, match=fragment):
        s.table_config(s.reading_config(config, overrides))


def test_a_missing_config_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="no such config file"):
        s.reading_config(tmp_path / "nope.yaml", {})
