"""Names of resources derived from the stack name, each with its service's length limit.

One list, so the stack name is validated against the shortest limit before CloudFormation
(or EMR, minutes into a deploy) refuses a name it derived.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra import constants

CLOUDFORMATION_STACK_NAME_LIMIT = 128


@dataclass(frozen=True)
class DerivedName:
    """`<stack><suffix>`: the name of one resource, and the most characters its service takes."""

    what: str
    suffix: str
    limit: int

    def of(self, stack_name: str) -> str:
        return f"{stack_name}{self.suffix}"

    @property
    def longest_stack_name(self) -> int:
        return self.limit - len(self.suffix)


STATE_MACHINE = DerivedName("the Step Functions state machine", "-ingest", 80)
EMR_APPLICATION = DerivedName("the EMR Serverless application", "-spark", 64)
NESSIE_TABLE_PREFIX = DerivedName(
    "Nessie's DynamoDB tables",
    "-nessie",
    255 - 1 - max(len(s) for s in constants.NESSIE_TABLE_SUFFIXES),
)  # <prefix>_<suffix>
DERIVED = (STATE_MACHINE, EMR_APPLICATION, NESSIE_TABLE_PREFIX)


def longest_stack_name() -> tuple[int, str]:
    """The most characters a stack name may have, and which derived name sets that limit."""
    tightest = min(DERIVED, key=lambda name: name.longest_stack_name)
    if tightest.longest_stack_name >= CLOUDFORMATION_STACK_NAME_LIMIT:
        return CLOUDFORMATION_STACK_NAME_LIMIT, "the CloudFormation stack name"
    return tightest.longest_stack_name, f"{tightest.what} ({tightest.of('<stack>')})"
