"""Garbage collection across Nessie references: mark every file a live reference reaches,
then sweep the warehouse's unmarked files older than a grace period.

Iceberg's own `expire_snapshots` and `remove_orphan_files` see one reference's history,
so under Nessie they would delete files that other branches still read. This is Nessie
GC's model instead:

- **Live** is the content of every reference's head (every branch and tag, whatever its
  age) and of every commit that was a head within the retention window (a commit stops
  being live when the commit after it is older than the window), per table: what a
  reader could have seen during the window stays readable.
- **Mark**: for each live (commit, table), the table's metadata JSON, its statistics
  files, and of the snapshot Nessie holds for it the manifest list, its manifests and the
  data and delete files those manifests list as present (not the entries they record as
  deleted: an older snapshot that still reads such a file is marked by its own commit).
  Older snapshots inside one metadata JSON are not marked: under Nessie, each commit's
  snapshot is the table's state at that commit, and history ends with the window.
- **Sweep**: a warehouse file that is unmarked and was last modified before both the
  start of the mark and `now - grace` is garbage. After listing the warehouse, the
  references are listed again and whatever a new or moved reference reaches is marked
  too, so a branch created meanwhile (even at an old commit) keeps its files; files
  written since the mark began (a running ingest's) are never candidates.
- History whose metadata an earlier run (with a shorter retention) already collected is
  skipped and reported; a head whose metadata is missing stops the run.
- Nothing is deleted unless `delete=True`; the report says what would be reclaimed.
- With a time budget, a mark that outlasts it stops between two commits and sweeps
  nothing; its report's checkpoint lets the next run continue the mark (heads, commits
  and contents done, files marked) instead of starting over. A checkpoint only keeps
  files: a reference that moved is walked again from its new head, and the sweep's
  cut-off is the first run's start.

The catalog is the project's Nessie client (`ingestion.nessie.NessieClient`:
`references`, `commit_log`, `contents_at`); the warehouse is a `Warehouse` (a local
directory or an S3 prefix). A metadata file or manifest that cannot be read stops the
run before anything is deleted: marking must be complete for sweeping to be safe.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from contracts.table_config import MaintenanceOptions

DEFAULT_RETENTION = timedelta(days=7)
DEFAULT_GRACE = timedelta(days=1)
MAIN = "main"
_S3_SCHEMES = ("s3", "s3a", "s3n")


class GcError(RuntimeError):
    """Marking could not complete (an unreadable metadata file or manifest): nothing swept."""


CHECKPOINT_VERSION = 1


@dataclass(frozen=True)
class Budget:
    """Until when a run may mark: `clock()` (seconds, e.g. `time.monotonic`) reaching
    `until` ends the run early, between commits, with a checkpoint (`GcReport.checkpoint`)."""

    clock: Callable[[], float]
    until: float

    def spent(self) -> bool:
        return self.clock() >= self.until


class _OutOfTime(Exception):
    """The budget ran out between two commits of the mark."""


def normalize(path: str) -> str:
    """One spelling per file: `file:/x`, `file:///x` and `/x` are `/x`; `s3a://b/k` and
    `s3n://b/k` are `s3://b/k` (Iceberg records paths as the writer's FileIO spelled them)."""
    parts = urlsplit(path)
    if parts.scheme in _S3_SCHEMES:
        return f"s3://{parts.netloc}{parts.path}"
    if parts.scheme in ("file", ""):
        return os.path.normpath(unquote(parts.path) if parts.scheme else path)
    return path


@dataclass(frozen=True)
class StoredFile:
    """A file of the warehouse as listed: normalized path, size and last modification."""

    path: str
    size: int
    modified: datetime


class Warehouse(ABC):
    """Where the tables' files live: listed and (only when asked) deleted."""

    root: str  # normalized

    @abstractmethod
    def list_files(self) -> Iterator[StoredFile]:
        """Every file under the root."""

    @abstractmethod
    def delete(self, paths: list[str]) -> None:
        """Delete these files (normalized paths under the root)."""

    def table_dir(self, path: str) -> str:
        """`namespace/table_dir` of a path under the root: how sweeps are reported."""
        rest = path[len(self.root) :].lstrip("/").split("/")
        return "/".join(rest[:2]) if len(rest) > 2 else "/".join(rest[:-1]) or "."


class LocalWarehouse(Warehouse):
    """A `file://` warehouse (local mode)."""

    def __init__(self, root: str | Path) -> None:
        self.root = normalize(str(root))

    def list_files(self) -> Iterator[StoredFile]:
        for directory, _, names in os.walk(self.root):
            for name in names:
                path = os.path.join(directory, name)
                stat = os.stat(path)
                yield StoredFile(path, stat.st_size, datetime.fromtimestamp(stat.st_mtime, UTC))

    def delete(self, paths: list[str]) -> None:
        for path in paths:
            if not path.startswith(self.root + "/"):
                raise ValueError(f"refusing to delete outside the warehouse: {path}")
            Path(path).unlink(missing_ok=True)


class S3Warehouse(Warehouse):
    """An `s3://bucket/prefix/` warehouse through a boto3 S3 client."""

    def __init__(self, s3: Any, uri: str) -> None:
        parts = urlsplit(uri)
        if parts.scheme not in _S3_SCHEMES or not parts.netloc:
            raise ValueError(f"not an S3 warehouse URI: {uri}")
        self._s3, self.bucket = s3, parts.netloc
        self.prefix = parts.path.lstrip("/").rstrip("/") + "/" if parts.path.strip("/") else ""
        self.root = normalize(f"s3://{self.bucket}/{self.prefix}").rstrip("/")

    def list_files(self) -> Iterator[StoredFile]:
        for page in self._s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        ):
            for item in page.get("Contents", []):
                modified = item["LastModified"]
                if modified.tzinfo is None:
                    modified = modified.replace(tzinfo=UTC)
                yield StoredFile(f"s3://{self.bucket}/{item['Key']}", int(item["Size"]), modified)

    def delete(self, paths: list[str]) -> None:
        keys = []
        for path in paths:
            if not path.startswith(self.root + "/"):
                raise ValueError(f"refusing to delete outside the warehouse: {path}")
            keys.append(path[len(f"s3://{self.bucket}/") :])
        for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1,000 keys
            answer = self._s3.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in keys[start : start + 1000]], "Quiet": True},
            )
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise OSError(f"S3 refused to delete {first.get('Key')}: {first.get('Code')}")


