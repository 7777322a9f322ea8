"""The handlers named in the template import from the built assets, as on Lambda.

Each import runs in a fresh isolated interpreter whose sys.path is exactly the
function's code asset, its layer asset and the runtime's own packages (boto3 & co.),
so a module missing from the bundle fails here rather than in AWS.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra import bundling, constants
from tests.fixtures.processes import run_process

# As on Lambda: no environment, no site-packages, no .pyc written; then `-c CODE`.
ISOLATED = ("-I", "-S", "-B", "-c")

IMPORT_HANDLER = r"""
import importlib, json, sys
paths, handler = json.loads(sys.argv[1])
sys.path[:0] = paths
module_name, attribute = handler.rsplit(".", 1)
module = importlib.import_module(module_name)
function = getattr(module, attribute)
print(json.dumps({"file": module.__file__, "callable": callable(function),
                  "heavy": sorted(set(sys.modules) & {"pyarrow", "pyspark", "pandas"})}))
"""


def _asset_dirs(synth) -> dict[str, Path]:
    """S3 object key -> staged asset directory in the cloud assembly."""
    manifest = json.loads(next(synth.outdir.glob(f"{synth.artifact_id}.assets.json")).read_text())
    found = {}
    for entry in manifest["files"].values():
        for destination in entry["destinations"].values():
            found[destination["objectKey"]] = synth.outdir / entry["source"]["path"]
    return found


def _fake(value: Any) -> str:
    """An environment value with CloudFormation tokens replaced by plausible text."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        return "".join(_fake(part) for part in value["Fn::Join"][1])
    return "token"


def _our_functions(synth) -> list[dict[str, Any]]:
    return [
        f["Properties"]
        for f in synth.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].startswith("lambdas.")
    ]


def _layer_dirs(synth, function: dict[str, Any], assets: dict[str, Path]) -> list[Path]:
    layers = synth.of_type("AWS::Lambda::LayerVersion")
    return [
        assets[layers[ref["Ref"]]["Properties"]["Content"]["S3Key"]] / "python"
        for ref in function.get("Layers", [])
    ]


@pytest.fixture(scope="module")
def python() -> str:
    return bundling.lambda_python()


