"""Ingestion never waits on lineage (issue 42): a receiver that accepts and never answers
costs one short timeout per invocation, and what one invocation spends on lineage is
bounded (ingestion/lineage/transport.py). Short timeouts and a ticking clock: nothing
here waits seconds."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from ingestion.lineage import transport
from ingestion.log import logger
from local.lineage_receiver import LineageReceiver
from tests.fixtures.lineage import metrics_log, not_sent
from tests.ingestion.test_lineage_transport import event, settings

QUICK = transport.RetryPolicy(tries=3, base_delay_seconds=0.5, timeout_seconds=0.05)


class SilentReceiver:
    """Accepts every connection and never answers (a hung receiver)."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._socket.settimeout(0.1)
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                continue
            self.accepted.append(connection)

    def connections(self, at_least: int) -> int:
        """How many connections were accepted, once `at_least` were (or 2 s passed): the
        client's short timeout can end before this thread has taken the connection from
        the backlog."""
        deadline = time.monotonic() + 2
        while len(self.accepted) < at_least and time.monotonic() < deadline:
            time.sleep(0.005)
        return len(self.accepted)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for connection in self.accepted:
            connection.close()
        self._socket.close()


@pytest.fixture
def silent():
    receiver = SilentReceiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def counted(monkeypatch):
    return metrics_log(monkeypatch)


def test_a_receiver_that_never_answers_costs_one_timeout_and_the_rest_are_not_tried(
    silent, counted
):
    waits: list[float] = []
    began = time.monotonic()

    sent = transport.emit_quietly(
        settings(lineage_url=silent.url),
        [event() for _ in range(20)],
        policy=QUICK,
        sleep=waits.append,
    )
    took = time.monotonic() - began

    assert sent == 0
    assert silent.connections(1) == 1 and waits == []  # no retry of a hung receiver
    assert not_sent(counted) == 20  # every event counted as not sent
    assert took < 2


def test_within_one_invocation_the_loops_events_share_the_bound(silent, counted):
    # finish and the sweeper send one event per ingest in a loop: one emit call each.
    logger.append_keys(function_request_id="request-1")
    try:
        for _ in range(5):
            transport.emit_quietly(settings(lineage_url=silent.url), [event()], policy=QUICK)
        assert silent.connections(1) == 1
        logger.append_keys(function_request_id="request-2")  # the next invocation tries again
        transport.emit_quietly(settings(lineage_url=silent.url), [event()], policy=QUICK)
        assert silent.connections(2) == 2
    finally:
        logger.remove_keys(["function_request_id"])
    assert not_sent(counted) == 6


def test_what_one_invocation_spends_on_lineage_is_bounded(monkeypatch, counted):
    receiver = LineageReceiver(api_key="right").start()  # answers 401 at once: retried
    ticks = iter(range(0, 10_000, 2))  # each request "takes" 2 s
    monkeypatch.setattr(transport, "_clock", lambda: float(next(ticks)))
    waits: list[float] = []
    try:
        sent = transport.emit_quietly(
            settings(lineage_url=receiver.url),
            [event() for _ in range(10)],
            policy=transport.RetryPolicy(tries=2, base_delay_seconds=1.0),
            sleep=waits.append,
        )
    finally:
        receiver.stop()
    assert sent == 0
    # 2 s a request and 1 s a wait: 10 s (INVOCATION_SECONDS) go by the fourth request.
    assert transport.INVOCATION_SECONDS == 10.0
    assert len(receiver.refused) == 4 and waits == [1.0, 1.0]
    assert not_sent(counted) == 10
