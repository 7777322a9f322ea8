"""A function's log is the stdout of the process as the call finds it, as on Lambda."""

from __future__ import annotations

import io
import json
import sys

from ingestion import metrics
from ingestion.log import logger
from local.aws.lambda_dispatch import LambdaDispatcher


def _log_and_count(event, context):
    logger.info("handled", extra={"key": event["key"]})
    metrics.emit({"Published": 1}, table="logs.orders")
    return "ok"


def test_a_call_writes_to_the_current_stdout_not_one_closed_since_import(monkeypatch):
    # Powertools' handler keeps the stdout current when its module was imported: in one
    # process that runs many commands (the test suite, `wap`), one closed since.
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(logger.registered_handler, "stream", closed)
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    dispatcher = LambdaDispatcher({"trigger": _log_and_count})

    assert dispatcher.run_handler("trigger", {"key": "in/a.parquet"}) == "ok"
    assert dispatcher.invoke("trigger", {"key": "in/b.parquet"}) == ("ok", None)

    lines = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [line.get("key") for line in lines if line.get("message") == "handled"] == [
        "in/a.parquet",
        "in/b.parquet",
    ]
    assert [line["Published"] for line in lines if "_aws" in line] == [1, 1]
