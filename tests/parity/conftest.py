"""The parity tests reuse the orchestration fixtures (local stack, Nessie, Slack stand-in)."""

from tests.orchestration.conftest import make_stack, nessie_client, slack  # noqa: F401
