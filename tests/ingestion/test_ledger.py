"""Ledger conditional writes and the per-table lock/queue, against moto's DynamoDB."""

from __future__ import annotations

import sys
import threading
import time

import boto3
import pytest
from moto import mock_aws

from ingestion.ledger import (
    LOCK_ACTIVE,
    LOCK_NOT_PENDING,
    LOCK_QUEUED,
    Changes,
    Ledger,
    Successor,
    batch_id,
)
from local.aws.moto_fidelity import make_dynamodb_requests_atomic
from local.aws.stack import create_ledger_table
from tests.fixtures.fake_aws import use_fake_credentials


@pytest.fixture(params=["moto", "home"])
def ledger(request, monkeypatch, tmp_path):
    """The ledger on moto's table, and on the table `wap` runs in a home: backed by the
    home's database (items read on first use, index queries from SQLite, every write
    written through), which must answer every test the same."""
    use_fake_credentials(monkeypatch, "us-east-1")
    make_dynamodb_requests_atomic()  # as DynamoDB itself: condition and write in one step
    with mock_aws():
        create_ledger_table(boto3.client("dynamodb"), "ledger")
        if request.param == "moto":
            yield Ledger("ledger")
            return
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        from wap.runtime.ledger_db import LedgerDatabase, LedgerJournal, pk_key

        database = LedgerDatabase(tmp_path / "ledger.sqlite")
        journal = LedgerJournal(database, "ledger")
        backend = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        journal.attach(backend)
        journal.install()
        try:
            yield Ledger("ledger")
            # Written through: every item moto holds is the database's, and back.
            table = backend.get_table("ledger")
            for key, item in dict.items(table.items):
                assert database.get(pk_key(key.value)) == item.to_json()["Attributes"]
            for stored in database.items():
                loaded = backend.get_item("ledger", {"pk": stored["pk"]})
                assert loaded is not None and loaded.to_json()["Attributes"] == stored
        finally:
            journal.uninstall()
            database.close()


def test_create_ingest_is_a_conditional_put(ledger):
    assert ledger.create_ingest("a" * 16, {"table": "s.t", "status": "RECEIVED"})
    assert not ledger.create_ingest("a" * 16, {"table": "other.t", "status": "REJECTED"})
    record = ledger.get_ingest("a" * 16)
    assert record.table == "s.t" and record.status == "RECEIVED"


def test_concurrent_creates_have_exactly_one_winner(ledger):
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def create(i: int) -> None:
        barrier.wait()
        results.append(ledger.create_ingest("b" * 16, {"status": "RECEIVED", "n": i}))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]


def test_update_ingest_respects_the_expected_status(ledger):
    ledger.create_ingest("c" * 16, {"status": "RUNNING", "attempts": 1})
    assert not ledger.update_ingest("c" * 16, {"status": "PUBLISHED"}, only_if_status={"QUEUED"})
    assert ledger.get_ingest("c" * 16).status == "RUNNING"
    assert ledger.update_ingest(
        "c" * 16, {"status": "PUBLISHED", "attempts": 2, "error": None}, only_if_status={"RUNNING"}
    )
    record = ledger.get_ingest("c" * 16)
    assert record.status == "PUBLISHED" and record.attempts == 2
    assert not ledger.update_ingest("d" * 16, {"status": "PUBLISHED"})  # no such ingest


def test_update_ingest_only_if_a_field_is_not_set_yet(ledger):
    ledger.create_ingest("f" * 16, {"status": "QUEUED"})
    first, later = "2026-11-27T12:00:00+00:00", "2026-11-27T12:05:00+00:00"
    unset = ("blocked_alerted_at", None)
    assert ledger.update_ingest("f" * 16, {"blocked_alerted_at": first}, only_if=unset)
    assert not ledger.update_ingest("f" * 16, {"blocked_alerted_at": later}, only_if=unset)
    assert ledger.get_ingest("f" * 16).blocked_alerted_at == first


