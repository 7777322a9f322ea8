"""The scheduled maintenance run is tested on a local stack (tests/fixtures/local_stack.py)."""

from tests.fixtures.local_stack import make_stack, slack  # noqa: F401
