"""Server-rendered HTML of the catalog UI: every value escaped, every URL segment quoted.

No JavaScript, no forms: the pages only link to each other. Paths follow Nessie's web UI
(`/tree/<ref>/<namespace...>`, `/content/<ref>/<key...>`, `/commits/<ref>[/<hash>]`),
plus `/diff/<ref>`, which Nessie's UI does not use.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from lakeview.check_sql import first_rows_query

from .pages import (
    CommitPage,
    CommitView,
    ContentPage,
    DiffPage,
    LogPage,
    RefView,
    TableDiff,
    TreePage,
)

if TYPE_CHECKING:
    import pyarrow as pa

MAX_CELL = 200
_WAP_PROPERTIES = ("wap.ingest-id", "wap.source")
_STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#1d2433}
header{background:#1d2433;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem}
header a{color:#cfe0ff}main{padding:1rem 1.2rem}h1{font-size:1.35rem}
h2{font-size:1.1rem;margin-top:1.6rem}table{border-collapse:collapse;margin:.4rem 0}
td,th{border:1px solid #d5d9e0;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f4f7}code{background:#f2f4f7;padding:0 .2rem}td,th,code{font-size:.9rem}
.null{color:#8a93a3;font-style:italic}.muted{color:#5b6475}.error{color:#b42318}
.wap{background:#fff4d6}ul.refs{columns:2}pre{background:#f2f4f7;padding:.6rem;overflow:auto}
"""


def e(value: Any) -> str:
    """HTML-escape anything (quotes included)."""
    return escape(str(value), quote=True)


def _seg(value: str) -> str:
    return quote(value, safe="")


def tree_url(ref: str, path: Sequence[str] = ()) -> str:
    return "/".join(["/tree", _seg(ref), *(_seg(p) for p in path)])


def content_url(ref: str, key: Sequence[str]) -> str:
    return "/".join(["/content", _seg(ref), *(_seg(p) for p in key)])


def commits_url(ref: str, hash_: str | None = None) -> str:
    return f"/commits/{_seg(ref)}" + (f"/{_seg(hash_)}" if hash_ else "")


def diff_url(ref: str) -> str:
    return f"/diff/{_seg(ref)}"


def link(url: str, label: Any) -> str:
    return f'<a href="{e(url)}">{e(label)}</a>'


def page(title: str, body: str, ref: RefView | None = None, default_branch: str = "main") -> str:
    """A whole document: header with links for the current reference, then `body`."""
    nav = [link(tree_url(default_branch), "WAP catalog")]
    if ref is not None:
        nav += [
            link(tree_url(ref.name), f"tree of {ref.name}"),
            link(commits_url(ref.name), "commits"),
        ]
        if ref.name != default_branch:
            nav.append(link(diff_url(ref.name), f"diff vs {default_branch}"))
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{e(title)}</title><style>{_STYLE}</style></head>"
        f"<body><header>{' '.join(nav)}</header><main>{body}</main></body></html>"
    )


def _cell(value: Any) -> str:
    if value is None:
        return '<span class="null">null</span>'
    if isinstance(value, (dict, list)):
        text = json.dumps(value, default=str, ensure_ascii=False)
    elif isinstance(value, bytes):
        text = value.hex()
    else:
        text = str(value)
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return e(text)


def rows_table(rows: pa.Table | None) -> str:
    """An Arrow table as an HTML table (values cut at MAX_CELL characters)."""
    if rows is None:
        return ""
    if rows.num_rows == 0:
        return '<p class="muted">no rows</p>'
    head = "".join(f"<th>{e(name)}</th>" for name in rows.column_names)
    columns = [rows.column(i).to_pylist() for i in range(rows.num_columns)]
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
        for row in zip(*columns, strict=True)
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _pairs(items: Iterable[tuple[str, Any]], *, highlight: Sequence[str] = ()) -> str:
    rows = "".join(
        f"<tr{' class=wap' if k in highlight else ''}><th>{e(k)}</th><td>{_cell(v)}</td></tr>"
        for k, v in items
    )
    return f"<table>{rows}</table>"


