"""`python -m local.nessie serve --port 19120 --db FILE [--host 127.0.0.1] [--clients FILE]`.

The server authenticates and authorizes as Nessie with OIDC and the rules file
(contracts/catalog_authorization.properties): its identity provider (under /idp) has one
client per role, whose ids and secrets are written to `--clients` (default
`<db>.clients.json`, readable by this user only) for the callers of this machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from local.idp import PeopleError

from .runner import base_url, make_security, people_of, serve_forever


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m local.nessie", description="Nessie-compatible catalog server (SQLite)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve Nessie API v1 and v2")
    serve.add_argument("--port", type=int, default=19120)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--db", required=True, help="SQLite file (created if missing)")
    serve.add_argument(
        "--clients", help="where to write the role clients' credentials (JSON, mode 0600)"
    )
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error("--port must be between 0 and 65535")
    db = Path(args.db)
    db.parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger(__name__).info(
        "Nessie API v2 on http://%s:%d/api/v2, db %s", args.host, args.port, db
    )
    try:
        people = people_of(str(db))
    except PeopleError as exc:
        parser.error(str(exc))
    security = make_security(people=people)
    assert security is not None
    security.idp.bind(base_url(args.host, args.port))
    clients = Path(args.clients) if args.clients else db.with_name(db.name + ".clients.json")
    write_clients(clients, security.idp)
    logging.getLogger(__name__).info(
        "token endpoint %s, client credentials in %s", security.idp.token_endpoint, clients
    )
    serve_forever(str(db), args.host, args.port, security)
    return 0


def write_clients(path: Path, idp) -> None:
    """The token endpoint and every client's id, roles and secret, for this user only."""
    document = {
        "token_endpoint": idp.token_endpoint,
        "clients": {
            cid: {"client_secret": c.client_secret, "roles": list(c.roles)}
            for cid, c in idp.clients.items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(document, out, indent=2)


if __name__ == "__main__":
    sys.exit(main())
