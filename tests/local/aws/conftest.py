"""The stand-ins are checked on a local stack (tests/fixtures/local_stack.py)."""

from tests.fixtures.local_stack import make_stack, nessie_client, slack  # noqa: F401
