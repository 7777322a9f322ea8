"""cfn-lint on every synthesized template: no errors (warnings are CDK's own style)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(params=["default", "external_nessie", "non_default"])
def variant(request):
    name = f"synthesized_{request.param}" if request.param != "default" else "synthesized"
    return request.getfixturevalue(name)


def test_templates_have_no_cfn_lint_errors(variant):
    templates = sorted(variant.outdir.glob("*.template.json"))
    assert templates
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--format", "json", *map(str, templates)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.strip(), result.stderr
    errors = [m for m in json.loads(result.stdout) if m["Level"] == "Error"]
    assert errors == []
