"""The catalog UI's addresses, built once: Nessie's web UI and our local stand-in of it.

Nessie's UI (projectnessie/nessie `ui/src/App.tsx`) routes `/tree/<ref>[/<namespace...>]`
to a reference's listing, `/content/<ref>/<key...>` to one table and
`/commits/<ref>[/<hash>]` to its log; the local stand-in (local/nessie/ui/) serves the same
paths plus `/diff/<ref>`, so links built here (alerts, `wap show`, the dashboard, `wap
catalog`) open in either. `<ref>` may be `name@hash` (names never hold `@`).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from contracts.naming import table_parts


def _ref(ref: str) -> str:
    return quote(ref, safe="@")


def _segments(parts: Sequence[str]) -> list[str]:
    return [quote(part, safe="") for part in parts]


def tree_path(ref: str, path: Sequence[str] = ()) -> str:
    """`/tree/<ref>[/<namespace...>]`: what is on `ref` (under a namespace)."""
    return "/".join(["/tree", _ref(ref), *_segments(path)])


def content_path(ref: str, key: Sequence[str]) -> str:
    """`/content/<ref>/<key...>`: one table as `ref` has it."""
    return "/".join(["/content", _ref(ref), *_segments(key)])


def commits_path(ref: str, commit: str | None = None) -> str:
    """`/commits/<ref>[/<hash>]`: the log of `ref` (one commit of it)."""
    return f"/commits/{_ref(ref)}" + (f"/{quote(commit, safe='')}" if commit else "")


def diff_path(ref: str) -> str:
    """`/diff/<ref>`: what `ref` adds to main (the local catalog UI only)."""
    return f"/diff/{_ref(ref)}"


def ui_url(base: str, path: str) -> str:
    """`path` under the UI at `base` (with or without a trailing slash)."""
    return base.rstrip("/") + path


def branch_url(base: str | None, branch: str) -> str | None:
    """The UI page listing what is on `branch`; None without a UI."""
    return ui_url(base, tree_path(branch)) if base else None


def branch_diff_url(base: str | None, branch: str) -> str | None:
    """The local UI's page of what `branch` adds to main; None without a UI."""
    return ui_url(base, diff_path(branch)) if base else None


def table_url(base: str | None, branch: str, table: str) -> str | None:
    """The UI page of `table` (`ns.table`) as seen on `branch`; None without a UI or for a
    name that is not a table name (contracts/naming.py)."""
    key = table_parts(table)
    return ui_url(base, content_path(branch, key)) if base and key else None
