"""Build Lambda and Spark job assets locally, without Docker.

Every build lands in a directory named after the hash of its inputs under
`build/`, written to a temporary sibling first and renamed into place, so
repeated and concurrent synths (pytest, `cdk synth`) reuse it safely.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from infra import constants

LAMBDA_PYTHON_VERSION = "3.12"
LAMBDA_PLATFORM = "manylinux2014_x86_64"
# Shipped by the Lambda Python runtime; bundling them again costs ~30 MB per function.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer")
# What the runtime puts on sys.path besides our code (used to import handlers like Lambda does).
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")
_SKIP_NAMES = {"__pycache__", ".pytest_cache", ".ruff_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


class BundlingError(RuntimeError):
    """A Lambda or job asset could not be built."""


def _source_files(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in _SKIP_NAMES or part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and not path.name.endswith(_SKIP_SUFFIXES):
            files.append(path)
    return files


def _digest(items: Iterable[tuple[str, bytes]]) -> str:
    sha = hashlib.sha256()
    for name, data in items:
        sha.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return sha.hexdigest()[:16]


def _publish(staging: Path, final: Path) -> Path:
    """Move a finished build into place; a concurrent identical build may have won."""
    try:
        staging.rename(final)
    except OSError:
        if not final.is_dir():
            raise
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _copy_tree(files: Iterable[Path], source_root: Path, target_root: Path) -> None:
    for path in files:
        target = target_root / path.relative_to(source_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


# Top-level packages beside `lambdas/` that every Lambda and the job bundle: the payload
# contracts, which import nothing else of ours (tests/test_import_rules.py).
SHARED_PACKAGES = ("contracts",)
# ... and what every Lambda bundles besides: the domain (ledger, lifecycle, layout,
# publishing), which imports only itself and the contracts. The job does not carry it.
LAMBDA_PACKAGES = (*SHARED_PACKAGES, "ingestion")


def bundled_packages(name: str) -> set[str]:
    """`name` alone: a Lambda's package imports only itself and the LAMBDA_PACKAGES
    (tests/test_import_rules.py keeps it so), so no other handler goes into its bundle."""
    return {name}


def shared_files(root: Path, packages: Sequence[str] = SHARED_PACKAGES) -> list[Path]:
    """The `packages`' sources under `root` (the repository), for a bundle and its hash."""
    files = []
    for package in packages:
        if not (root / package / "__init__.py").is_file():
            raise BundlingError(f"{root / package} is missing: every Lambda and the job need it")
        files += [path for path in _source_files(root / package) if path.suffix == ".py"]
    return files


def function_code(name: str, *, lambdas_dir: Path, build_dir: Path = constants.BUILD_DIR) -> Path:
    """Directory with `lambdas/__init__.py`, the package `name` (bundled_packages) and the
    LAMBDA_PACKAGES beside `lambdas/`."""
    package = lambdas_dir / name
    if not (package / "handler.py").is_file():
        raise BundlingError(f"{package / 'handler.py'} does not exist: no code for Lambda {name!r}")
    files = [lambdas_dir / "__init__.py"]
    for member in sorted(bundled_packages(name)):
        files += _source_files(lambdas_dir / member)
    files = [path for path in files if path.is_file()] + shared_files(
        lambdas_dir.parent, LAMBDA_PACKAGES
    )
    digest = _digest((str(p.relative_to(lambdas_dir.parent)), p.read_bytes()) for p in files)
    final = build_dir / "lambda" / "code" / f"{name}-{digest}"
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=final.parent))
    _copy_tree(files, lambdas_dir.parent, staging)
    return _publish(staging, final)


def dependency_layer(
    *, requirements: Path | Sequence[Path], build_dir: Path = constants.BUILD_DIR
) -> Path:
    """Layer directory (`python/...`) with the pinned Lambda requirements for Python 3.12 x86_64
    (several files: resolved together, so the packages agree).

    Built once per requirements files' content with `pip install --target`
    for the Lambda platform (wheels only, so no compiler and no Docker).
    """
    files = [requirements] if isinstance(requirements, Path) else list(requirements)
    flags = [
        "--platform",
        LAMBDA_PLATFORM,
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        LAMBDA_PYTHON_VERSION,
    ]
    digest = _digest(
        [
            *(("requirements", path.read_bytes()) for path in files),
            ("flags", " ".join(flags).encode()),
        ]
    )
    final = build_dir / "lambda" / f"deps-{digest}"
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".deps-", dir=final.parent))
    target = staging / "python"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--target",
        str(target),
        *(arg for path in files for arg in ("-r", str(path))),
        *flags,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise BundlingError(
            f"pip could not build the Lambda dependency layer from "
            f"{', '.join(map(str, files))} "
            f"(needs the package index once; later synths reuse {final.parent}):\n"
            f"{result.stderr.strip()[-2000:]}"
        )
    for name in (*RUNTIME_PROVIDED, "bin"):
        shutil.rmtree(target / name, ignore_errors=True)
    for dist_info in target.glob("*.dist-info"):
        if dist_info.name.split("-")[0].lower() in RUNTIME_PROVIDED:
            shutil.rmtree(dist_info)
    return _publish(staging, final)