def _when(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _head_line(ref: RefView) -> str:
    return (
        f'<p class="muted">{e(ref.type.lower())} {e(ref.name)} at '
        f"{link(commits_url(ref.name, ref.hash), ref.hash[:12])}"
        + (f", {e(ref.commit_time)}" if ref.commit_time else "")
        + (f": {e(_first_line(ref.message))}" if ref.message else "")
        + "</p>"
    )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


# ---- pages --------------------------------------------------------------------------------


def render_tree(p: TreePage) -> str:
    where = ".".join(p.path)
    crumbs = [link(tree_url(p.ref.name), p.ref.name)]
    for i in range(len(p.path)):
        crumbs.append(link(tree_url(p.ref.name, p.path[: i + 1]), p.path[i]))
    items = []
    for entry in p.entries:
        if entry.is_folder:
            items.append(f"<li>📁 {link(tree_url(p.ref.name, entry.key), entry.name)}</li>")
        else:
            items.append(
                f"<li>📄 {link(content_url(p.ref.name, entry.key), entry.name)} "
                f'<span class="muted">{e(entry.type)}</span></li>'
            )
    listing = f"<ul>{''.join(items)}</ul>" if items else '<p class="muted">nothing here</p>'
    refs = "".join(
        f"<li>{link(tree_url(r.name), r.name)} <span class=muted>{e(r.type.lower())}</span></li>"
        for r in p.refs
    )
    body = (
        f"<h1>{' / '.join(crumbs)}</h1>{_head_line(p.ref)}{listing}"
        f"<h2>Branches and tags</h2><ul class=refs>{refs}</ul>"
    )
    title = f"{p.ref.name}{' / ' + where if where else ''}"
    return page(title, body, p.ref, p.default_branch)


def render_content(p: ContentPage) -> str:
    name = ".".join(p.key)
    parts = [f"<h1>{e(name)} <span class=muted>on {e(p.ref.name)}</span></h1>", _head_line(p.ref)]
    parts.append(
        f"<p>{e(p.content.get('type'))}, content id <code>{e(p.content.get('id'))}</code></p>"
    )
    if p.content.get("type") == "NAMESPACE":
        parts.append(f"<p>{link(tree_url(p.ref.name, p.key), 'what is in this namespace')}</p>")
    table = p.table
    if table is None:
        parts.append("<h2>Content</h2>" + _pairs(sorted(p.content.items())))
    elif table.error:
        parts.append(f'<p class="error">{e(table.error)}</p>')
    elif table.info is not None:
        parts.append(_table_sections(p, table.info, table.rows))
    return page(f"{name} on {p.ref.name}", "".join(parts), p.ref, p.default_branch)


def _table_sections(p: ContentPage, info: Any, rows: pa.Table | None) -> str:
    out = []
    current = info.current
    if current is None:
        out.append('<h2>Current snapshot</h2><p class="muted">none: the table has no data yet</p>')
    else:
        out.append(
            f"<h2>Current snapshot {e(current.snapshot_id)}</h2>"
            + _pairs(
                [
                    ("operation", current.operation),
                    ("committed at", _when(current.timestamp_ms)),
                    ("parent snapshot", current.parent_id),
                    *sorted(current.summary.items()),
                ],
                highlight=_WAP_PROPERTIES,
            )
        )
    out.append(f"<p><b>{e(info.row_count)}</b> rows; {e(info.snapshot_count)} snapshot(s)</p>")
    if p.ref.name != p.default_branch:
        out.append(f"<h2>Compared with {e(p.default_branch)}</h2>")
        if p.versus_default is None:
            out.append(f"<p>Same table state as on {e(p.default_branch)}.</p>")
        else:
            out.append(_table_diff(p.versus_default, p.ref.name, p.default_branch))
    out.append(
        "<h2>Schema</h2><table><tr><th>id</th><th>column</th><th>type</th><th>required</th>"
        "<th>doc</th></tr>"
        + "".join(
            f"<tr><td>{e(c.field_id)}</td><td>{e(c.name)}</td><td>{e(c.type)}</td>"
            f"<td>{'yes' if c.required else ''}</td><td>{_cell(c.doc)}</td></tr>"
            for c in info.columns
        )
        + f"</table><p class=muted>partitioned by {e(info.partition_spec)}; "
        f"metadata <code>{e(info.metadata_location)}</code></p>"
    )
    shown = rows.num_rows if rows is not None else 0
    out.append(f"<h2>First {e(shown)} rows</h2>{rows_table(rows)}")
    query = first_rows_query(".".join(p.key), 100)
    if query is not None:
        out.append(
            f'<p class="muted">More with SQL: <code>wap query {e(p.ref.name)} '
            f'"{e(query)}"</code></p>'
        )
    return "".join(out)


def _table_diff(d: TableDiff, ref: str, base: str) -> str:
    if d.error:
        return f'<p class="error">{e(d.error)}</p>'
    counts = _pairs(
        [
            (f"rows on {base}", "-" if d.base_rows is None else d.base_rows),
            (f"rows on {ref}", "-" if d.ref_rows is None else d.ref_rows),
            (f"wap.ingest-id on {base}", d.base_ingest),
            (f"wap.ingest-id on {ref}", d.ref_ingest),
        ]
    )
    out = [counts]
    if d.missing_count:
        out.append(
            f"<p>{e(base)} has {e(d.missing_count)} row(s) in data files that {e(ref)} lacks "
            f"({e(base)} moved since {e(ref)} forked).</p>"
        )
    if d.extra_rows is not None:
        shown = d.extra_rows.num_rows
        out.append(
            f"<h3>Rows {e(ref)} adds ({e(d.extra_count)}; first {e(shown)} shown)</h3>"
            + rows_table(d.extra_rows)
        )
    return "".join(out)


def _commit_row(ref: str, c: CommitView) -> str:
    return (
        f"<tr><td>{link(commits_url(ref, c.hash), c.hash[:12])}</td>"
        f"<td>{e(_first_line(c.message))}</td><td>{e(', '.join(c.authors))}</td>"
        f"<td>{e(c.commit_time or '')}</td></tr>"
    )


def render_log(p: LogPage) -> str:
    rows = "".join(_commit_row(p.ref.name, c) for c in p.commits)
    more = ""
    if p.next_token:
        more = f"<p>{link(commits_url(p.ref.name) + '?page=' + quote(p.next_token), 'older')}</p>"
    body = (
        f"<h1>Commits on {e(p.ref.name)}</h1>{_head_line(p.ref)}"
        "<table><tr><th>hash</th><th>message</th><th>author</th><th>time</th></tr>"
        f"{rows}</table>{more}"
    )
    return page(f"commits on {p.ref.name}", body, p.ref)


def render_commit(p: CommitPage) -> str:
    c = p.commit
    parents = ", ".join(link(commits_url(p.ref.name, h), h[:12]) for h in c.parents) or "none"
    ops = "".join(
        f"<tr><td>{e(kind)}</td><td>"
        + (link(content_url(p.ref.name, key), ".".join(key)) if kind == "PUT" else e(".".join(key)))
        + f"</td><td>{e(ctype or '')}</td></tr>"
        for kind, key, ctype in c.operations
    )
    props = [(k, ", ".join(v)) for k, v in sorted(c.properties.items())]
    body = (
        f"<h1>Commit <code>{e(c.hash)}</code></h1>"
        f"<p>on {link(commits_url(p.ref.name), p.ref.name)}; parents {parents}</p>"
        f"<pre>{e(c.message)}</pre>"
        + _pairs(
            [
                ("authors", ", ".join(c.authors)),
                ("committer", c.committer),
                ("commit time", c.commit_time),
                ("author time", c.author_time),
                *props,
            ],
            highlight=tuple(k for k, _ in props if k.startswith("wap.")),
        )
        + "<h2>Operations</h2><table><tr><th>op</th><th>key</th><th>content</th></tr>"
        + f"{ops}</table>"
    )
    return page(f"commit {c.hash[:12]}", body, p.ref)


def render_diff(p: DiffPage) -> str:
    parts = [
        f"<h1>{e(p.ref.name)} against {e(p.base.name)}</h1>",
        _head_line(p.ref),
        _head_line(p.base),
    ]
    if not p.tables and not p.other:
        parts.append(f"<p>No differences: {e(p.ref.name)} holds what {e(p.base.name)} holds.</p>")
    for d in p.tables:
        parts.append(
            f"<h2>{link(content_url(p.ref.name, d.key), '.'.join(d.key))} "
            f"<span class=muted>{e(d.change)}</span></h2>" + _table_diff(d, p.ref.name, p.base.name)
        )
    if p.other:
        parts.append(
            "<h2>Other keys</h2><ul>"
            + "".join(
                f"<li>{e('.'.join(k))} <span class=muted>{e(kind)}, {e(change)}</span></li>"
                for k, change, kind in p.other
            )
            + "</ul>"
        )
    return page(f"{p.ref.name} vs {p.base.name}", "".join(parts), p.ref, p.base.name)


def render_error(status: int, message: str) -> str:
    body = f'<h1>{e(status)}</h1><p class="error">{e(message)}</p>'
    return page(f"{status}", body)
