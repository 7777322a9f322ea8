"""The Nessie server's tests talk to it over HTTP (tests/fixtures/nessie_api.py)."""

from tests.fixtures.nessie_api import api, openapi_spec, validate  # noqa: F401
