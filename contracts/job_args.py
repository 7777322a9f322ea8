"""The Spark job's arguments, defined once (docs/contracts.md, "Spark job arguments").

The trigger renders them (`to_args`), EMR Serverless passes them to
`spark_jobs/wap_job.py` as `entryPointArguments`, the job parses them (`parse_run_args`)
and so does the local EMR stand-in, which rewrites their URIs to local copies. One entry
point runs three kinds of run: an ingest (`JobArgs`), `wap doctor`'s smoke run
(`SmokeArgs`, `--smoke`) and a compaction (`CompactionArgs`, `--compact`).

Only names and URIs travel here, never a secret (EMR records the arguments of every run):
the job's catalog client credentials are named by their Secrets Manager secret's ARN
(`--catalog-credentials-secret`), which the job reads when it starts.
Standard library only and Python 3.9-compatible: the job imports it on EMR.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import NoReturn, TypeVar, Union

DEFAULT_CATALOG = "lake"
SMOKE_FLAG = "--smoke"
COMPACT_FLAG = "--compact"
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
DEFAULT_MIN_FILES = 5


class JobArgsError(ValueError):
    """Arguments the job refuses; the message names the argument at fault."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting (`exit_on_error=False` does not cover a
    missing required argument on 3.9)."""

    def error(self, message: str) -> NoReturn:
        raise JobArgsError(f"{self.prog}: {message}")


def _parser(prog: str, mode_flag: str | None, *required: str) -> _Parser:
    """The parser of one kind of run: its mode flag (none for an ingest), the arguments
    it requires, and the catalog every kind takes."""
    parser = _Parser(prog=prog, add_help=False)
    if mode_flag:
        parser.add_argument(mode_flag, action="store_true", required=True)
    for flag in required:
        parser.add_argument(flag, required=True)
    parser.add_argument("--catalog", default=DEFAULT_CATALOG)
    parser.add_argument("--catalog-credentials-secret", default=None)
    return parser


def _repeated(flag: str, values: Sequence[str]) -> list[str]:
    return [arg for value in values for arg in (flag, value)]


def _catalog(catalog: str, credentials_secret: str | None = None) -> list[str]:
    named = [] if catalog == DEFAULT_CATALOG else ["--catalog", catalog]
    if credentials_secret:
        named += ["--catalog-credentials-secret", credentials_secret]
    return named


_Args = TypeVar("_Args")


def _built(cls: type[_Args], parsed: argparse.Namespace) -> _Args:
    """`cls` from what its parser parsed: each field from the argument of the same name
    (argparse gives a repeated argument as a list; a field whose default is a tuple gets one)."""
    values = {}
    for field in fields(cls):
        value = getattr(parsed, field.name)
        values[field.name] = tuple(value) if isinstance(field.default, tuple) else value
    return cls(**values)


@dataclass(frozen=True)
class JobArgs:
    """An ingest's arguments: write `sources` to `table` on `branch`, report to `report_uri`."""

    sources: list[str]
    table: str
    branch: str
    ingest_id: str
    report_uri: str
    # A YAML table config; a URI ending in / is a prefix holding `<ns>.<table>.yaml`.
    table_config_uri: str | None = None
    catalog: str = DEFAULT_CATALOG
    # A dataset (docs/batches.md): one source the job cannot use rejects the whole run.
    all_or_nothing: bool = False
    # Each source's uploaded object version (`s3://bucket/key?versionId=V`), in the order of
    # `sources`: the pipeline reads staged copies, the snapshot names what was uploaded.
    source_origins: tuple[str, ...] = ()
    # A multi-table dataset (docs/datasets.md): its config, and each source's table in the
    # order of `sources`; `table` is then the dataset's first table.
    dataset_config_uri: str | None = None
    source_tables: tuple[str, ...] = ()
    # The ARN of the secret holding the job's catalog client (never its value).
    catalog_credentials_secret: str | None = None

    def __post_init__(self) -> None:
        if not self.sources:
            raise JobArgsError("--source: at least one is required")
        for flag, given in (
            ("--source-origin", self.source_origins),
            ("--source-table", self.source_tables),
        ):
            if given and len(given) != len(self.sources):
                raise JobArgsError(
                    f"{flag}: give one per --source, in the same order "
                    f"({len(given)} for {len(self.sources)} sources)"
                )
        if bool(self.dataset_config_uri) != bool(self.source_tables):
            raise JobArgsError("--dataset-config-uri and --source-table go together")

    def origin(self, source: str) -> str:
        """The uploaded object version `source` is a copy of (itself without origins)."""
        if not self.source_origins:
            return source
        # Not zip(strict=True): EMR Serverless images run Python 3.9 (the lengths match).
        return dict(zip(self.sources, self.source_origins))[source]  # noqa: B905

    @property
    def run_catalog(self) -> str:
        """The per-run catalog name, `wap_<first 8 chars of the ingest id>`."""
        return f"wap_{self.ingest_id[:8]}"

    def to_args(self) -> list[str]:
        """The argument list EMR passes to the job (the order the trigger always used)."""
        args = _repeated("--source", self.sources)
        args += _repeated("--source-origin", self.source_origins)
        if self.dataset_config_uri:
            args += _repeated("--source-table", self.source_tables)
            args += ["--dataset-config-uri", self.dataset_config_uri]
        args += [
            "--table",
            self.table,
            "--branch",
            self.branch,
            "--ingest-id",
            self.ingest_id,
            "--report-uri",
            self.report_uri,
        ]
        if self.table_config_uri:
            args += ["--table-config-uri", self.table_config_uri]
        if self.all_or_nothing:
            args.append("--all-or-nothing")
        return args + _catalog(self.catalog, self.catalog_credentials_secret)

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> JobArgs:
        """Parse `argv`; JobArgsError naming the argument when it is malformed."""
        parser = _parser("wap_job", None, "--table", "--branch", "--ingest-id", "--report-uri")
        parser.add_argument("--source", action="append", required=True, dest="sources")
        parser.add_argument("--table-config-uri", default=None)
        parser.add_argument("--all-or-nothing", action="store_true")
        parser.add_argument("--source-origin", action="append", default=[], dest="source_origins")
        parser.add_argument("--dataset-config-uri", default=None)
        parser.add_argument("--source-table", action="append", default=[], dest="source_tables")
        return _built(cls, parser.parse_args(list(argv)))


