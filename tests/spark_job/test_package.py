"""The --py-files bundle for EMR Serverless: this package + pure-Python PyYAML only."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from spark_jobs.package import build

ROOT = Path(__file__).resolve().parents[2]


def test_bundle_holds_the_job_and_pure_python_yaml(tmp_path):
    entry, archive = build(tmp_path / "job")

    names = zipfile.ZipFile(archive).namelist()
    assert entry.read_text() == (ROOT / "spark_jobs" / "wap_job.py").read_text()
    assert "spark_jobs/wap_job.py" in names and "spark_jobs/audit.py" in names
    assert "yaml/__init__.py" in names
    assert not [n for n in names if n.endswith((".so", ".pyc", ".pyd"))]


def test_bundle_alone_parses_a_table_config(tmp_path):
    _, archive = build(tmp_path / "job")
    # -S -I: no site-packages, so yaml and spark_jobs can only come from the zip.
    code = (f"import sys; sys.path.insert(0, {str(archive)!r}); import yaml; "
            "from spark_jobs.table_config import parse_table_config; "
            f"c = parse_table_config(open({str(ROOT / 'tables' / 'sales.orders.yaml')!r}).read()); "
            "print(yaml.__file__, len(c.checks))")
    out = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True,
                         text=True, check=True, cwd=tmp_path).stdout.split()
    assert out[0].startswith(str(archive)) and int(out[1]) > 0
