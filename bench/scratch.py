"""A scratch directory for a benchmark's own local stack."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def scratch_with_tables(prefix: str, configs: dict[str, str]) -> Iterator[Path]:
    """A fresh directory whose `tables/` holds `configs` (table -> YAML text), named by
    WAP_TABLES_DIR meanwhile; afterwards the variable is restored and the directory gone."""
    from wap.runtime.embedded_stack import ENV_TABLES_DIR

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    tables = scratch / "tables"
    tables.mkdir()
    for table, text in configs.items():
        (tables / f"{table}.yaml").write_text(text)
    previous = os.environ.get(ENV_TABLES_DIR)
    os.environ[ENV_TABLES_DIR] = str(tables)
    try:
        yield scratch
    finally:
        if previous is None:
            os.environ.pop(ENV_TABLES_DIR, None)
        else:
            os.environ[ENV_TABLES_DIR] = previous
        shutil.rmtree(scratch, ignore_errors=True)