@dataclass(frozen=True)
class GcOptions:
    """How long history stays live, how old an unmarked file must be, and whether to delete.

    `table_retention` and `table_grace` override them per table key `ns.table` (the table
    config's `maintenance.retention` and `.grace`)."""

    retention: timedelta = DEFAULT_RETENTION
    grace: timedelta = DEFAULT_GRACE
    delete: bool = False
    table_retention: Mapping[str, timedelta] = field(default_factory=dict)
    table_grace: Mapping[str, timedelta] = field(default_factory=dict)

    def grace_of(self, key: str) -> timedelta:
        """How old an unreferenced file of table `key` must be to be swept."""
        return self.table_grace.get(key, self.grace)

    def retention_of(self, key: str) -> timedelta:
        """How long the history of table `key` stays live."""
        return self.table_retention.get(key, self.retention)

    @property
    def longest_retention(self) -> timedelta:
        return max([self.retention, *self.table_retention.values()])


@dataclass
class TableSweep:
    """One table's (or unattributed directory's) share of the warehouse."""

    table: str
    data_files: int = 0  # at main's head: the files a reader of main opens
    data_bytes: int = 0
    live_files: int = 0
    live_bytes: int = 0
    garbage_files: int = 0
    garbage_bytes: int = 0
    deleted_files: int = 0
    deleted_bytes: int = 0


