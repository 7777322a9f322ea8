"""Server-rendered HTML of the catalog UI: Jinja2 templates in `templates/`, every value
escaped, every URL segment quoted.

No JavaScript, no forms: the pages only link to each other. Paths follow Nessie's web UI
(`/tree/<ref>/<namespace...>`, `/content/<ref>/<key...>`, `/commits/<ref>[/<hash>]`),
plus `/diff/<ref>`, which Nessie's UI does not use. `<ref>` may be `name@hash`: the
reference at one commit of its history (what a commit page links its operations to).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from contracts.catalog_ui import commits_path, content_path, diff_path, tree_path
from contracts.properties import INGEST_ID_PROPERTY, SOURCE_PROPERTY
from lakeview.check_sql import first_rows_query

from .pages import (
    CommitPage,
    ContentPage,
    DiffPage,
    LogPage,
    RefView,
    TreePage,
)

if TYPE_CHECKING:
    import pyarrow as pa

MAX_CELL = 200
_WAP_PROPERTIES = (INGEST_ID_PROPERTY, SOURCE_PROPERTY)


def e(value: Any) -> str:
    """HTML-escape anything (quotes included)."""
    return escape(str(value), quote=True)


def _finalize(value: Any) -> Any:
    """Escape every `{{ value }}` as html.escape(quote=True) does (`&#x27;`, `&quot;`).

    Autoescaping stays on: markup built by the templates (macros) passes through untouched,
    anything else is escaped here, so pages escape exactly as they always have.
    """
    return value if isinstance(value, Markup) else Markup(e(value))  # noqa: S704 (escaped)


# The UI's paths (contracts/catalog_ui.py), under the names the templates use.
tree_url, content_url, commits_url, diff_url = tree_path, content_path, commits_path, diff_path


def _cell(value: Any) -> Any:
    """A value as table cell text (cut at MAX_CELL characters); null as a marked-up word."""
    if value is None:
        return Markup('<span class="null">null</span>')
    if isinstance(value, (dict, list)):
        text = json.dumps(value, default=str, ensure_ascii=False)
    elif isinstance(value, bytes):
        text = value.hex()
    else:
        text = str(value)
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return text


def _row_tuples(rows: pa.Table) -> Iterator[tuple[Any, ...]]:
    columns = [rows.column(i).to_pylist() for i in range(rows.num_columns)]
    return zip(*columns, strict=True)


def _when(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


ENV = Environment(
    loader=PackageLoader("local.nessie.ui", "templates"),
    autoescape=select_autoescape(["html"]),
    finalize=_finalize,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.globals.update(
    tree_url=tree_url, content_url=content_url, commits_url=commits_url, diff_url=diff_url
)
ENV.filters.update(
    cell=_cell,
    row_tuples=_row_tuples,
    first_line=_first_line,
    commas=lambda items: ", ".join(str(i) for i in items),
    dotted=lambda key: ".".join(key),
)


def _render(
    template: str,
    title: str,
    ref: RefView | None = None,
    default_branch: str = "main",
    **context: Any,
) -> str:
    """A whole document: base.html's header (links for `ref`) around the page's body."""
    return ENV.get_template(template).render(
        title=title, ref=ref, default_branch=default_branch, **context
    )


# ---- pages --------------------------------------------------------------------------------


def render_tree(p: TreePage) -> str:
    where = ".".join(p.path)
    title = f"{p.ref.name}{' / ' + where if where else ''}"
    return _render("tree.html", title, p.ref, p.default_branch, p=p)


def render_content(p: ContentPage) -> str:
    name = ".".join(p.key)
    snapshot = None
    info = p.table.info if p.table is not None else None
    if info is not None and info.current is not None:
        current = info.current
        snapshot = [
            ("operation", current.operation),
            ("committed at", _when(current.timestamp_ms)),
            ("parent snapshot", current.parent_id),
            *sorted(current.summary.items()),
        ]
    return _render(
        "content.html",
        f"{name} on {p.ref.name}",
        p.ref,
        p.default_branch,
        p=p,
        name=name,
        content_items=sorted(p.content.items()),
        snapshot=snapshot,
        wap_properties=_WAP_PROPERTIES,
        query=first_rows_query(name, 100) if info is not None else None,
    )


def render_log(p: LogPage) -> str:
    older = commits_url(p.ref.name) + "?page=" + quote(p.next_token) if p.next_token else None
    return _render("log.html", f"commits on {p.ref.name}", p.ref, p=p, older_url=older)


def render_commit(p: CommitPage) -> str:
    c = p.commit
    props = [(k, ", ".join(v)) for k, v in sorted(c.properties.items())]
    meta_items = [
        ("authors", ", ".join(c.authors)),
        ("committer", c.committer),
        ("commit time", c.commit_time),
        ("author time", c.author_time),
        *props,
    ]
    wap_keys = tuple(k for k, _ in props if k.startswith("wap."))
    return _render(
        "commit.html", f"commit {c.hash[:12]}", p.ref, p=p, meta_items=meta_items, wap_keys=wap_keys
    )


def render_diff(p: DiffPage) -> str:
    return _render("diff.html", f"{p.ref.name} vs {p.base.name}", p.ref, p.base.name, p=p)


def render_error(status: int, message: str) -> str:
    return _render("error.html", f"{status}", status=status, message=message)