def test_set_once_keeps_the_first_value(ledger):
    ledger.create_ingest("e" * 16, {"status": "RECEIVED"})
    assert ledger.set_once("e" * 16, "branch", "wap_a") == "wap_a"
    assert ledger.set_once("e" * 16, "branch", "wap_b") == "wap_a"


def _pending(ledger, table: str, *ids: str) -> None:
    """Ingest records that may take a lock (the trigger records before it acquires)."""
    for iid in ids:
        ledger.create_ingest(iid, {"table": table, "status": "RECEIVED"})


def test_lock_queues_in_arrival_order_and_hands_over_on_release(ledger):
    _pending(ledger, "s.t", "1" * 16, "2" * 16, "3" * 16, "5" * 16)
    _pending(ledger, "s.u", "4" * 16)
    assert ledger.acquire_or_enqueue("s.t", "1" * 16) == LOCK_ACTIVE
    assert ledger.acquire_or_enqueue("s.t", "2" * 16) == LOCK_QUEUED
    assert ledger.acquire_or_enqueue("s.t", "3" * 16) == LOCK_QUEUED
    # Repeats (retried triggers) change nothing.
    assert ledger.acquire_or_enqueue("s.t", "1" * 16) == LOCK_ACTIVE
    assert ledger.acquire_or_enqueue("s.t", "2" * 16) == LOCK_QUEUED
    assert ledger.get_lock("s.t").queue == ["2" * 16, "3" * 16]
    # Another table is independent.
    assert ledger.acquire_or_enqueue("s.u", "4" * 16) == LOCK_ACTIVE

    assert ledger.release("s.t", "1" * 16) == Successor("2" * 16, ("2" * 16,))
    # A retried finish sees the same successor.
    assert ledger.release("s.t", "1" * 16) == Successor("2" * 16, ("2" * 16,))
    assert ledger.get_lock("s.t").active == "2" * 16
    assert ledger.release("s.t", "3" * 16) is None  # not the holder: dropped from the queue only
    assert ledger.get_lock("s.t").queue == []
    assert ledger.release("s.t", "2" * 16) is None
    lock = ledger.get_lock("s.t")
    assert lock.active is None and lock.queue == []
    assert ledger.acquire_or_enqueue("s.t", "5" * 16) == LOCK_ACTIVE


def test_a_release_hands_the_table_to_a_batch_of_the_queue_head(ledger):
    ids = [str(i) * 16 for i in range(1, 6)]
    _pending(ledger, "s.t", *ids)
    for ingest in ids:
        ledger.acquire_or_enqueue("s.t", ingest)

    handed = ledger.release("s.t", ids[0], take=lambda queue: 3)
    assert handed.members == tuple(ids[1:4]) and handed.is_batch
    version = ledger.get_lock("s.t").version - 1  # the version the release read
    assert handed.id == batch_id("s.t", ids[1:4], version) and handed.id not in ids
    assert ledger.release("s.t", ids[0], take=lambda queue: 1) == handed  # a retry: the same
    lock = ledger.get_lock("s.t")
    assert (lock.active, lock.batch, lock.queue) == (handed.id, ids[1:4], ids[4:])
    # A member's duplicate event neither queues it again nor takes the table.
    assert ledger.acquire_or_enqueue("s.t", ids[2]) == LOCK_QUEUED
    assert ledger.get_lock("s.t").queue == ids[4:]

    # A split puts members back at the head, ahead of what queued meanwhile.
    after = ledger.release("s.t", handed.id, take=lambda queue: 1, requeue=[ids[3], ids[1]])
    assert after == Successor(ids[3], (ids[3],))
    lock = ledger.get_lock("s.t")
    assert (lock.active, lock.batch, lock.queue) == (ids[3], [], [ids[1], ids[4]])


