"""An in-process double of Nessie's history for garbage collection (ingestion/maintenance/gc.py),
for the gc benchmark and gc's tests: every reference a chain of commits, one a minute before
`NOW`, each commit holding the same views (a view's metadata JSON is all the mark reads of
it: no Iceberg reads), each view's metadata file its own per commit."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

NOW = datetime(2030, 1, 1, tzinfo=UTC)


class ViewHistory:
    """`refs` references (`main`, `b1`, ...) of `commits` commits each over `views`; counts
    the commits whose contents were read (`reads`, also the budget's `clock`)."""

    def __init__(
        self,
        root: Path,
        refs: int,
        commits: int,
        views: tuple[str, ...] = ("ns.v",),
        write_files: bool = False,
    ) -> None:
        self.root, self.views, self.reads = root, views, 0
        self.logs = {
            ("main" if r == 0 else f"b{r}"): [f"{r:04d}{c:060d}" for c in range(commits)]
            for r in range(refs)
        }
        if write_files:
            for log in self.logs.values():
                for commit in log:
                    for view in views:
                        self.write(self.location(commit, view))

    @staticmethod
    def write(path: str) -> None:
        """An (empty) view metadata file at `path`."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write("{}")

    def location(self, commit: str, view: str = "ns.v") -> str:
        return str(self.root.joinpath(*view.split("."), "metadata", f"{commit}.json"))

    def references(self):
        return [SimpleNamespace(name=name, hash=log[0]) for name, log in self.logs.items()]

    def commit_log(self, ref: str, head: str):
        log = self.logs[ref]
        for age, commit in enumerate(log[log.index(head) :]):
            yield SimpleNamespace(
                hash=commit, commit_time=(NOW - timedelta(minutes=age)).isoformat()
            )

    def contents_at(self, ref: str, commit: str):
        self.reads += 1
        return [
            SimpleNamespace(
                key=view,
                type="ICEBERG_VIEW",
                metadata_location=f"file://{self.location(commit, view)}",
                snapshot_id=None,
            )
            for view in self.views
        ]

    def clock(self) -> float:
        """The catalog's work as a clock: one tick a commit read."""
        return float(self.reads)