def test_every_handler_imports_from_its_bundle(synthesized, python, tmp_path):
    assets = _asset_dirs(synthesized)
    runtime = bundling.runtime_site()
    functions = _our_functions(synthesized)
    assert len(functions) == len(constants.FUNCTIONS)
    for function in functions:
        code = assets[function["Code"]["S3Key"]]
        paths = [str(code), *map(str, _layer_dirs(synthesized, function, assets)), str(runtime)]
        env = {name: _fake(value) for name, value in function["Environment"]["Variables"].items()}
        env |= {
            "AWS_DEFAULT_REGION": "eu-west-1",
            "AWS_REGION": "eu-west-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "PATH": "/usr/bin:/bin",
        }
        result = run_process(
            [python, *ISOLATED, IMPORT_HANDLER, json.dumps([paths, function["Handler"]])],
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert result.returncode == 0, f"{function['Handler']}:\n{result.stderr[-3000:]}"
        report = json.loads(result.stdout.strip().splitlines()[-1])
        assert report["callable"], function["Handler"]
        assert Path(report["file"]).is_relative_to(code)
        assert report["heavy"] == []


def test_code_assets_carry_every_lambdas_package_their_sources_name(synthesized):
    """Every `lambdas.<package>` a bundled source names is in the bundle, and nothing else."""
    assets = _asset_dirs(synthesized)
    for function in _our_functions(synthesized):
        code = assets[function["Code"]["S3Key"]]
        package = function["Handler"].split(".")[1]
        bundled = {p.name for p in (code / "lambdas").iterdir() if p.is_dir()}
        referenced = {
            m
            for path in code.rglob("*.py")
            for m in re.findall(r"\blambdas\.(\w+)", path.read_text())
        }
        assert {package} | referenced <= bundled, package
        # ... and nothing else: the other handlers stay out.
        assert bundled == {package} | referenced, package


def test_bundles_leave_out_spark_arrow_and_runtime_sdk(synthesized):
    assets = _asset_dirs(synthesized)
    for function in _our_functions(synthesized):
        (layer,) = _layer_dirs(synthesized, function, assets)
        names = {p.name for p in layer.iterdir()}
        assert {"pynessie", "slack_sdk", "aws_lambda_powertools"} <= names
        assert not names & {"pyarrow", "pyspark", "pandas", "boto3", "botocore"}
        # pyiceberg (about 50 MB with zstandard) only where Iceberg metadata is read.
        package = function["Handler"].split(".")[1]
        assert ("pyiceberg" in names) == (package == "maintenance"), package


def _job_package(synth) -> Path:
    """The staged directory the one deployment to `jobs/` uploads (the job's package)."""
    (deployment,) = [
        r["Properties"]
        for r in synth.resources.values()
        if r["Type"] == "Custom::CDKBucketDeployment"
        and r["Properties"].get("DestinationBucketKeyPrefix") == "jobs/"
    ]
    (key,) = deployment["SourceObjectKeys"]
    return _asset_dirs(synth)[key]


def test_job_package_holds_the_entry_point_and_an_importable_zip(synthesized, python, tmp_path):
    package = _job_package(synthesized)
    _, trigger = next(
        (f["Handler"], f)
        for f in _our_functions(synthesized)
        if f["Handler"].startswith("lambdas.trigger.")
    )
    variables = trigger["Environment"]["Variables"]
    entry = _fake(variables["WAP_JOB_ENTRYPOINT"]).removeprefix("s3://token/jobs/")
    py_files = _fake(variables["WAP_JOB_PY_FILES"]).removeprefix("s3://token/jobs/")
    assert (package / entry).is_file()
    assert (package / py_files).is_file()
    # spark-submit puts the zip on sys.path: the job's package and PyYAML import from it alone.
    result = run_process(
        [
            python,
            *ISOLATED,
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "import yaml, contracts.table_config, spark_jobs.errors; print(yaml.__file__)",
            str(package / py_files),
        ],
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert py_files in result.stdout


def test_local_emr_double_runs_the_job_archive_the_deploy_uploads(synthesized):
    from local.aws.emr_serverless import spark_job

    uploaded = _job_package(synthesized) / "spark_jobs.zip"
    assert spark_job(None).archive.read_bytes() == uploaded.read_bytes()


SWEEPER_ZONE_OFFSET = r"""
import json, sys, zoneinfo
from datetime import datetime
sys.path[:0] = json.loads(sys.argv[1])
zoneinfo.reset_tzpath([])  # no system zone database: the function's bundle must carry it
from contracts.arrivals import load_zone
print(load_zone("Europe/Berlin").utcoffset(datetime(2026, 7, 1)).total_seconds())
"""


def test_the_sweeper_resolves_iana_zones_from_its_bundle_alone(synthesized, python, tmp_path):
    """Expected arrivals (`expect: {timezone: Europe/Berlin}`) need IANA zone data, which
    the Lambda runtime's minimal image is not guaranteed to have (local/aws/lambda_sandbox.py
    says why): the sweeper's layer carries the `tzdata` package."""
    assets = _asset_dirs(synthesized)
    (sweeper,) = [
        f for f in _our_functions(synthesized) if f["Handler"].startswith("lambdas.sweeper.")
    ]
    code = assets[sweeper["Code"]["S3Key"]]
    paths = [str(code), *map(str, _layer_dirs(synthesized, sweeper, assets))]
    paths.append(str(bundling.runtime_site()))
    result = run_process(
        [python, *ISOLATED, SWEEPER_ZONE_OFFSET, json.dumps(paths)], cwd=tmp_path, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert float(result.stdout.strip()) == 7200.0  # CEST, not UTC's 0
