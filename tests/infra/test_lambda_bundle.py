"""Lambda bundles stay small: no pyarrow / pyspark anywhere under lambdas/."""

from __future__ import annotations

import json
import sys

import pytest

from tests.fixtures.paths import REPO
from tests.fixtures.processes import run_process

HANDLERS = ["trigger", "job_status", "publish", "finish", "sweeper", "maintenance"]


def test_no_heavy_imports_in_lambda_sources():
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "lambdas").rglob("*.py")
        for line in path.read_text().splitlines()
        if line.strip().startswith(("import ", "from "))
        and any(mod in line.split() for mod in ("pyarrow", "pyspark", "pandas"))
    ]
    assert offenders == []


@pytest.mark.parametrize("name", HANDLERS)
def test_handler_imports_without_heavy_modules(name):
    code = (
        f"import sys, json; import lambdas.{name}.handler; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pyarrow', 'pyspark', 'pandas', 'moto'))))"
    )
    out = run_process([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