@dataclass
class GcReport:
    """What a run marked, found and (with `deleted`) removed."""

    started: datetime
    cutoff: datetime  # unmarked files modified before this were garbage
    deleted: bool
    references: int = 0
    live_commits: int = 0
    marked_files: int = 0
    missing: list[str] = field(default_factory=list)  # marked but not in the warehouse
    # Metadata of live history (not heads) already gone: collected by a shorter retention.
    collected_history: list[str] = field(default_factory=list)
    tables: dict[str, TableSweep] = field(default_factory=dict)
    garbage: list[StoredFile] = field(default_factory=list)
    # False when the budget ended the run before its sweep: nothing was found or deleted,
    # `tables` holds main's data files only, and `checkpoint` is the mark so far.
    complete: bool = True
    checkpoint: dict[str, Any] | None = None
    resumed: bool = False  # it continued an earlier run's checkpoint

    @property
    def garbage_bytes(self) -> int:
        return sum(f.size for f in self.garbage)


class _Marker:
    """The mark phase: which (reference, commit, table) contents are live, and their files."""

    def __init__(
        self,
        catalog: Any,
        options: GcOptions,
        now: datetime,
        properties: dict[str, str],
        budget: Budget | None = None,
    ) -> None:
        self.catalog, self.options, self.now = catalog, options, now
        self.properties, self.budget = properties, budget
        self.marked: set[str] = set()
        self.table_names: dict[str, str] = {}  # normalized table location -> content key
        self._seen_heads: set[tuple[str, str]] = set()
        self._seen_commits: dict[str, datetime | None] = {}
        self._seen_contents: set[tuple[str, int | None]] = set()
        # manifest path -> its present entries: (normalized path, content, bytes)
        self._manifests: dict[str, list[tuple[str, int, int]]] = {}
        self.main_contents: dict[str, Any] = {}  # key -> content at main's head (newest)
        self.live_commits = 0
        self.references = 0
        self.collected_history: set[str] = set()

    def mark_all(self) -> int:
        """Mark what every reference now reaches; the number of (ref, head) pairs new to
        this run (0 when nothing moved since the last call)."""
        new = 0
        # Main first: its tables (what the day's compaction reads) are known even when
        # the budget ends the mark early.
        references = sorted(self.catalog.references(), key=lambda ref: ref.name != MAIN)
        self.references = len(references)
        for ref in references:
            if (ref.name, ref.hash) in self._seen_heads:
                continue
            new += 1
            if ref.name == MAIN:
                # Main's tables are those of the head walked now (a checkpoint's main may
                # have had tables since dropped).
                self.main_contents = {}
            self._mark_ref(ref.name, ref.hash)
            # Only once walked: a walk the budget cut short is taken up again on resuming.
            self._seen_heads.add((ref.name, ref.hash))
        return new

    def _mark_ref(self, name: str, head: str) -> None:
        # Newest first: a commit is live while the one after it (its successor as head) is
        # younger than the window; the head always is.
        oldest = self.now - self.options.longest_retention
        superseded: datetime | None = None
        for commit in self.catalog.commit_log(name, head):
            if superseded is not None and superseded < oldest:
                return
            if self.budget is not None and self.budget.spent():
                raise _OutOfTime  # between commits: each is marked whole or not at all
            self._mark_commit(name, commit.hash, superseded)
            superseded = _parse_time(commit.commit_time) or superseded

    def _mark_commit(self, ref: str, commit_hash: str, superseded: datetime | None) -> None:
        # The later a commit was superseded (None: it is a head), the more of its tables are
        # live; a commit seen before with at least as much life left is done, except as
        # main's head: its tables are main's even when another reference reached it first.
        main_head = ref == MAIN and superseded is None
        if commit_hash in self._seen_commits:
            before = self._seen_commits[commit_hash]
            if not main_head and (
                before is None or (superseded is not None and superseded <= before)
            ):
                return
        else:
            self.live_commits += 1
        self._seen_commits[commit_hash] = superseded
        for content in self.catalog.contents_at(ref, commit_hash):
            if main_head:
                self.main_contents[content.key] = content
            if superseded is not None and superseded < self.now - self.options.retention_of(
                content.key
            ):
                continue  # this table's history ends sooner
            self._mark_content(content, head=superseded is None)

    def _mark_content(self, content: Any, *, head: bool) -> None:
        identity = (content.metadata_location, content.snapshot_id)
        if identity in self._seen_contents:
            return
        self._seen_contents.add(identity)
        if content.type != "ICEBERG_TABLE":
            self.marked.add(normalize(content.metadata_location))
            return  # a view's metadata JSON is all it has
        from pyiceberg.io import load_file_io
        from pyiceberg.serializers import FromInputFile

        io = load_file_io(self.properties, content.metadata_location)
        where = content.metadata_location
        try:
            metadata = FromInputFile.table_metadata(io.new_input(where))
            self.marked.add(normalize(where))
            self.table_names.setdefault(normalize(metadata.location).rstrip("/"), content.key)
            for stats in [
                *getattr(metadata, "statistics", []),
                *getattr(metadata, "partition_statistics", []),
            ]:
                self.marked.add(normalize(stats.statistics_path))
            snapshot_id = content.snapshot_id
            if snapshot_id is None or snapshot_id < 0:
                snapshot_id = metadata.current_snapshot_id
            if snapshot_id is None or snapshot_id < 0:
                return
            snapshot = metadata.snapshot_by_id(snapshot_id)
            if snapshot is None:
                raise KeyError(f"snapshot {snapshot_id} is not in the metadata")
            where = snapshot.manifest_list
            self.marked.add(normalize(snapshot.manifest_list))
            for manifest in snapshot.manifests(io):
                where = manifest.manifest_path
                self.marked.add(normalize(manifest.manifest_path))
                self.marked.update(path for path, _, _ in self._live_files(io, manifest))
        except FileNotFoundError:
            if head:
                raise GcError(
                    f"cannot mark {content.key}: {where} is missing (a reference's "
                    "head reads it); nothing was swept"
                ) from None
            # History an earlier run with a shorter retention collected: it reads nothing
            # that still exists only for it.
            self.collected_history.add(content.metadata_location)
        except (OSError, ValueError, KeyError) as exc:
            detail = " ".join(str(exc).split())[:300]
            raise GcError(
                f"cannot mark {content.key} ({where}): {type(exc).__name__}: "
                f"{detail}; nothing was swept"
            ) from exc

    def _live_files(self, io: Any, manifest: Any) -> list[tuple[str, int, int]]:
        path = manifest.manifest_path
        if path not in self._manifests:  # manifests are immutable and shared by snapshots
            self._manifests[path] = [
                (
                    normalize(e.data_file.file_path),
                    int(e.data_file.content),
                    int(e.data_file.file_size_in_bytes),
                )
                for e in manifest.fetch_manifest_entry(io, discard_deleted=True)
            ]
        return self._manifests[path]

    def checkpoint(self, started: datetime) -> dict[str, Any]:
        """The mark so far, for a later run to continue (`resume`): what was marked and
        which heads, commits and contents are done. Marks only ever keep files, so a
        checkpoint taken while references moved is safe to continue from."""
        return {
            "checkpoint_version": CHECKPOINT_VERSION,
            "started": started.isoformat(),
            "heads": sorted(self._seen_heads),
            "commits": {h: t.isoformat() if t else None for h, t in self._seen_commits.items()},
            "contents": sorted([location, snapshot] for location, snapshot in self._seen_contents),
            "marked": sorted(self.marked),
            "table_names": self.table_names,
            "main_contents": {
                key: {
                    "type": c.type,
                    "metadata_location": c.metadata_location,
                    "snapshot_id": c.snapshot_id,
                }
                for key, c in self.main_contents.items()
            },
            "live_commits": self.live_commits,
            "collected_history": sorted(self.collected_history),
        }

    def resume(self, checkpoint: Mapping[str, Any]) -> None:
        """Continue from `checkpoint` (`checkpoint()` of an earlier run)."""
        from types import SimpleNamespace

        self._seen_heads = {(name, head) for name, head in checkpoint["heads"]}
        self._seen_commits = {h: _parse_time(t) for h, t in checkpoint["commits"].items()}
        self._seen_contents = {
            (location, snapshot) for location, snapshot in checkpoint["contents"]
        }
        self.marked = set(checkpoint["marked"])
        self.table_names = dict(checkpoint["table_names"])
        self.main_contents = {
            key: SimpleNamespace(key=key, **content)
            for key, content in checkpoint["main_contents"].items()
        }
        self.live_commits = int(checkpoint["live_commits"])
        self.collected_history = set(checkpoint["collected_history"])

    def main_data(self) -> dict[str, tuple[int, int]]:
        """`ns.table` -> (data files, their bytes) of each table at main's head: what a
        reader of main opens (delete files not counted)."""
        from pyiceberg.io import load_file_io
        from pyiceberg.serializers import FromInputFile

        found: dict[str, tuple[int, int]] = {}
        for key, content in self.main_contents.items():
            if content.type != "ICEBERG_TABLE":
                continue
            io = load_file_io(self.properties, content.metadata_location)
            metadata = FromInputFile.table_metadata(io.new_input(content.metadata_location))
            snapshot_id = content.snapshot_id
            if snapshot_id is None or snapshot_id < 0:
                snapshot_id = metadata.current_snapshot_id
            snapshot = metadata.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
            entries = (
                []
                if snapshot is None
                else [
                    entry
                    for manifest in snapshot.manifests(io)
                    for entry in self._live_files(io, manifest)
                    if entry[1] == 0
                ]
            )  # DATA
            found[key] = (len(entries), sum(size for _, _, size in entries))
        return found


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _companion(path: str) -> str | None:
    """The file a Hadoop checksum file (`dir/.name.crc`) belongs to."""
    directory, name = os.path.split(path)
    if name.startswith(".") and name.endswith(".crc"):
        return os.path.join(directory, name[1:-4])
    return None


