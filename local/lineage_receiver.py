"""A local OpenLineage receiver: what Marquez's `POST /api/v1/lineage` does for our events.

It accepts a JSON run event (`201 Created`, as Marquez answers), refuses a body that is
not one (400 for JSON that does not parse, 422 for an event without the fields every run
event has), and with an API key configured, a request without `Authorization: Bearer
<key>` (401). Accepted events are kept in order and, with a directory, appended to one
file per run (`<runId>.jsonl`): the local mode's lineage, which `wap lineage` prints.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from local.serving import BackgroundServer

PATH = "/api/v1/lineage"
RUN_EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")


def run_file(directory: Path, run_id: str) -> Path:
    """Where the receiver keeps the events of run `run_id` (a UUID, so a safe file name)."""
    return Path(directory) / f"{uuid.UUID(run_id)}.jsonl"


def append_event(directory: Path, event: dict[str, Any]) -> Path:
    """Append `event` to its run's file under `directory`; returns the file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = run_file(directory, event["run"]["runId"])
    with path.open("a") as handle:
        handle.write(json.dumps(event, sort_keys=True) + "\n")
    return path


def read_run(directory: Path, run_id: str) -> list[dict[str, Any]]:
    """The events kept for run `run_id`, in arrival order (none: an empty list)."""
    path = run_file(directory, run_id)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def problems(event: Any) -> list[str]:
    """What keeps `event` from being an OpenLineage run event (the required fields)."""
    if not isinstance(event, dict):
        return ["the body is not a JSON object"]
    found = []
    for name in ("eventTime", "producer", "schemaURL"):
        if not isinstance(event.get(name), str) or not event[name]:
            found.append(f"{name} is required")
    if event.get("eventType") not in (None, *RUN_EVENT_TYPES):
        found.append(f"eventType {event.get('eventType')!r} is not a run state")
    run, job = event.get("run"), event.get("job")
    try:
        uuid.UUID(str((run or {}).get("runId")))
    except (AttributeError, ValueError):
        found.append("run.runId must be a UUID")
    if not isinstance(job, dict) or not all(
        isinstance(job.get(key), str) and job[key] for key in ("namespace", "name")
    ):
        found.append("job.namespace and job.name are required")
    return found


class LineageReceiver(BackgroundServer):
    """Start with `start()`; `url` is the base URL the OpenLineage client is given."""

    def __init__(
        self, directory: Path | None = None, *, api_key: str | None = None, port: int = 0
    ) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.api_key = api_key
        self.events: list[dict[str, Any]] = []
        self.refused: list[tuple[int, str]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, message = receiver._receive(self.path, self.headers, body)
                payload = json.dumps({"message": message} if message else {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._serve(Handler, port, "lineage-receiver")

    def events_of(self, run_id: str) -> list[dict[str, Any]]:
        """The accepted events of one run, in arrival order."""
        with self._lock:
            return [event for event in self.events if event["run"]["runId"] == run_id]

    def _receive(self, path: str, headers: Any, body: bytes) -> tuple[int, str | None]:
        if path.rstrip("/") != PATH:
            return self._refuse(404, f"no such endpoint: {path}")
        if self.api_key and headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._refuse(401, "missing or wrong API key")
        if headers.get("Content-Encoding"):
            return self._refuse(415, "compressed bodies are not accepted here")
        try:
            event = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return self._refuse(400, "the body is not JSON")
        found = problems(event)
        if found:
            return self._refuse(422, "; ".join(found))
        with self._lock:
            self.events.append(event)
            if self.directory is not None:
                append_event(self.directory, event)
        return 201, None

    def _refuse(self, status: int, message: str) -> tuple[int, str]:
        with self._lock:
            self.refused.append((status, message))
        return status, message
