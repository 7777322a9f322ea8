"""The flows run on a local stack (tests/fixtures/local_stack.py)."""

from tests.fixtures.lineage import receiver, waits  # noqa: F401
from tests.fixtures.local_stack import make_stack, nessie_client, slack  # noqa: F401
