"""A ledger on moto's DynamoDB for the sweeper's functions."""

from __future__ import annotations

import pytest

from tests.fixtures.moto_ledger import moto_ledger


@pytest.fixture
def ledger(monkeypatch):
    yield from moto_ledger(monkeypatch)