@dataclass(frozen=True)
class SmokeArgs:
    """`wap doctor`'s smoke run (spark_jobs/smoke.py): every step on `branch`."""

    branch: str
    report_uri: str
    catalog: str = DEFAULT_CATALOG
    catalog_credentials_secret: str | None = None

    def to_args(self) -> list[str]:
        """`--smoke --branch B --report-uri U [--catalog C] [--catalog-credentials-secret A]`."""
        return [
            SMOKE_FLAG,
            "--branch",
            self.branch,
            "--report-uri",
            self.report_uri,
            *_catalog(self.catalog, self.catalog_credentials_secret),
        ]

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> SmokeArgs:
        """Parse `argv`; JobArgsError naming the argument when it is malformed."""
        parser = _parser("wap_job --smoke", SMOKE_FLAG, "--branch", "--report-uri")
        return _built(cls, parser.parse_args(list(argv)))


@dataclass(frozen=True)
class CompactionArgs:
    """A compaction run (spark_jobs/compaction.py): rewrite `table`'s files on `branch`."""

    table: str
    branch: str
    run_id: str  # the maintenance run's ledger id
    report_uri: str
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    min_files: int = DEFAULT_MIN_FILES
    catalog: str = DEFAULT_CATALOG
    catalog_credentials_secret: str | None = None

    def __post_init__(self) -> None:
        if self.target_file_size < 1 or self.min_files < 1:
            raise JobArgsError("--target-file-size and --min-files must be positive")

    @property
    def run_catalog(self) -> str:
        """The per-run catalog name, `wap_<first 8 chars of the run id>`."""
        return f"wap_{self.run_id[:8]}"

    def to_args(self) -> list[str]:
        """`--compact --table T --branch B --run-id R --report-uri U --target-file-size N
        --min-files M [--catalog C]`."""
        return [
            COMPACT_FLAG,
            "--table",
            self.table,
            "--branch",
            self.branch,
            "--run-id",
            self.run_id,
            "--report-uri",
            self.report_uri,
            "--target-file-size",
            str(self.target_file_size),
            "--min-files",
            str(self.min_files),
            *_catalog(self.catalog, self.catalog_credentials_secret),
        ]

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> CompactionArgs:
        """Parse `argv`; JobArgsError naming the argument when it is malformed."""
        parser = _parser(
            "wap_job --compact", COMPACT_FLAG, "--table", "--branch", "--run-id", "--report-uri"
        )
        parser.add_argument("--target-file-size", type=int, default=DEFAULT_TARGET_FILE_SIZE)
        parser.add_argument("--min-files", type=int, default=DEFAULT_MIN_FILES)
        return _built(cls, parser.parse_args(list(argv)))


# A runtime alias: Union, as `X | Y` is 3.10+ and the job runs on 3.9.
RunArgs = Union[JobArgs, SmokeArgs, CompactionArgs]  # noqa: UP007


def parse_run_args(argv: Sequence[str]) -> RunArgs:
    """The arguments of any run of the entry point: a smoke run (`--smoke`), a compaction
    (`--compact`) or an ingest; JobArgsError naming the argument when malformed."""
    if SMOKE_FLAG in argv:
        return SmokeArgs.from_args(argv)
    if COMPACT_FLAG in argv:
        return CompactionArgs.from_args(argv)
    return JobArgs.from_args(argv)
