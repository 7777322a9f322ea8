"""A small read-only web UI on the paths Nessie's own UI uses, served with the API.

Nessie's UI (projectnessie/nessie `ui/src/App.tsx`) routes `/tree/<ref>[/<namespace...>]`,
`/content/<ref>/<key...>` and `/commits/<ref>[/<hash>]`; links built for a deployed Nessie
(alerts, `wap show`, the dashboard) therefore open here unchanged. `/diff/<ref>` (what a
branch changed since it forked from main, i.e. against their merge base, with the rows it
adds) is ours; `<ref>` may be `name@hash`, the reference at one commit of its history
(merge parents included). Layout: `pages.py` gathers
the data (store + pyiceberg), `html.py` renders it escaped through the Jinja2 templates in
`templates/`, `routes.py` is the HTTP edge.
"""

from .routes import ui_routes

__all__ = ["ui_routes"]
