"""Both S3 event shapes decode to the same object (recorded events in tests/fixtures/events)."""

from __future__ import annotations

import json

import pytest

from ingestion.exceptions import InvalidEventError
from ingestion.naming import ingest_id
from lambdas.trigger.events import parse_event
from tests.fixtures.paths import EVENTS


def load(name: str) -> dict:
    return json.loads((EVENTS / name).read_text())


def test_s3_notification_keys_are_url_decoded_plus_is_space():
    [obj] = parse_event(load("s3_notification_put.json"))
    assert obj.bucket == "wap-source"
    assert obj.key == "sales/orders/2026-11-22/orders batch 1+2.parquet"
    assert obj.version_id == "096fKKXTRTtl3on89fVO.nfljtsv6qko"
    assert obj.size == 2048


def test_eventbridge_keys_are_taken_as_delivered():
    [obj] = parse_event(load("eventbridge_object_created.json"))
    # The literal "+" must stay a "+": EventBridge does not URL-encode keys.
    assert obj.key == "sales/orders/2026-11-22/orders batch 1+2.parquet"
    assert obj.etag == "d41d8cd98f00b204e9800998ecf8427e"


def test_both_shapes_of_the_same_upload_give_the_same_ingest_id():
    [a] = parse_event(load("s3_notification_put.json"))
    [b] = parse_event(load("eventbridge_object_created.json"))
    assert ingest_id(a.bucket, a.key, a.version) == ingest_id(b.bucket, b.key, b.version)
    assert ingest_id(a.bucket, a.key, a.version) == "e809019e39994974"


def test_unversioned_objects_use_the_etag_and_deletions_are_skipped():
    objects = parse_event(load("s3_notification_unversioned_multi.json"))
    assert [o.key for o in objects] == [
        "sales/orders/_SUCCESS",
        "sales/customers/part-00000.parquet",
    ]
    assert objects[1].version == "9b2cf535f27731c974343645a3985328-2"
    assert ingest_id("wap-source", objects[1].key, objects[1].version) == "a887e1ce64cec445"


@pytest.mark.parametrize("name", ["s3_test_event.json", "eventbridge_object_deleted.json"])
def test_events_without_created_objects_yield_nothing(name):
    assert parse_event(load(name)) == []


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"Records": [{"eventSource": "aws:sqs"}]},
        {"source": "aws.s3", "detail-type": "Object Created", "detail": {"object": {}}},
    ],
)
def test_malformed_events_are_refused(event):
    with pytest.raises(InvalidEventError):
        parse_event(event)


def test_the_upload_time_is_the_events_time_in_both_shapes():
    # Where an ingest's time went starts at the upload (ingestion/time_split.py).
    [a] = parse_event(load("s3_notification_put.json"))
    [b] = parse_event(load("eventbridge_object_created.json"))
    assert a.uploaded_at == b.uploaded_at == "2026-11-22T10:15:00Z"
