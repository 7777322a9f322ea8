"""The `maintenance:` section of a table config (contracts/table_config.py): defaults that
suit small drops, sizes and durations in the words engineers write, and refusals that
name the option."""

from __future__ import annotations

import pytest

from contracts.table_config import TableConfigError, default_config, parse_table_config


def test_without_the_section_the_defaults_apply():
    for config in (default_config(), parse_table_config({"checks": []})):
        m = config.maintenance
        assert (m.target_file_size, m.min_files, m.retention, m.grace) == (
            128 * 1024 * 1024,
            5,
            7 * 86400,
            86400,
        )


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ("64MiB", 64 * 1024 * 1024),
        ("512 KiB", None),
        ("1gb", 1000**3),
        (2 * 1024 * 1024, 2 * 1024 * 1024),
    ],
)
def test_target_file_size_takes_units_and_bytes(size, expected):
    if expected is None:  # below 1MB: compaction would write files as small as the drops
        with pytest.raises(TableConfigError, match="target_file_size must be at least 1MB"):
            parse_table_config({"maintenance": {"target_file_size": size}}, "t.yaml")
        return
    config = parse_table_config({"maintenance": {"target_file_size": size}}, "t.yaml")
    assert config.maintenance.target_file_size == expected


def test_retention_and_grace_take_durations_and_zero():
    m = parse_table_config(
        {"maintenance": {"retention": "36h", "grace": 0, "min_files": 2}}
    ).maintenance
    assert (m.retention, m.grace, m.min_files) == (36 * 3600, 0, 2)


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ({"target_file_size": "big"}, "t.yaml: maintenance.target_file_size must be a positive"),
        ({"min_files": 1}, "t.yaml: maintenance.min_files must be a whole number >= 2"),
        ({"retention": "a week"}, "t.yaml: maintenance.retention must be a duration"),
        ({"grace": -1}, "t.yaml: maintenance.grace must be a duration"),
        ({"schedule": "daily"}, "t.yaml: maintenance: unknown option(s) ['schedule']"),
        ("weekly", "t.yaml: maintenance: expected a mapping"),
    ],
)
def test_a_bad_section_is_refused_naming_the_option(section, words):
    with pytest.raises(TableConfigError) as raised:
        parse_table_config({"maintenance": section}, "t.yaml")
    assert str(raised.value).startswith(words), raised.value