def collect(
    catalog: Any,
    warehouse: Warehouse,
    options: GcOptions | None = None,
    *,
    properties: dict[str, str] | None = None,
    clock: Callable[[], datetime] | None = None,
    between_phases: Callable[[], None] | None = None,
    budget: Budget | None = None,
    resume: Mapping[str, Any] | None = None,
) -> GcReport:
    """Mark, list, re-mark, sweep (see the module's docstring); the report of the run.

    `between_phases` runs after the first mark, before the warehouse is listed and the
    references are marked again (tests create references and ingest there). Raises
    `GcError` when marking cannot complete (nothing is deleted then) and the catalog's
    errors as they are.

    With a `budget`, a mark that outlasts it stops between commits and the run returns an
    incomplete report (nothing swept) whose `checkpoint`, given as `resume` to a later
    run, lets that run continue instead of starting over.
    """
    options = options or GcOptions()
    now = (clock or (lambda: datetime.now(UTC)))()
    marker = _Marker(catalog, options, now, properties or {}, budget)
    if resume is not None:
        marker.resume(resume)
        # Files written since the first run began may belong to commits its mark missed.
        now = min(now, _parse_time(resume["started"]) or now)
    try:
        marker.mark_all()
    except _OutOfTime:
        return _incomplete(marker, now, options, resumed=resume is not None)
    # A file written after the mark started may belong to a commit the mark did not see.
    cutoff = min(now, now - options.grace)  # a table's own grace replaces `options.grace`
    if between_phases is not None:
        between_phases()
    listed = list(warehouse.list_files())
    try:
        while marker.mark_all():  # references that appeared or moved since the first mark
            pass
    except _OutOfTime:
        return _incomplete(marker, now, options, resumed=resume is not None)
    report = GcReport(
        resumed=resume is not None,
        started=now,
        cutoff=cutoff,
        deleted=options.delete,
        references=marker.references,
        live_commits=marker.live_commits,
        marked_files=len(marker.marked),
        collected_history=sorted(marker.collected_history),
    )
    present = {f.path for f in listed}
    for key, (files, size) in marker.main_data().items():
        row = report.tables.setdefault(key, TableSweep(key))
        row.data_files, row.data_bytes = files, size
    report.missing = sorted(
        p for p in marker.marked if p.startswith(warehouse.root + "/") and p not in present
    )
    for stored in listed:
        row = report.tables.setdefault(*_table_of(stored.path, warehouse, marker.table_names))
        companion = _companion(stored.path)
        live = stored.path in marker.marked or (
            companion is not None and companion in present and companion in marker.marked
        )
        young = stored.modified >= min(now, now - options.grace_of(row.table))
        if live or young:
            row.live_files += 1
            row.live_bytes += stored.size
            continue
        row.garbage_files += 1
        row.garbage_bytes += stored.size
        report.garbage.append(stored)
    if options.delete and report.garbage:
        warehouse.delete([f.path for f in report.garbage])
        for stored in report.garbage:
            row = report.tables[_table_of(stored.path, warehouse, marker.table_names)[0]]
            row.deleted_files += 1
            row.deleted_bytes += stored.size
    return report


