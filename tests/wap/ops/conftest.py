"""The one fixture of the behaviour suite: the seeded lake on each backend."""

from __future__ import annotations

import pytest

from tests.fixtures.backends import WORLDS, World

# `wap doctor` is checked on a local stack
from tests.fixtures.local_stack import make_stack, nessie_client, slack  # noqa: F401


@pytest.fixture(scope="module", params=sorted(WORLDS, reverse=True))  # local, then aws
def world(request, tmp_path_factory) -> World:
    """The same seeded lake (tests/fixtures/lake_seed.py) on the backend named by the parameter.

    Module-scoped: a module's tests share one lake per backend, in their order (pytest runs
    every test of one backend before the other's, and never holds both at once).
    """
    with WORLDS[request.param](tmp_path_factory.mktemp(f"world-{request.param}")) as seeded:
        yield seeded
