"""Lambda asset sizes and cold import times of the handler modules.

`python -m bench lambda_sizes` (or `python -m bench.lambda_sizes`). Builds the
same assets `cdk synth` deploys (code per function + the dependency layer),
then imports each handler module in a fresh isolated interpreter whose sys.path
is code + layer + the runtime's boto3, as on Lambda. Median of 5 per module;
the baseline, measured the same way in the same run, is importing boto3 alone
(what every Python Lambda pays anyway). Targets: <= 20 MB and <= 700 ms (trigger).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path

from infra import bundling
from infra.constants import FUNCTIONS, SourceTree

RUNS = 5
SIZE_TARGET_MB = 20.0
IMPORT_TARGET_MS = 700.0

_TIMED_IMPORT = r"""
import importlib, json, sys, time
paths, module = json.loads(sys.argv[1])
sys.path[:0] = paths
started = time.perf_counter()
importlib.import_module(module)
elapsed = time.perf_counter() - started
print(json.dumps({"seconds": elapsed,
                  "heavy": sorted(set(sys.modules) & {"pyarrow", "pyspark", "pandas"})}))
"""

# What the Lambda config reads at import time; values only need to be well-formed.
_ENV = {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "PATH": "/usr/bin:/bin",
    "WAP_LEDGER_TABLE": "ledger",
    "WAP_NESSIE_URI": "http://nessie:19120/api/v1",
    "WAP_NESSIE_UI_URL": "http://nessie:19120",
    "WAP_EMR_APPLICATION_ID": "00abc",
    "WAP_EMR_EXECUTION_ROLE_ARN": "arn:aws:iam::123456789012:role/job",
    "WAP_JOB_ENTRYPOINT": "s3://artifacts/jobs/spark_jobs/wap_job.py",
    "WAP_REPORTS_PREFIX": "s3://artifacts/reports/",
    "WAP_LOGS_PREFIX": "s3://artifacts/emr-logs/",
    "WAP_STATE_MACHINE_ARN": "arn:aws:states:eu-west-1:123456789012:stateMachine:ingest",
    "WAP_SLACK_CHANNEL": "#data-alerts",
}


def _timed_import(python: str, paths: list[Path], module: str) -> tuple[float, list[str]]:
    result = subprocess.run(
        [
            python,
            "-I",
            "-S",
            "-B",
            "-c",
            _TIMED_IMPORT,
            json.dumps([list(map(str, paths)), module]),
        ],
        capture_output=True,
        text=True,
        env=_ENV,
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"importing {module} failed:\n{result.stderr[-2000:]}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return report["seconds"], report["heavy"]


def _median_ms(python: str, paths: list[Path], module: str) -> tuple[float, list[str]]:
    samples, heavy = [], []
    for _ in range(RUNS):
        seconds, heavy = _timed_import(python, paths, module)
        samples.append(seconds)
    return statistics.median(samples) * 1000, heavy


def _process_ms(python: str) -> float:
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run([python, "-I", "-S", "-c", "pass"], check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main(argv: list[str] | None = None) -> int:
    """Print size and cold-import figures per Lambda; return 1 if the trigger misses a target.
    Takes every benchmark's --quick and --no-doc (`python -m bench` passes them): it is
    quick already and writes no doc section."""
    from bench.cli import BenchParser

    BenchParser("bench.lambda_sizes", "the same run (it is quick already)").parse_args(
        [] if argv is None else argv
    )
    tree = SourceTree()
    python = bundling.lambda_python()
    shared = bundling.dependency_layer(requirements=tree.lambda_requirements) / "python"
    iceberg = (
        bundling.dependency_layer(
            requirements=[tree.lambda_requirements, tree.iceberg_lambda_requirements]
        )
        / "python"
    )
    runtime = bundling.runtime_site()
    layer_mb = bundling.tree_size(shared) / 1e6
    baseline_ms, _ = _median_ms(python, [runtime], "boto3")
    print(
        f"interpreter: {python}  (median of {RUNS} fresh processes per figure; -B: no .pyc "
        "is written, and the layer ships none, so every import compiles: the cold worst case)"
    )
    print(
        f"baseline: import boto3 = {baseline_ms:.0f} ms; bare interpreter start = "
        f"{_process_ms(python):.0f} ms; dependency layer = {layer_mb:.1f} MB"
    )
    print(f"{'lambda':<11} {'code MB':>8} {'total MB':>9} {'import ms':>10} {'x boto3':>8}  heavy")
    trigger_ok = True
    for spec in FUNCTIONS:
        code = bundling.function_code(spec.name, lambdas_dir=tree.lambdas_dir)
        code_mb = bundling.tree_size(code) / 1e6
        layer = iceberg if spec.reads_iceberg else shared  # the maintenance Lambda's own
        total_mb = code_mb + bundling.tree_size(layer) / 1e6
        module = spec.handler.rsplit(".", 1)[0]
        import_ms, heavy = _median_ms(python, [code, layer, runtime], module)
        print(
            f"{spec.name:<11} {code_mb:>8.2f} {total_mb:>9.1f} {import_ms:>10.0f} "
            f"{import_ms / baseline_ms:>8.2f}  {','.join(heavy) or '-'}"
        )
        if spec.name == "trigger":
            trigger_ok = total_mb <= SIZE_TARGET_MB and import_ms <= IMPORT_TARGET_MS and not heavy
    verdict = "meets" if trigger_ok else "MISSES"
    print(
        f"trigger {verdict} the targets (<= {SIZE_TARGET_MB:.0f} MB unpacked, "
        f"<= {IMPORT_TARGET_MS:.0f} ms cold import, no pyarrow/pyspark)"
    )
    return 0 if trigger_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
