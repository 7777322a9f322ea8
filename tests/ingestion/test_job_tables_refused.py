"""Tables only the audit job writes (contracts/job_tables.py): an upload into a table's
quarantine or metric history is refused whatever the deploy allows, and neither is offered
as a known table when an upload names an unknown one."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from contracts.dataset_config import parse_dataset_config
from contracts.table_config import TableConfigError
from ingestion.batching import Intake, unknown_table_reason
from tests.fixtures.moto_ledger import SETTINGS


class _Main:
    """A Nessie whose main holds `tables` (the calls unknown_table_reason makes)."""

    def __init__(self, *tables: str) -> None:
        self.tables = list(tables)

    def metadata_location(self, branch: str, table: str) -> str | None:
        return "s3://lake/meta.json" if table in self.tables else None

    def iceberg_tables(self, branch: str) -> list[str]:
        return self.tables


@pytest.mark.parametrize("create", [False, True])
def test_an_upload_into_a_quarantine_table_is_refused_even_when_uploads_create_tables(create):
    settings = dataclasses.replace(SETTINGS, create_tables_from_uploads=create)
    main = _Main("lab.q", "lab.q__quarantine")

    reason = unknown_table_reason(settings, main, "lab.q__quarantine", Intake(configured=True))

    assert reason is not None
    assert "lab.q__quarantine is the quarantine table of lab.q" in reason
    assert "only its audits write it" in reason


def test_the_known_tables_offered_are_data_tables_only():
    main = _Main("lab.q", "lab.q__quarantine", "lab.q__audit_metrics")

    listed = unknown_table_reason(SETTINGS, main, "other.thing", Intake())
    close = unknown_table_reason(SETTINGS, main, "lab.q__quarantin", Intake())

    assert listed is not None and "known tables: lab.q." in listed
    assert close is not None and "did you mean" not in close and "known tables: lab.q." in close


@pytest.mark.parametrize("table", ["sales.orders__quarantine", "sales.orders__audit_metrics"])
def test_a_dataset_naming_a_job_written_table_is_refused(table):
    text = f"tables: [sales.orders, {table}]"
    with pytest.raises(TableConfigError, match=f"{table} is the .* of sales.orders"):
        parse_dataset_config(yaml.safe_load(text), "orders_with_side")