def _incomplete(
    marker: _Marker, started: datetime, options: GcOptions, *, resumed: bool
) -> GcReport:
    """The report of a run whose budget ended its mark: main's data files (its head is
    marked first), nothing swept, the checkpoint to continue from."""
    report = GcReport(
        started=started,
        cutoff=min(started, started - options.grace),
        deleted=False,
        references=marker.references,
        live_commits=marker.live_commits,
        marked_files=len(marker.marked),
        collected_history=sorted(marker.collected_history),
        complete=False,
        checkpoint=marker.checkpoint(started),
        resumed=resumed,
    )
    for key, (files, size) in marker.main_data().items():  # main's head, once marked
        row = report.tables.setdefault(key, TableSweep(key))
        row.data_files, row.data_bytes = files, size
    return report


def _table_of(path: str, warehouse: Warehouse, names: dict[str, str]) -> tuple[str, TableSweep]:
    """The table a file belongs to (the marked table whose location holds it, looked up by
    the file's parent directories), else its directory under the warehouse."""
    directory = path
    while True:
        parent = directory.rsplit("/", 1)[0]
        if parent == directory or len(parent) < len(warehouse.root):
            break
        directory = parent
        key = names.get(directory)
        if key is not None:
            return key, TableSweep(key)
    label = warehouse.table_dir(path)
    return label, TableSweep(label)


def gc_options(
    *,
    delete: bool,
    retention_days: float | None,
    grace_hours: float | None,
    tables: dict[str, MaintenanceOptions] | None = None,
) -> GcOptions:
    """GcOptions from the command's flags and the tables' `maintenance:` sections: a flag
    given applies to every table; without it each table's own setting (or the default)."""
    defaults = MaintenanceOptions()
    tables = tables or {}
    return GcOptions(
        retention=timedelta(days=retention_days)
        if retention_days is not None
        else timedelta(seconds=defaults.retention),
        grace=timedelta(hours=grace_hours)
        if grace_hours is not None
        else timedelta(seconds=defaults.grace),
        delete=delete,
        table_retention={}
        if retention_days is not None
        else {t: timedelta(seconds=m.retention) for t, m in tables.items()},
        table_grace={}
        if grace_hours is not None
        else {t: timedelta(seconds=m.grace) for t, m in tables.items()},
    )
