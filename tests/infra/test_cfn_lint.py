"""cfn-lint on every synthesized template: no errors (warnings are CDK's own style)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_templates_have_no_cfn_lint_errors(
    synthesized, synthesized_external_nessie, synthesized_non_default
):
    # One cfn-lint process for every variant: loading its schemas is most of its time.
    variants = (synthesized, synthesized_external_nessie, synthesized_non_default)
    templates = [sorted(variant.outdir.glob("*.template.json")) for variant in variants]
    assert all(templates)
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("cfn-lint")),
            "--format",
            "json",
            *(str(path) for paths in templates for path in paths),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stdout.strip(), result.stderr
    errors = [m for m in json.loads(result.stdout) if m["Level"] == "Error"]
    assert errors == []
