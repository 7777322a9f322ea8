"""The local-mode home directory (default `.wap/`): one place for all state that outlives a run.

Layout::

    .wap/WAP_HOME          marker: this directory belongs to wap (`--fresh` only wipes marked ones)
    .wap/nessie.db         the Nessie server's SQLite repository
    .wap/warehouse/        the Iceberg warehouse (file://)
    .wap/state/ledger.sqlite  the ledger's items, written through at every change
    .wap/state/s3/<bucket>/<key>   source objects, audit reports, job logs
    .wap/samples/          the demo's parquet files
    .wap/lineage/<runId>.jsonl  the OpenLineage events of each ingest's run (`wap lineage`)
    .wap/lock              held while a command changes state
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOME = ".wap"
ENV_HOME = "WAP_HOME"
MARKER = "WAP_HOME"
LOGS = "logs"  # one log file per command (wap/runtime/command_log.py)
_OUR_NAMES = frozenset(
    {
        MARKER,
        "nessie.db",
        "nessie.db-wal",
        "nessie.db-shm",
        "nessie.db-journal",
        "warehouse",
        "state",
        "samples",
        "lineage",
        "lock",
        LOGS,
    }
)


class HomeError(RuntimeError):
    """The home directory cannot be used (not ours, locked, not writable)."""


@dataclass(frozen=True)
class WapHome:
    """Paths inside one home directory."""

    root: Path

    @classmethod
    def resolve(cls, path: str | os.PathLike[str] | None = None) -> WapHome:
        """`path`, else `$WAP_HOME`, else `.wap` in the current directory."""
        chosen = path or os.environ.get(ENV_HOME) or DEFAULT_HOME
        return cls(Path(chosen).expanduser().resolve())

    @property
    def nessie_db(self) -> Path:
        return self.root / "nessie.db"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def ledger_file(self) -> Path:
        """Where homes kept the ledger before `ledger_db` (imported from once)."""
        return self.state / "ledger.json"

    @property
    def ledger_db(self) -> Path:
        return self.state / "ledger.sqlite"

    @property
    def objects(self) -> Path:
        return self.state / "s3"

    @property
    def samples(self) -> Path:
        return self.root / "samples"

    @property
    def lineage(self) -> Path:
        """The local OpenLineage receiver's files, one per run (local/lineage_receiver.py)."""
        return self.root / "lineage"

    def exists(self) -> bool:
        return (self.root / MARKER).is_file()

    def check_not_a_file(self) -> None:
        """Refuse a home path that names something other than a directory: it is a mistake
        (`WAP_HOME` set to a file), not a home with no state yet."""
        if self.root.exists() and not self.root.is_dir():
            raise HomeError(f"{self.root} is not a directory: --home / {ENV_HOME} must name one")

    def create(self) -> WapHome:
        """Create the directory tree (idempotent); refuse a non-empty directory that is not ours."""
        if self.root.exists() and not self.exists():
            if not self.root.is_dir():
                raise HomeError(f"{self.root} is not a directory")
            if not self._only_our_files():
                raise HomeError(
                    f"{self.root} is not empty and is not a wap home "
                    f"(no {MARKER} file); choose another --home"
                )
        for path in (self.root, self.warehouse, self.state, self.objects, self.samples):
            path.mkdir(parents=True, exist_ok=True)
        (self.root / MARKER).write_text("local state of the wap CLI; delete to start over\n")
        return self

    def wipe(self) -> None:
        """Delete everything in the home but its command logs (only when it carries our
        marker): the running command may be writing its own log there."""
        if not self.root.exists():
            return
        if not self.exists() and not self._only_our_files():
            raise HomeError(
                f"refusing to delete {self.root}: it is not a wap home (no {MARKER} file)"
            )
        if not (self.root / LOGS).is_dir():
            shutil.rmtree(self.root)
            return
        for path in self.root.iterdir():
            if path.name == LOGS:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()

    def _only_our_files(self) -> bool:
        # `make nessie` serves .wap/nessie.db before any wap command ran: still ours.
        return self.root.is_dir() and all(p.name in _OUR_NAMES for p in self.root.iterdir())

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock: one state-changing command per home at a time."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "lock", "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise HomeError(
                    f"another wap command is using {self.root}; wait for it to finish"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
