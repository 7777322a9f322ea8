"""Helpers of the CLI tests: run `wap` in-process, read a home's ledger, look at its Nessie."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pynessie

# Re-exported: the CLI tests import them from here.
from tests.fixtures.wap_cli import assert_one_line_error, run_wap  # noqa: F401

_catalogs = itertools.count()


def default_sigint() -> None:
    """`preexec_fn` for a command a test stops with Ctrl-C (SIGINT): a suite started in the
    background (`cmd &` in a script) passes SIGINT on ignored, and Python then never raises
    KeyboardInterrupt, so the command would not stop."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ledger_items(home: Path) -> dict[str, dict[str, Any]]:
    """The persisted ingest records of a home, by ingest id."""
    from wap.runtime.home import WapHome
    from wap.runtime.state_store import read_ledger_items

    return {i["ingest_id"]: i for i in read_ledger_items(WapHome(home))
            if i.get("kind") == "ingest"}


@contextmanager
def nessie_on(home: Path) -> Iterator[tuple[Any, Any]]:
    """Our Nessie server over the home's SQLite file (no wap command may run meanwhile)."""
    from local.nessie.runner import start_server

    server = start_server(str(home / "nessie.db"))
    try:
        client = pynessie.init(
            config_dict={
                "endpoint": server.api_v1,
                "verify": True,
                "auth": {"type": "none", "timeout": 10},
            }
        )
        yield server, client
    finally:
        server.stop()


def refs(home: Path) -> dict[str, str]:
    """Name -> hash of every Nessie reference of a home."""
    with nessie_on(home) as (_, client):
        return {r.name: r.hash_ for r in client.list_references().references}


def count_rows(spark: Any, home: Path, table: str, ref: str = "main") -> int:
    """Rows of `table` on `ref`, read by Spark's own Iceberg NessieCatalog (not pyiceberg)."""
    from local.spark import lake_catalog_conf

    name = f"cli_check_{next(_catalogs)}"
    with nessie_on(home) as (server, _):
        for key, value in lake_catalog_conf(
            server.api_v2, (home / "warehouse").as_uri(), catalog=name, ref=ref
        ).items():
            spark.conf.set(key, value)
        return spark.sql(f"SELECT count(*) FROM {name}.{table}").collect()[0][0]