def spark_job_package(*, spark_jobs_dir: Path, build_dir: Path = constants.BUILD_DIR) -> Path:
    """Directory deployed under `jobs/`: `wap_job.py` (entry point) + `spark_jobs.zip` (py-files).

    Built by the job's own packager (`spark_jobs.package.build`), cached by the
    hash of the job's sources and of the SHARED_PACKAGES it carries too.
    """
    import yaml

    from spark_jobs import package

    files = [p for p in _source_files(spark_jobs_dir) if p.suffix == ".py"]
    shared = shared_files(spark_jobs_dir.parent)
    yaml_files = [p for p in _source_files(Path(yaml.__file__).parent) if p.suffix == ".py"]
    digest = _digest(
        [
            ("layout", b"spark_jobs.package.build"),
            *((str(p.relative_to(spark_jobs_dir)), p.read_bytes()) for p in files),
            *((str(p.relative_to(spark_jobs_dir.parent)), p.read_bytes()) for p in shared),
            *((f"yaml/{p.name}", p.read_bytes()) for p in yaml_files),
        ]
    )
    final = build_dir / "spark" / f"job-{digest}"
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".job-", dir=final.parent))
    package.build(staging)
    return _publish(staging, final)


def iceberg_runtime_jar() -> Path:
    """The Iceberg Spark runtime jar of the installed wheel: the local runs' jar and EMR's.

    Raises BundlingError naming what to install when the wheel or its jar is missing,
    so a synth never falls back to some other Iceberg build.
    """
    install = (
        f"install {constants.ICEBERG_RUNTIME_WHEEL} (requirements.txt; "
        "`make setup` does): its jar is the Iceberg runtime the job runs with"
    )
    try:
        import snowpark_connect_deps_iceberg
    except ImportError as exc:
        raise BundlingError(f"the Iceberg runtime wheel is not installed: {install}") from exc
    wheel_dir = Path(snowpark_connect_deps_iceberg.__file__).parent
    jar = wheel_dir / "jars" / constants.ICEBERG_RUNTIME_JAR
    if not jar.is_file():
        raise BundlingError(f"{jar} is missing: {install}")
    return jar


def runtime_site(*, build_dir: Path = constants.BUILD_DIR) -> Path:
    """A directory standing in for the Lambda runtime's own packages (boto3 and its deps).

    Links to this interpreter's copies, so a handler can be imported with
    exactly code + layer + runtime on sys.path, as on Lambda.
    """
    import importlib.util

    site = build_dir / "lambda" / "runtime-site"
    site.mkdir(parents=True, exist_ok=True)
    for name in RUNTIME_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise BundlingError(f"{name} is not installed: it stands in for the Lambda runtime")
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        link = site / source.name
        if not link.exists():
            with contextlib.suppress(FileExistsError):
                os.symlink(source, link)
    return site


def tree_size(path: Path) -> int:
    """Bytes of all regular files below `path` (what Lambda counts as unpacked size)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def lambda_python() -> str:
    """An interpreter as close to the Lambda runtime as this machine has (3.12 if present).

    `WAP_LAMBDA_PYTHON` overrides; otherwise python3.12 on PATH or under pyenv,
    else the current interpreter (the layer's pure-Python packages import on 3.11 too).
    """
    import glob

    candidates = [
        os.environ.get("WAP_LAMBDA_PYTHON"),
        shutil.which("python3.12"),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12"))),
    ]
    for candidate in candidates:
        if not candidate:
            continue
        probe = subprocess.run(  # noqa: S603 (a Python found on this machine)
            [candidate, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 12)":
            return candidate
    return sys.executable
