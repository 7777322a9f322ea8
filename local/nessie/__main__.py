"""`python -m local.nessie serve --port 19120 --db FILE [--host 127.0.0.1]`."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .runner import serve_forever


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m local.nessie", description="Nessie-compatible catalog server (SQLite)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve Nessie API v1 and v2")
    serve.add_argument("--port", type=int, default=19120)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--db", required=True, help="SQLite file (created if missing)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error("--port must be between 0 and 65535")
    db = Path(args.db)
    db.parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger(__name__).info(
        "Nessie API v2 on http://%s:%d/api/v2, db %s", args.host, args.port, db
    )
    serve_forever(str(db), args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
