"""How a table config's text problems are worded, wherever the config is read.

The Lambdas (batch limits, arrival) and the Spark job (everything) both parse
`tables/<table>.yaml`; a user must read the same words from either. Standard library
only: the caller parses with PyYAML and hands its exception here.
"""

from __future__ import annotations

CONFIG_ERROR = "config_error"  # the reason code of an ingest refused for its table config


def yaml_error_text(source: str, exc: BaseException) -> str:
    """`<source>: not valid YAML at line L, column C: <problem>` (PyYAML's marks are 0-based)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{source}: not valid YAML{where}: {problem}"
