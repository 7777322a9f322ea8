"""Build what EMR Serverless needs to run the job: `python -m spark_jobs.package build/job`.

Writes `<out>/wap_job.py` (the spark-submit entry point) and `<out>/spark_jobs.zip`
(this package, the payload contracts it builds its report with, and PyYAML's
pure-Python modules) for `--py-files`. PySpark comes with
EMR; nothing else is needed, so the zip carries no compiled code and fits any
EMR Python (3.9+).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# Stdlib-only packages of the repository the job imports besides its own.
SHARED_DIRS = (PACKAGE_DIR.parent / "contracts",)
ZIP_NAME = "spark_jobs.zip"
ENTRY_POINT = "wap_job.py"
# PyYAML falls back to its pure-Python parser when the C extension (_yaml) is absent.
SKIP_SUFFIXES = (".pyc", ".so", ".pyd", ".md")


def _python_files(root: Path, arcroot: str):
    for path in sorted(root.rglob("*")):
        if (
            path.is_file()
            and "__pycache__" not in path.parts
            and not path.name.endswith(SKIP_SUFFIXES)
        ):
            yield path, f"{arcroot}/{path.relative_to(root).as_posix()}"


def build(out_dir: str | Path) -> tuple[Path, Path]:
    """Write the entry point and the --py-files zip into `out_dir`; return both paths."""
    import yaml

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    archive = out / ZIP_NAME
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path, name in _python_files(PACKAGE_DIR, "spark_jobs"):
            bundle.write(path, name)
        for shared in SHARED_DIRS:
            for path, name in _python_files(shared, shared.name):
                bundle.write(path, name)
        for path, name in _python_files(Path(yaml.__file__).parent, "yaml"):
            bundle.write(path, name)
    entry = out / ENTRY_POINT
    shutil.copyfile(PACKAGE_DIR / ENTRY_POINT, entry)
    return entry, archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spark_jobs.package", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out_dir", nargs="?", default="build/job")
    args = parser.parse_args(argv)
    entry, archive = build(args.out_dir)
    print(f"entry point: {entry}\npy-files:    {archive} ({archive.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
