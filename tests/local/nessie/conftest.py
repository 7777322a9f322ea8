"""The Nessie server's tests talk to it over HTTP (tests/fixtures/nessie_api.py).

They test Nessie's API (assigning and deleting any reference, committing anywhere), which
no role of the service's rules may do: their server authenticates every call and
authorizes it by one rule that allows everything (`API_RULES`), as Nessie's own API tests
run with an allow-all rule. The service's rules are tested in test_authorization*.py.
"""

import pytest

from tests.fixtures.nessie_api import api, openapi_spec, validate  # noqa: F401

API_RULES = {"everything": "true"}


@pytest.fixture(scope="module")
def nessie(tmp_path_factory):
    """A server whose rules allow every authenticated caller everything."""
    from local.nessie.runner import start_server

    server = start_server(str(tmp_path_factory.mktemp("nessie") / "nessie.db"), rules=API_RULES)
    yield server
    server.stop()
