"""The README stays a quick start (internals live in docs/) and lists every command."""

from __future__ import annotations

import re

from tests.fixtures.paths import REPO
from wap.cli import app

README = (REPO / "README.md").read_text()


def test_the_readme_is_at_most_250_lines():
    assert len(README.splitlines()) <= 250


def test_the_readmes_command_table_lists_every_command():
    listed = set(re.findall(r"^\| `wap ([\w-]+)", README, re.M))
    commands = {command.name or command.callback.__name__ for command in app.registered_commands}
    assert commands - listed == set()


def test_every_doc_the_readme_links_exists():
    links = re.findall(r"\]\(((?:docs|tables|spark_jobs)/[^)#]+)", README)
    assert links and [link for link in links if not (REPO / link).is_file()] == []


def test_the_docs_run_the_maintenance_function_asynchronously():
    # Synchronously, the CLI gives up reading after 60 s and invokes the function again
    # (issue 42); asynchronously, Lambda queues one run (no retries: its EventInvokeConfig).
    docs = [README, *((REPO / "docs").glob("*.md"))]
    texts = [doc if isinstance(doc, str) else doc.read_text() for doc in docs]
    invokes = [
        " ".join(match.split())
        for text in texts
        for match in re.findall(r"aws lambda invoke[^`\n]*(?:\n[^`\n]*)?", text)
        if "aint" in match or "MaintenanceFunctionName" in match
    ]
    assert invokes and all("--invocation-type Event" in command for command in invokes), invokes
