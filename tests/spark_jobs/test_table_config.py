"""Table config parsing (pure Python) and identifier validation/quoting."""

from __future__ import annotations

import pytest
import yaml

from contracts.table_config import (
    CheckSpec,
    PartitionField,
    TableConfigError,
    default_config,
    parse_max_age,
    parse_table_config_text,
)
from spark_jobs.errors import InvalidArgumentError
from spark_jobs.identifiers import (
    quote,
    quote_parts,
    split_table_name,
    validate_branch,
    validate_ingest_id,
)
from tests.fixtures.paths import REPO

FULL = """
schema_policy: strict
partition_by: ["days(order_ts)", "bucket(16, order_id)", region, "truncate(4, my col)"]
schema:
  - {name: order_id, type: bigint, required: true}
checks:
  - {kind: not_null, column: order_id}
  - {kind: unique, columns: [order_id, region], against_main: true, severity: warn}
  - {kind: accepted_values, column: status, values: [NEW, PAID]}
  - {kind: range, column: amount, min: 0}
  - {kind: regex, column: email, pattern: '^\\p{Alpha}+@'}
  - {kind: row_count, min: 1, max: 100}
  - {kind: null_fraction, column: discount, max: 0.25}
  - {kind: expression, name: sane, sql: "amount >= discount"}
  - {kind: freshness, column: order_ts, max_age: 36h}
"""


def test_full_config_parses_into_typed_specs():
    config = parse_table_config_text(FULL, yaml=yaml)
    assert config.schema_policy == "strict"
    assert config.partition_by == (
        PartitionField("day", "order_ts"),
        PartitionField("bucket", "order_id", 16),
        PartitionField("identity", "region"),
        PartitionField("truncate", "my col", 4),
    )
    assert config.columns[0].required is True
    assert [c.kind for c in config.checks] == [
        "not_null",
        "unique",
        "accepted_values",
        "range",
        "regex",
        "row_count",
        "null_fraction",
        "expression",
        "freshness",
    ]
    assert config.checks[1] == CheckSpec(
        name="order_id_region_unique",
        kind="unique",
        columns=("order_id", "region"),
        severity="warn",
        params={"against_main": True},
    )
    assert config.checks[7].name == "sane"


def test_defaults_without_a_file():
    config = default_config()
    assert config.schema_policy == "additive"
    assert config.from_file is False
    assert [(c.kind, c.params) for c in config.checks] == [
        ("row_count", {"min": 1}),
        # No table goes unaudited: its row count is watched against its own history.
        ("anomaly", {"metric": "row_count", "sensitivity": 3.0}),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("checks:\n  - {kind: no_such_check, column: a}\n", "unknown check kind 'no_such_check'"),
        ("checks:\n  - {kind: regex, column: a}\n", "missing option(s) ['pattern']"),
        ("checks:\n  - {kind: not_null, column: a, pattern: x}\n", "unknown option(s) ['pattern']"),
        ("checks:\n  - {kind: not_null}\n", "needs `column`"),
        ("checks:\n  - {kind: range, column: a}\n", "needs `min` and/or `max`"),
        ("checks:\n  - {kind: regex, columns: [a, b], pattern: x}\n", "exactly one column"),
        ("checks:\n  - {kind: not_null, column: a, severity: fatal}\n", "severity must be"),
        ("checks:\n  - {kind: null_fraction, column: a, max: 2}\n", "in [0, 1]"),
        ("checks:\n  - {kind: freshness, column: a, max_age: soon}\n", "positive duration"),
        ("checks:\n  - {kind: accepted_values, column: a, values: []}\n", "non-empty list"),
        ("checks:\n  - {kind: row_count, column: a, min: 1}\n", "takes no columns"),
        (
            "checks:\n  - {kind: not_null, column: a}\n  - {kind: not_null, column: a}\n",
            "duplicate check name(s) ['a_not_null']",
        ),
        ("schema_policy: loose\n", "schema_policy must be one of"),
        ("colums: []\n", "unknown key(s) ['colums']"),
        ("partition_by: ['fortnight(ts)']\n", "unknown partition transform 'fortnight'"),
        ("partition_by: ['bucket(ts)']\n", "take a width"),
        ("checks: [\n", "not valid YAML"),
        ("- just a list\n", "expected a mapping"),
    ],
)
def test_config_errors_name_the_problem(text, message):
    with pytest.raises(TableConfigError) as error:
        parse_table_config_text(text, "tables/x.y.yaml", yaml=yaml)
    assert message in str(error.value)
    assert str(error.value).startswith("tables/x.y.yaml")


@pytest.mark.parametrize(
    ("text", "seconds"), [("36h", 129600), ("7d", 604800), ("30m", 1800), ("90s", 90), (60, 60)]
)
def test_max_age(text, seconds):
    assert parse_max_age(text) == seconds


@pytest.mark.parametrize("name", ["select", "my col", "a.b", "we`ird", "Ünï"])
def test_quote_makes_any_column_name_one_identifier(spark, name):
    frame = spark.createDataFrame([(1,)], f"{quote(name)} int")
    assert frame.columns == [name]
    assert frame.selectExpr(quote(name)).columns == [name]


def test_quote_parts():
    assert quote_parts("wap_01234567", "sales", "orders") == "`wap_01234567`.`sales`.`orders`"


@pytest.mark.parametrize(
    "table",
    [
        "sales",
        "a.b.c",
        "Sales.orders",
        "sales.or-ders",
        "sales.1orders",
        "sales.orders; DROP TABLE x",
        "sales.`x`",
    ],
)
def test_bad_table_identifiers_are_refused(table):
    with pytest.raises(InvalidArgumentError):
        split_table_name(table)


def test_good_table_identifier():
    assert split_table_name("sales_eu.orders_2026") == ("sales_eu", "orders_2026")


@pytest.mark.parametrize("branch", ["wap_a_b_20261122T101500_01234567", "main", "feature/x-1"])
def test_valid_branch_names(branch):
    assert validate_branch(branch) == branch


@pytest.mark.parametrize("branch", ["", "1abc", "a..b", "a/../b", "x?y", "a b", "x/"])
def test_invalid_branch_names(branch):
    with pytest.raises(InvalidArgumentError):
        validate_branch(branch)


@pytest.mark.parametrize("ingest_id", ["0123456789ABCDEF", "abc", "../../etc", "0123456789abcdeg"])
def test_invalid_ingest_ids(ingest_id):
    with pytest.raises(InvalidArgumentError):
        validate_ingest_id(ingest_id)


TABLES = sorted((REPO / "tables").glob("*.yaml"))


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_shipped_table_configs_are_valid(spark, path):
    from spark_jobs.checks import compile_checks
    from spark_jobs.writer import declared_schema

    namespace, table, _ = path.name.split(".")
    split_table_name(f"{namespace}.{table}")
    config = parse_table_config_text(path.read_text(), str(path), yaml=yaml)
    if config.columns:  # checks must fit the declared columns
        assert compile_checks(spark, config, declared_schema(spark, config.columns))
