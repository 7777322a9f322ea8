"""The lifecycle's statuses and allowed changes (contracts/lifecycle.py)."""

from __future__ import annotations

import json

from contracts.lifecycle import (
    FAILED_STATUSES,
    FINAL_STATUSES,
    INITIAL_STATUSES,
    PENDING_STATUSES,
    TERMINAL_STATUSES,
    TRANSITIONS,
    Status,
    allowed,
    predecessors,
)


def test_a_status_is_its_word_wherever_it_goes():
    assert Status.RUNNING == "RUNNING" and "RUNNING" in PENDING_STATUSES | {Status.RUNNING}
    assert f"{Status.AUDIT_FAILED}" == str(Status.AUDIT_FAILED) == "AUDIT_FAILED"
    assert json.dumps({"status": Status.PUBLISHED}) == '{"status": "PUBLISHED"}'


def test_every_status_is_reachable_and_every_run_can_end():
    reached, frontier = set(INITIAL_STATUSES), list(INITIAL_STATUSES)
    while frontier:
        for target in TRANSITIONS[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(Status)
    for status in set(Status) - TERMINAL_STATUSES:  # nothing waits forever
        assert TRANSITIONS[status] & TERMINAL_STATUSES, status
    for status in TERMINAL_STATUSES - FAILED_STATUSES:  # published, discarded, split: over
        assert not TRANSITIONS[status], status


def test_the_groups_and_the_table_agree():
    assert set(TRANSITIONS) == set(Status)
    assert set(FINAL_STATUSES) == FAILED_STATUSES | {Status.PUBLISHED}
    assert all(allowed(source, target) for target in Status for source in predecessors(target))
    assert not allowed(None, "RUNNING") and not allowed("PUBLISHED", "RUNNING")
    assert all(allowed(status, status) for status in Status)  # keeping it changes nothing
    # Only a person's decision, or the sweeper's, changes a failure: publish or discard it.
    for failed in FAILED_STATUSES:
        assert TRANSITIONS[failed] <= {Status.PUBLISHED, Status.DISCARDED}
