"""The --py-files bundle for EMR Serverless: this package + pure-Python PyYAML only."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile

from contracts.job_args import JobArgs
from spark_jobs.package import build
from tests.fixtures.paths import REPO


def test_bundle_holds_the_job_and_pure_python_yaml(tmp_path):
    entry, archive = build(tmp_path / "job")

    names = zipfile.ZipFile(archive).namelist()
    assert entry.read_text() == (REPO / "spark_jobs" / "wap_job.py").read_text()
    assert "spark_jobs/wap_job.py" in names and "spark_jobs/audit.py" in names
    assert "yaml/__init__.py" in names
    assert not [n for n in names if n.endswith((".so", ".pyc", ".pyd"))]


def test_the_job_uses_nothing_python_3_9_lacks():
    """EMR Serverless runs the job on Python 3.9: its syntax, and no zip(strict=...),
    which parses there but raises TypeError when it runs."""
    for path in (REPO / "spark_jobs").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path), feature_version=(3, 9))
        strict = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "zip"
            and any(keyword.arg == "strict" for keyword in node.keywords)
        ]
        assert strict == [], (path, strict)


def test_bundle_alone_parses_a_table_config(tmp_path):
    _, archive = build(tmp_path / "job")
    # -S -I: no site-packages, so yaml and spark_jobs can only come from the zip.
    code = (
        f"import sys; sys.path.insert(0, {str(archive)!r}); import yaml; "
        "from contracts.table_config import parse_table_config_text; "
        f"c = parse_table_config_text(open({str(REPO / 'tables' / 'sales.orders.yaml')!r})"
        ".read(), yaml=yaml); "
        "print(yaml.__file__, len(c.checks))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-I", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert out[0].startswith(str(archive)) and int(out[1]) > 0


# ---- the local EMR double runs the archive the deploy uploads ------------------------------

ARGV = JobArgs(
    sources=["file:///in.parquet"],
    table="sales.orders",
    branch="wap_sales_orders_20261122T101500_01234567",
    ingest_id="0123456789abcdef",
    report_uri="file:///out/report.json",
).to_args()


def test_local_emr_double_imports_the_job_from_the_deploys_archive():
    import spark_jobs.wap_job as repository_job
    from infra import bundling
    from local.aws.emr_serverless import spark_job

    job = spark_job(None)
    deployed = bundling.spark_job_package(spark_jobs_dir=REPO / "spark_jobs")
    assert job.archive == deployed / "spark_jobs.zip"
    for function in (job.module.run_ingest, job.module.parse_args):
        assert function.__code__.co_filename.startswith(f"{job.archive}/spark_jobs/")
    # Everyone else's `spark_jobs` is still the repository's.
    assert sys.modules["spark_jobs.wap_job"] is repository_job
    assert repository_job.__file__ == str(REPO / "spark_jobs" / "wap_job.py")


def test_local_emr_double_executes_the_archives_code_not_the_repositorys(tmp_path):
    from local.aws.emr_serverless import spark_job

    original = spark_job(None).archive
    marked = tmp_path / "spark_jobs.zip"
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(marked, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "spark_jobs/wap_job.py":
                data += (
                    b"\n\ndef run_ingest(spark, args):\n"
                    b"    return {'ran': __file__, 'table': args.table, 'spark': spark}\n"
                )
            target.writestr(item, data)
    session = object()

    result = spark_job(session, archive=marked)(ARGV)

    assert result == {
        "ran": f"{marked}/spark_jobs/wap_job.py",
        "table": "sales.orders",
        "spark": session,
    }
