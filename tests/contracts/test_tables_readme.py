"""tables/README.md's examples are configs the Lambdas and the job take."""

from __future__ import annotations

import re

import pytest
import yaml

from contracts.table_config import parse_table_config_text
from tests.fixtures.paths import REPO

README = REPO / "tables" / "README.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_its_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("text", BLOCKS, ids=[f"block-{i}" for i in range(len(BLOCKS))])
def test_every_yaml_example_of_the_readme_parses(text):
    parse_table_config_text(text, str(README), yaml=yaml)


def test_the_complete_csv_example_declares_the_columns_its_checks_use():
    [config] = [
        parse_table_config_text(text, str(README), yaml=yaml)
        for text in BLOCKS
        if text.startswith("format: csv\ncsv: {")
    ]
    columns = {column.name for column in config.columns}
    assert config.format == "csv" and columns
    assert {c for check in config.checks for c in check.columns} <= columns