def test_concurrent_acquires_give_one_holder_and_queue_everyone_else(ledger):
    ids = [f"{i:016x}" for i in range(10)]
    _pending(ledger, "s.t", *ids)
    answers: dict[str, str] = {}
    barrier = threading.Barrier(len(ids))

    def acquire(iid: str) -> None:
        barrier.wait()
        answers[iid] = ledger.acquire_or_enqueue("s.t", iid)

    threads = [threading.Thread(target=acquire, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    holders = [i for i, a in answers.items() if a == LOCK_ACTIVE]
    assert len(holders) == 1
    lock = ledger.get_lock("s.t")
    assert lock.active == holders[0]
    assert sorted(lock.queue) == sorted(set(ids) - set(holders))
    # Draining the queue visits every ingest exactly once, in queue order.
    order, current = [], holders[0]
    while current:
        order.append(current)
        successor = ledger.release("s.t", current)
        current = successor.id if successor else None
    assert order == holders + lock.queue


def test_list_ingests_filters_by_table_and_status(ledger):
    ledger.create_ingest("1" * 16, {"table": "s.t", "status": "PUBLISHED"})
    ledger.create_ingest("2" * 16, {"table": "s.t", "status": "AUDIT_FAILED"})
    ledger.create_ingest("3" * 16, {"table": "s.u", "status": "AUDIT_FAILED"})
    ledger.create_ingest("4" * 16, {"table": "s.t", "status": "RECEIVED"})
    ledger.acquire_or_enqueue("s.t", "4" * 16)
    assert {r.ingest_id for r in ledger.list_ingests(statuses={"AUDIT_FAILED"})} == {
        "2" * 16,
        "3" * 16,
    }
    assert {r.ingest_id for r in ledger.list_ingests(table="s.t")} == {"1" * 16, "2" * 16, "4" * 16}
    assert [lock.table for lock in ledger.list_locks()] == ["s.t"]


def test_a_finished_ingest_cannot_take_the_lock_again(ledger):
    """A duplicate event that read RECEIVED before the ingest finished must not re-take the
    table: the ingest's status is checked in the same transaction as the lock write."""
    _pending(ledger, "s.t", "1" * 16)
    assert ledger.acquire_or_enqueue("s.t", "1" * 16) == LOCK_ACTIVE
    ledger.update_ingest("1" * 16, {"status": "PUBLISHED"})
    assert ledger.release("s.t", "1" * 16) is None

    assert ledger.acquire_or_enqueue("s.t", "1" * 16) == LOCK_NOT_PENDING
    lock = ledger.get_lock("s.t")
    assert lock.active is None and lock.queue == []


def test_the_active_ingest_holds_a_lease_that_expires_unless_renewed(ledger):
    from datetime import timedelta

    from ingestion.naming import utcnow

    _pending(ledger, "s.t", "1" * 16, "2" * 16)
    ledger.acquire_or_enqueue("s.t", "1" * 16)
    lock = ledger.get_lock("s.t")
    now = utcnow()
    assert not lock.lease_expired(now)
    assert lock.lease_expired(now + timedelta(hours=5))  # the default lease is 4 h
    ledger.acquire_or_enqueue("s.t", "2" * 16)
    assert ledger.renew_lease("s.t", "1" * 16)
    assert not ledger.renew_lease("s.t", "2" * 16)  # queued, not the holder
    assert ledger.release("s.t", "1" * 16).id == "2" * 16
    assert not ledger.get_lock("s.t").lease_expired(now)  # the successor got a fresh lease


def test_final_records_expire_and_are_indexed_for_the_sweeper(ledger):
    from ingestion.naming import utcnow

    _pending(ledger, "s.t", "1" * 16, "2" * 16)
    ledger.update_ingest("1" * 16, {"status": "PUBLISHED"})
    record = ledger.get_ingest("1" * 16)
    assert record.expires_at > utcnow().timestamp() + 30 * 86400
    assert [r.ingest_id for r in ledger.due_for_sweep(utcnow())] == ["1" * 16]
    ledger.swept("1" * 16)
    assert ledger.due_for_sweep(utcnow()) == []
    assert ledger.get_ingest("2" * 16).expires_at is None  # not final: kept


def test_listings_query_indexes_and_never_scan(ledger):
    """The sweeper's and the CLI's reads must not grow with the table's history."""
    import boto3

    from ingestion.naming import utcnow

    calls: list[str] = []
    resource = boto3.resource("dynamodb")
    resource.meta.client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: calls.append(model.name)
    )
    indexed = Ledger("ledger", dynamodb_resource=resource)
    _pending(indexed, "s.t", "1" * 16)
    indexed.acquire_or_enqueue("s.t", "1" * 16)
    calls.clear()
    indexed.list_ingests()
    indexed.list_ingests(table="s.t")
    indexed.list_ingests(statuses={"RECEIVED"})
    indexed.with_status("RECEIVED")
    indexed.list_locks()
    indexed.due_for_sweep(utcnow())
    assert calls and set(calls) == {"Query"}, calls
    assert "Scan" not in calls


def test_a_transaction_conflict_is_contention_and_is_retried(ledger, monkeypatch):
    """Real DynamoDB cancels a transaction that meets another on the same item
    (CancellationReasons [None, TransactionConflict]); moto serialises writes and never
    does, so the conflict is injected."""
    from botocore.exceptions import ClientError

    _pending(ledger, "s.t", "1" * 16)
    original = ledger._client.transact_write_items
    conflicts = {"left": 2}

    def conflicting(**kwargs):
        if conflicts["left"]:
            conflicts["left"] -= 1
            raise ClientError(
                {
                    "Error": {
                        "Code": "TransactionCanceledException",
                        "Message": "Transaction cancelled",
                    },
                    "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
                },
                "TransactWriteItems",
            )
        return original(**kwargs)

    monkeypatch.setattr(ledger._client, "transact_write_items", conflicting)
    monkeypatch.setattr(ledger.store, "sleep", lambda seconds: None)
    assert ledger.acquire_or_enqueue("s.t", "1" * 16) == LOCK_ACTIVE
    assert conflicts["left"] == 0


def test_reads_during_concurrent_updates_see_whole_items(ledger):
    """DynamoDB serves a query while an item changes; moto copied the item mid-update and
    raised 'dictionary changed size during iteration' (seen in CI polling the ledger)."""
    ledger.create_ingest("e" * 16, {"table": "s.t", "status": "RUNNING"})
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn() -> None:
        i = 0
        while not stop.is_set():
            size = 10 + 30 * (i % 2)  # grows and shrinks the item
            fields = {f"f{n}": n for n in range(size)}
            stale = {f"f{n}": None for n in range(size, 40)}
            try:
                ledger.update_ingest("e" * 16, Changes({**fields, **stale}))  # undeclared
            except BaseException as exc:
                errors.append(exc)
            i += 1
            time.sleep(0)  # let readers in between updates, as a busy table would

    writer = threading.Thread(target=churn)
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, to provoke the race in a few reads
    writer.start()
    try:
        deadline = time.monotonic() + 2  # unserialised, moto failed within about a second
        while time.monotonic() < deadline:
            assert [r.ingest_id for r in ledger.list_ingests()] == ["e" * 16]
            assert ledger.get_ingest("e" * 16).status == "RUNNING"
    finally:
        stop.set()
        writer.join()
        sys.setswitchinterval(switch_interval)
    assert not errors


def test_queues_name_each_waiting_table_with_its_depth_and_oldest_wait(ledger):
    from datetime import timedelta

    from ingestion.naming import parse_iso

    for iid in ("f" * 16, "1" * 16, "2" * 16):
        ledger.create_ingest(iid, {"table": "s.t", "status": "RECEIVED"})
        ledger.acquire_or_enqueue("s.t", iid)
    ledger.create_ingest("3" * 16, {"table": "s.u", "status": "RECEIVED"})
    ledger.acquire_or_enqueue("s.u", "3" * 16)  # active, nothing waits behind it
    oldest_waiting = parse_iso(ledger.get_ingest("1" * 16).created_at)

    [queue] = ledger.queues(oldest_waiting + timedelta(minutes=5))

    assert (queue.table, queue.depth) == ("s.t", 2)
    assert queue.oldest_age_seconds == pytest.approx(300)


def test_many_records_are_read_and_changed_in_batches_each_under_its_condition(ledger):
    ids = [f"{i:016x}" for i in range(1, 151)]  # more than one request's worth
    for ingest in ids:
        ledger.create_ingest(ingest, {"table": "s.t", "status": "QUEUED", "batch_id": "b" * 16})
    ledger.update_ingest(ids[7], {"status": "PUBLISHED"})  # settled already
    ledger.update_ingest(ids[120], {"batch_id": "c" * 16})  # in another batch

    found = ledger.get_ingests([*ids, "f" * 16])
    assert set(found) == set(ids) and found[ids[0]].status == "QUEUED"

    changed = ledger.update_ingests(
        {
            i: Changes({"n": n}, status="RUNNING")  # n: undeclared
            for n, i in enumerate(ids)
        },
        only_if_status={"QUEUED"},
        only_if=("batch_id", "b" * 16),
    )
    assert changed == set(ids) - {ids[7], ids[120]}
    after = ledger.get_ingests(ids)
    assert after[ids[7]].status == "PUBLISHED" and after[ids[120]].status == "QUEUED"
    assert after[ids[149]].status == "RUNNING" and after[ids[149]].extra["n"] == 149


# Multi-table runs (issue 27): two datasets naming {A, B} in opposite orders and
# single-table ingests of A and B, arriving and finishing in random interleavings.
RUNS = {
    "d1": ["t.a", "t.b"],
    "d2": ["t.b", "t.a"],
    "s1": ["t.a"],
    "s2": ["t.b"],
    "s3": ["t.a"],
    "d3": ["t.b", "t.a"],
}


def _acquire_as_listed(ledger, tables, holder):
    """What `acquire_in_order` must not be: tables taken in the order a run lists them."""
    for table in tables:
        if ledger.acquire_or_enqueue(table, holder) != LOCK_ACTIVE:
            return table
    return None


def _interleave(ledger, seed: int, acquire) -> tuple[list[str], set[str]]:
    """Run RUNS to the end in one random interleaving; (finished, stuck) run ids."""
    import random

    rng = random.Random(seed)
    ids = {run: f"{seed:04x}{index:012x}" for index, run in enumerate(RUNS)}
    run_of = {ingest: run for run, ingest in ids.items()}
    arrivals = list(RUNS)
    rng.shuffle(arrivals)
    running: set[str] = set()
    finished: list[str] = []

    def advance(run: str) -> None:
        if acquire(ledger, RUNS[run], ids[run]) is None:
            held = {t for other in running for t in RUNS[other]}
            assert not held & set(RUNS[run]), f"{run} shares a table with a running run"
            running.add(run)

    while arrivals or running:
        if arrivals and (not running or rng.random() < 0.5):
            run = arrivals.pop()
            ledger.create_ingest(ids[run], {"status": "RECEIVED", "table": RUNS[run][0]})
            advance(run)
            continue
        run = rng.choice(sorted(running))
        running.discard(run)
        finished.append(run)
        ledger.update_ingest(ids[run], {"status": "PUBLISHED"})
        for table in rng.sample(RUNS[run], len(RUNS[run])):
            successor = ledger.release(table, ids[run])
            if successor is not None:
                advance(run_of[successor.id])
    return finished, set(RUNS) - set(finished)


def test_multi_table_runs_take_tables_in_one_order_and_never_deadlock(ledger):
    for seed in range(12):
        finished, stuck = _interleave(ledger, seed, Ledger.acquire_in_order)

        assert not stuck, f"seed {seed}: {sorted(stuck)} wait on each other for ever"
        assert sorted(finished) == sorted(RUNS)
        for table in ("t.a", "t.b"):
            lock = ledger.get_lock(table)
            assert lock.active is None and lock.queue == [], (seed, lock)


def test_the_interleaving_test_finds_the_deadlock_of_tables_taken_as_listed(ledger):
    # The control: the same interleavings with each run's own order do deadlock.
    stuck = [seed for seed in range(12) if _interleave(ledger, seed, _acquire_as_listed)[1]]
    assert stuck


def test_a_status_change_the_lifecycle_does_not_allow_is_refused(ledger):
    """The ledger's writes check the lifecycle's table (in the write's own condition): a
    change not in it raises and writes nothing, whether or not the caller named the status
    it expects; a caller whose expected status is gone still gets a plain False."""
    from contracts.lifecycle import TransitionError

    ledger.create_ingest("a" * 16, {"table": "s.t", "status": "PUBLISHED"})
    with pytest.raises(TransitionError, match="from PUBLISHED to RUNNING"):
        ledger.update_ingest("a" * 16, {"status": "RUNNING", "error": "late"})
    with pytest.raises(TransitionError, match="from PUBLISHED to QUEUED"):
        ledger.update_ingest("a" * 16, {"status": "QUEUED"}, only_if_status={"PUBLISHED"})
    with pytest.raises(TransitionError, match="from PUBLISHED to REJECTED"):
        ledger.update_ingests(
            {"a" * 16: {"status": "REJECTED"}}, only_if_status={"PUBLISHED", "RUNNING"}
        )
    with pytest.raises(TransitionError, match="'PUBLISHD' is not a status"):
        ledger.update_ingest("a" * 16, {"status": "PUBLISHD"})
    record = ledger.get_ingest("a" * 16)
    assert record.status == "PUBLISHED" and record.error is None

    ledger.create_ingest("b" * 16, {"table": "s.t", "status": "RECEIVED"})
    assert not ledger.update_ingest(
        "b" * 16, {"status": "PUBLISHED"}, only_if_status={"RUNNING"}
    )  # someone else's: no error
    assert ledger.get_ingest("b" * 16).status == "RECEIVED"


def test_every_status_change_the_lifecycle_lists_is_accepted_and_no_other(ledger):
    from contracts.lifecycle import TRANSITIONS, Status, TransitionError

    for number, (source, target) in enumerate(
        (source, target) for source in Status for target in Status
    ):
        iid = f"{number:016x}"
        ledger.create_ingest(iid, {"table": "s.t", "status": source.value})
        if target in TRANSITIONS[source] or target == source:  # (keeping it is no change)
            assert ledger.update_ingest(iid, {"status": target.value}), (source, target)
            assert ledger.get_ingest(iid).status == target
        else:
            with pytest.raises(TransitionError):
                ledger.update_ingest(iid, {"status": target.value})
            assert ledger.get_ingest(iid).status == source


def test_an_update_names_only_fields_the_records_declare(ledger):
    """A misspelt field fails where the change is made, before anything is written; an
    attribute the records do not declare is set only as such (`extra`)."""
    ledger.create_ingest("a" * 16, {"table": "s.t", "status": "RECEIVED"})
    with pytest.raises(TypeError, match="not a field of a ledger record: stauts"):
        ledger.update_ingest("a" * 16, stauts="RUNNING")
    with pytest.raises(TypeError, match="not a field of a ledger record: finised_at"):
        ledger.update_ingest("a" * 16, {"status": "RUNNING", "finised_at": "now"})
    with pytest.raises(TypeError, match="not a field of a ledger record: eror"):
        ledger.update_ingests({"a" * 16: {"eror": "x"}}, only_if_status={"RECEIVED"})
    with pytest.raises(TypeError, match="declared fields passed as extra: status"):
        Changes({"status": "RUNNING"})
    record = ledger.get_ingest("a" * 16)
    assert record.status == "RECEIVED" and not record.extra

    assert ledger.update_ingest("a" * 16, Changes({"files_after": 3}, error="kept"))
    record = ledger.get_ingest("a" * 16)
    assert record.error == "kept" and record.extra == {"files_after": 3}
