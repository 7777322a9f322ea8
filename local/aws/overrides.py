"""Every place where the local stack departs from the synthesized template, in one list.

Everything else a Lambda, the state machine or the job gets locally is the template's
value with its intrinsics resolved (local/aws/intrinsics.py). A value may differ only
when it is named here, with the reason; tests/statemachine/test_template_parity.py
keeps this list short and checks that nothing else differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """Which template value an override replaces."""

    ENVIRONMENT = "Lambda environment variable"
    SUBSTITUTION = "state machine DefinitionSubstitution"


@dataclass(frozen=True)
class Override:
    """One local-only knob: its name, what it replaces, and why it exists."""

    name: str
    kind: Kind
    why: str
    in_template: bool = True  # False: a variable only the local stack adds


OVERRIDES: tuple[Override, ...] = (
    Override(
        "WAP_NESSIE_UI_URL",
        Kind.ENVIRONMENT,
        "alerts outlive the command and its catalog server: they link to the fixed "
        "address `wap serve` serves (the deploy's `-c nessieUiUrl`)",
    ),
    Override(
        "WAP_SLACK_API_URL",
        Kind.ENVIRONMENT,
        "the local Slack stand-in; on AWS the alert Lambda calls Slack itself",
        in_template=False,
    ),
    Override(
        "WAP_LINEAGE_URL",
        Kind.ENVIRONMENT,
        "the local OpenLineage receiver (a file per run under the home, or a test's); "
        "on AWS the deploy's `-c lineageUrl`, whose synthesized value would be fixed "
        "while the receiver's port is not",
        in_template=False,
    ),
    Override(
        "WAP_AWS_CONSOLE_LINKS",
        Kind.ENVIRONMENT,
        "there is no AWS console to open locally: alerts name the report, logs and "
        "execution instead of linking them there",
        in_template=False,
    ),
    Override(
        "WAP_JOB_TIMEOUT_MINUTES",
        Kind.ENVIRONMENT,
        "tests time a job out in seconds (set with JobTimeoutSeconds)",
    ),
    Override(
        "JobTimeoutSeconds",
        Kind.SUBSTITUTION,
        "tests time a job out in seconds (set with WAP_JOB_TIMEOUT_MINUTES)",
    ),
    Override(
        "PollIntervalSeconds",
        Kind.SUBSTITUTION,
        "local jobs take seconds: poll every second, not every 30",
    ),
    Override(
        "WAP_JOB_RETRY_BASE_SECONDS",
        Kind.ENVIRONMENT,
        "no real backoff sleeps between local job tries",
    ),
    Override(
        "WAP_MAX_PUBLISH_ATTEMPTS", Kind.ENVIRONMENT, "tests exhaust the rebase bound in fewer runs"
    ),
    Override(
        "WAP_BLOCKED_START_SECONDS",
        Kind.ENVIRONMENT,
        "tests see a blocked table retried and alerted in seconds, not minutes",
    ),
)


class LocalParityError(RuntimeError):
    """The local stack cannot run the template as AWS would (the message says why)."""


def apply_overrides(
    kind: Kind, values: Mapping[str, str], overrides: Mapping[str, str], where: str
) -> dict[str, str]:
    """`values` (the template's) with the overrides of `kind` applied.

    Raises LocalParityError for a name not in OVERRIDES, and for an override of a value
    the template no longer has (a stale override would hide the template's change).
    """
    known = {override.name: override for override in OVERRIDES}
    result = dict(values)
    for name, value in overrides.items():
        override = known.get(name)
        if override is None:
            raise LocalParityError(f"{name} is not a local override (local/aws/overrides.py)")
        if override.kind is not kind:
            continue
        if override.in_template and name not in values:
            raise LocalParityError(f"{where}: the template has no {kind.value} {name} to override")
        result[name] = value
    return result


def common_environment(environments: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The variables on which every function that sets them agrees (function -> variables).

    Each handler runs with its own environment (local/aws/lambda_sandbox.py); this is only
    what the harness itself reads, e.g. a test that calls a plain function directly.
    """
    common: dict[str, str] = {}
    for name in sorted({name for env in environments.values() for name in env}):
        values = {env[name] for env in environments.values() if name in env}
        if len(values) == 1:
            common[name] = values.pop()
    return common
