"""The trigger's doctor check asks Nessie's /api/v2/config with its role's token: with
authentication on, Nessie answers nothing under /api without one (401)."""

from __future__ import annotations

import urllib.error

import pytest

from lambdas.trigger.doctor import nessie_config
from local.nessie.runner import start_server


def test_the_config_is_read_with_the_functions_token(tmp_path):
    server = start_server(str(tmp_path / "nessie.db"), secure=True)
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            nessie_config(server.api_v1)
        assert refused.value.code == 401
        assert nessie_config(server.api_v1, server.token("wap-trigger"))["defaultBranch"] == "main"
    finally:
        server.stop()
