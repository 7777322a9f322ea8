"""The state machine definition file and its `${...}` substitutions.

CDK deploys `statemachine/ingest.asl.json` as is, with DefinitionSubstitutions;
the orchestration tests run the same file with local values. Both go through
`render()` semantics: plain text replacement of `${Name}`, as Step Functions does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_]*)\}")


class DefinitionError(ValueError):
    """The definition file is missing, malformed or uses an unknown substitution."""


@dataclass(frozen=True)
class Definition:
    """The raw definition text and the substitution names it uses."""

    path: Path
    text: str

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(PLACEHOLDER.findall(self.text))

    def render(self, values: Mapping[str, str]) -> str:
        """Substitute every `${Name}`; raise DefinitionError naming any that has no value."""
        self.require(values.keys())
        return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text)

    def require(self, known: Any) -> None:
        unknown = sorted(self.placeholders - set(known))
        if unknown:
            raise DefinitionError(
                f"{self.path} uses substitutions the CDK stack does not provide: "
                f"{', '.join('${' + name + '}' for name in unknown)}. Add them to "
                "infra/pipeline.py (state machine substitutions) or rename them."
            )

    def task_resources(self, values: Mapping[str, str]) -> list[tuple[str, dict[str, Any]]]:
        """(Resource, Parameters/Arguments) of every Task state, nested states included."""
        try:
            document = json.loads(self.render(values))
        except json.JSONDecodeError as exc:
            raise DefinitionError(
                f"{self.path} is not valid JSON after substitution: {exc}"
            ) from exc
        found: list[tuple[str, dict[str, Any]]] = []
        _walk_states(document, found)
        return found


def _walk_states(node: Any, found: list[tuple[str, dict[str, Any]]]) -> None:
    states = node.get("States", {}) if isinstance(node, dict) else {}
    for state in states.values():
        if state.get("Type") == "Task":
            found.append(
                (state["Resource"], state.get("Parameters") or state.get("Arguments") or {})
            )
        for branch in state.get("Branches", []):
            _walk_states(branch, found)
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                _walk_states(state[key], found)


def load(path: Path) -> Definition:
    """Read the definition file; a missing file is a clear error, not an empty machine."""
    if not path.is_file():
        raise DefinitionError(f"state machine definition {path} does not exist")
    return Definition(path=path, text=path.read_text(encoding="utf-8"))
