"""The field tables of docs/contracts.md, generated from the models.

`python -m contracts.doc` rewrites the blocks between `<!-- contracts:NAME -->` and
`<!-- /contracts:NAME -->`; `--check` only reports stale ones (tests/test_contracts_doc.py
runs it), so the prose page cannot drift from the one definition of each payload.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

from contracts import alert, report, state

DOC = Path(__file__).resolve().parent.parent / "docs" / "contracts.md"

# Block name -> the models it documents, in order.
BLOCKS = {
    "state": (
        state.ExecutionInput,
        state.ExecutionState,
        state.Run,
        state.Outcome,
        state.JobUsage,
        state.FinishResult,
    ),
    "report": (report.AuditReport, report.CheckResult),
    "alert": (alert.AlertEvent,),
}
# Closed vocabularies worth listing under their model.
VOCABULARIES = {
    state.ExecutionInput: {"state_version": state.KNOWN_STATE_VERSIONS},
    state.Outcome: {"status": state.OUTCOME_STATUSES},
    report.AuditReport: {
        "report_version": report.KNOWN_REPORT_VERSIONS,
        "outcome": report.OUTCOMES,
    },
    report.CheckResult: {
        "severity": report.SEVERITIES,
        "status": report.CHECK_STATUSES,
        "settled_by": report.SETTLED_BY,
    },
    alert.AlertEvent: {"alert_version": alert.KNOWN_ALERT_VERSIONS},
}
# Fields whose JSON name or place differs from the attribute.
JSON_NAMES = {
    (state.ExecutionState, "job_timeout_seconds"): "config.job_timeout_seconds",
    (state.FinishResult, "alert_needed"): "alert_needed",
}


def _default(item: dataclasses.Field) -> str:
    if item.default is not dataclasses.MISSING:
        return "`None`" if item.default is None else f"`{item.default!r}`"
    if item.default_factory is not dataclasses.MISSING:
        return f"`{item.default_factory()!r}`"
    return "required"


def model_table(model: type) -> str:
    """The markdown table of one model: JSON field, type, default (or `required`)."""
    own = {f.name for f in dataclasses.fields(model)}
    inherited = [base for base in model.__mro__[1:] if dataclasses.is_dataclass(base)]
    summary = " ".join((model.__doc__ or "").split("\n\n")[0].split())
    lines = [f"`{model.__module__}.{model.__qualname__}`: {summary}", ""]
    if inherited:
        own -= {f.name for f in dataclasses.fields(inherited[0])}
        lines[0] += f" Every field of `{inherited[0].__qualname__}`, plus:"
    lines += ["| field | type | default |", "| --- | --- | --- |"]
    rows = [(f.name, f.type, _default(f)) for f in dataclasses.fields(model) if f.name in own]
    if model is state.FinishResult:  # a property in Python, a field in the JSON
        rows.insert(1, ("alert_needed", "bool", "`alert is not None`"))
    vocabulary = VOCABULARIES.get(model, {})
    for name, kind, default in rows:
        json_name = JSON_NAMES.get((model, name), name)
        values = vocabulary.get(name)
        kind = str(kind).replace("|", "\\|")
        if values:
            kind += ": " + " \\| ".join(f"`{v}`" for v in values)
        lines.append(f"| `{json_name}` | {kind} | {default} |")
    return "\n".join(lines)


def block(name: str) -> str:
    """The generated text between the markers of block `name`."""
    return "\n" + "\n\n".join(model_table(model) for model in BLOCKS[name]) + "\n"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- contracts:{name} -->)(.*?)(<!-- /contracts:{name} -->)", re.DOTALL)


def render(text: str) -> str:
    """`text` (the page) with every block regenerated; ValueError for a missing marker."""
    for name in BLOCKS:
        pattern = _pattern(name)
        if not pattern.search(text):
            raise ValueError(f"docs/contracts.md has no <!-- contracts:{name} --> block")
        text = pattern.sub(lambda m, n=name: m.group(1) + block(n) + m.group(3), text)
    return text


def stale_blocks(text: str) -> list[str]:
    """Names of the blocks of `text` that differ from the models."""
    stale = []
    for name in BLOCKS:
        found = _pattern(name).search(text)
        if found is None or found.group(2) != block(name):
            stale.append(name)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m contracts.doc", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--check", action="store_true", help="only report stale blocks")
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    text = args.doc.read_text()
    if args.check:
        stale = stale_blocks(text)
        if stale:
            print(f"{args.doc}: stale blocks {stale}; run python -m contracts.doc", file=sys.stderr)
        return 1 if stale else 0
    updated = render(text)
    if updated != text:
        args.doc.write_text(updated)
        print(f"updated {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
