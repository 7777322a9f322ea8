"""pynessie 0.67 (API v1) drives references, commits, merges, diffs and logs."""

from __future__ import annotations

import pytest
from pynessie.error import (
    NessieConflictException,
    NessieContentNotFoundException,
    NessieReferenceAlreadyExistsException,
    NessieReferenceConflictException,
    NessieReferenceNotFoundException,
)
from pynessie.model import Branch, ContentKey, IcebergTable, Namespace, Put

from tests.fixtures.catalog_auth import harness_pynessie
from tests.fixtures.nessie_api import unique


@pytest.fixture
def client(nessie):
    return harness_pynessie(nessie)


def table(location: str, content_id: str | None = None) -> IcebergTable:
    return IcebergTable(content_id, location, 1, 0, 0, 0)


@pytest.fixture
def namespace(client) -> str:
    ns = unique("py")
    main = client.get_reference("main")
    client.commit(
        "main", main.hash_, "namespace", None, Put(ContentKey([ns]), Namespace(None, [ns]))
    )
    return ns


def test_create_list_commit_merge_delete(client, namespace):
    main = client.get_reference("main")
    name = unique("wap")
    created = client.create_branch(name, "main", main.hash_)
    assert created == Branch(name, main.hash_)
    assert name in [r.name for r in client.list_references().references]

    key = ContentKey([namespace, "orders"])
    after = client.commit(name, main.hash_, "add orders", "wap-bot", Put(key, table("s3://o/1")))
    assert after.name == name and after.hash_ != main.hash_
    stored = client.get_content(name, key)
    assert stored.metadata_location == "s3://o/1" and stored.id
    with pytest.raises(NessieContentNotFoundException) as missing:
        client.get_content("main", key)  # not on main yet
    assert missing.value.server_message == (
        f"Could not find content for key '{namespace}.orders' in reference 'main'."
    )

    entries = client.list_keys(name).entries
    assert [e.name.elements for e in entries if e.kind == "ICEBERG_TABLE"] == [
        [namespace, "orders"]
    ]
    diff = client.get_diff("main", name).diffs
    assert [
        (d.content_key.elements, d.from_content, d.to_content.metadata_location) for d in diff
    ] == [([namespace, "orders"], None, "s3://o/1")]
    log = list(client.get_log(name, max_records=1))
    assert [(e.commit_meta.message, e.commit_meta.author) for e in log] == [
        ("add orders", "wap-bot")
    ]

    merged = client.merge(name, "main", from_hash=after.hash_, old_hash=main.hash_)
    assert merged.was_applied and merged.was_successful
    assert client.get_reference("main").hash_ == merged.resultant_target_hash
    assert client.get_content("main", key).metadata_location == "s3://o/1"
    merge_commit = next(client.get_log("main", max_records=1))
    assert merge_commit.commit_meta.properties == {"_merge_parent": after.hash_}

    client.delete_branch(name, after.hash_)
    assert name not in [r.name for r in client.list_references().references]


def test_errors_map_to_pynessie_exceptions(client, namespace):
    main = client.get_reference("main")
    name = unique("err")
    client.create_branch(name, "main", main.hash_)
    with pytest.raises(NessieReferenceAlreadyExistsException) as exists:
        client.create_branch(name, "main", main.hash_)
    assert exists.value.server_message == f"Named reference '{name}' already exists."
    with pytest.raises(NessieReferenceNotFoundException):
        client.get_reference(unique("missing"))
    stale = client.commit(
        name, main.hash_, "move", None, Put(ContentKey([namespace, "x"]), table("s3://x"))
    )
    with pytest.raises(NessieReferenceConflictException) as conflict:
        client.delete_branch(name, main.hash_)
    assert conflict.value.server_message == (
        f"Named-reference '{name}' is not at expected hash '{main.hash_}', but at '{stale.hash_}'."
    )
    assert client.get_reference(name).hash_ == stale.hash_


def test_merge_conflict_is_reported_and_leaves_main_alone(client, namespace):
    key = ContentKey([namespace, "t"])
    main = client.commit(
        "main", client.get_reference("main").hash_, "create", None, Put(key, table("s3://t/0"))
    )
    table_id = client.get_content("main", key).id
    a, b = unique("a"), unique("b")
    client.create_branch(a, "main", main.hash_)
    client.create_branch(b, "main", main.hash_)
    client.commit(a, main.hash_, "a", None, Put(key, table("s3://t/a", table_id)))
    client.commit(b, main.hash_, "b", None, Put(key, table("s3://t/b", table_id)))
    client.merge(a, "main")
    main_after_a = client.get_reference("main").hash_
    with pytest.raises(NessieConflictException) as err:
        client.merge(b, "main")
    assert err.value.error_code == "REFERENCE_CONFLICT"
    assert client.get_reference("main").hash_ == main_after_a
    assert client.get_content("main", key).metadata_location == "s3://t/a"
