"""Open the backend a command works on: the embedded stack over a home, or a deployed stack."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from infra.constants import STACK_NAME
from wap.exceptions import OpsError
from wap.ops.backend import Backend
from wap.runtime.home import WapHome

DEFAULT_STACK = STACK_NAME  # the name `cdk deploy` gives the stack by default


@dataclass(frozen=True)
class Target:
    """The global options: which backend, and how to reach it."""

    home: str | None = None
    aws: bool = False
    profile: str | None = None
    region: str | None = None
    stack: str = DEFAULT_STACK
    nessie_url: str | None = None

    @property
    def is_aws(self) -> bool:
        return self.aws or self.profile is not None

    def cli_flags(self) -> list[str]:
        """The global `wap` options that reach this backend again (for next-step hints)."""
        if not self.is_aws:
            return ["--home", self.home] if self.home else []
        flags = ["--aws"] if self.profile is None else ["--profile", self.profile]
        if self.region:
            flags += ["--region", self.region]
        if self.stack != DEFAULT_STACK:
            flags += ["--stack", self.stack]
        return flags


class NoLocalState(OpsError):
    """The home directory holds no state yet."""


# Tests set this to reuse their session's SparkSession instead of building one.
SPARK_SESSION: Any = None


@contextmanager
def open_backend(
    target: Target,
    *,
    run_ingests: bool = False,
    mutates: bool = False,
    create: bool = False,
    create_tables: bool = False,
) -> Iterator[Backend]:
    """A started backend, closed on exit.

    Local mode: commands that change state hold the home's lock; only commands
    that run ingests (`run_ingests`) start Spark; `create` makes a missing home;
    `create_tables` lets uploads create tables that have no config and are not on main
    (the deploy setting `createTablesFromUploads` of this command's local stack). On AWS
    that is the deployed stack's setting: `create_tables` is refused there.
    """
    if target.is_aws and create_tables:
        raise OpsError(
            "--create is for the local stack: on AWS, uploads create tables only when the "
            "stack is deployed with -c createTablesFromUploads=true"
        )
    if target.is_aws:
        from wap.ops.aws_backend import AwsBackend

        with AwsBackend.connect(
            target.stack, profile=target.profile, region=target.region, nessie_url=target.nessie_url
        ) as backend:
            yield backend
        return
    from wap.ops.backend import LocalBackend
    from wap.runtime.embedded_stack import EmbeddedOptions, EmbeddedStack

    home = WapHome.resolve(target.home)
    home.check_not_a_file()
    if not create and not home.exists():
        raise NoLocalState(
            f"no local state in {home.root} yet: run `wap demo` or "
            "`wap ingest` first (or pass --home)"
        )
    with home.locked() if mutates else nullcontext():
        stack = EmbeddedStack(
            home,
            EmbeddedOptions(
                run_ingests=run_ingests,
                recover_interrupted=mutates,
                spark=SPARK_SESSION,
                create_tables=create_tables,
            ),
        )
        stack.start()
        with LocalBackend(stack) as backend:
            yield backend
