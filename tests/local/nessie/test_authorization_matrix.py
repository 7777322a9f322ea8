"""Every kind of Nessie call the service makes, by every role: allowed exactly where the
rules say (contracts/catalog_authorization.properties), and every rule used.

`EXPECTED` is what each role is for, written from the roles' description (the rules file's
header); the server decides from the rules. A call the rules allow a role it is not meant
for, or refuse one it needs, fails here; so does a rule no call needed (remove it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest

from contracts.catalog_authorization import (
    JOB,
    MAINTENANCE,
    OPERATOR,
    PUBLISHER,
    READER,
    ROLES,
    TRIGGER,
    load_rules,
)
from ingestion.exceptions import NessieForbiddenError
from ingestion.nessie import MergeMeta, NessieClient
from tests.fixtures.catalog_auth import harness_client, role_client

EVERYONE = frozenset(ROLES)
NOBODY: frozenset[str] = frozenset()
_names = itertools.count()


@dataclass
class Setup:
    """What a call acts on, made by the harness before the role calls."""

    branch: str  # an ingest's wap_* branch holding one table commit
    head: str  # its head (the audited commit)
    table: str = "sales.orders"


def ingest_branch(server) -> Setup:
    harness = harness_client(server)
    name = f"wap_sales_orders_20261127T{next(_names):06d}_abcdef12"
    harness.ensure_branch_from_main(name)
    head = commit_table(server, harness_token(server), name, f"s3://w/{name}.json")
    return Setup(name, head)


def harness_token(server) -> str:
    from tests.fixtures.catalog_auth import HARNESS, harness_credentials

    harness_credentials(server)
    return server.idp.issue(HARNESS)


def commit_table(server, token: str, branch: str, location: str) -> str:
    """Put `sales.orders` (and its namespace, when missing) on `branch` as Iceberg's
    NessieCatalog does (API v2); the new head. Raises for any refusal."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.api_v2, headers=headers, timeout=30) as api:
        ref = api.get(f"/trees/{branch}")
        ref.raise_for_status()
        head = ref.json()["reference"]["hash"]
        ops = []
        if api.get(f"/trees/{branch}/contents/sales").status_code == 404:
            ops.append(_put(["sales"], {"type": "NAMESPACE", "elements": ["sales"]}))
        existing = api.get(f"/trees/{branch}/contents/sales.orders")
        table = {
            "type": "ICEBERG_TABLE",
            "metadataLocation": location,
            "snapshotId": 1,
            "schemaId": 0,
            "specId": 0,
            "sortOrderId": 0,
        }
        if existing.status_code == 200:
            table["id"] = existing.json()["content"]["id"]
        ops.append(_put(["sales", "orders"], table))
        resp = api.post(
            f"/trees/{branch}@{head}/history/commit",
            json={"commitMeta": {"message": "Iceberg append"}, "operations": ops},
        )
        if resp.status_code == 403:
            raise NessieForbiddenError(resp.json()["message"])
        resp.raise_for_status()
        return resp.json()["targetBranch"]["hash"]


def _put(elements: list[str], content: dict) -> dict:
    return {"type": "PUT", "key": {"elements": elements}, "content": content}


def raw(server, role: str, method: str, path: str, **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server.token(role)}"}
    resp = httpx.request(method, server.api_v2 + path, headers=headers, timeout=30, **kwargs)
    if resp.status_code == 403:
        raise NessieForbiddenError(resp.json()["message"])
    return resp


# ---- the service's calls, each as its code makes it ------------------------------------------


def read_main(server, client: NessieClient, role: str, s: Setup) -> None:
    assert client.main_hash()  # trigger, publish, sweeper, wap: VIEW_REFERENCE


def list_references(server, client: NessieClient, role: str, s: Setup) -> None:
    names = {r.name for r in client.references()}  # gc, wap branches: VIEW (filtered)
    if s.branch not in names:
        raise NessieForbiddenError("the branch is not listed")


def list_tables_on_main(server, client: NessieClient, role: str, s: Setup) -> None:
    client.iceberg_tables("main")  # trigger (unknown tables), maintenance: READ_ENTRIES


def read_table_on_branch(server, client: NessieClient, role: str, s: Setup) -> None:
    # publish's audited-snapshot check, wap show: READ_ENTITY_VALUE
    assert client.table_snapshot(s.table, s.branch, s.head) == 1


def list_contents_at_a_commit(server, client: NessieClient, role: str, s: Setup) -> None:
    assert client.contents_at(s.branch, s.head)  # gc: READ_ENTRIES + READ_CONTENT_KEY


def read_the_log(server, client: NessieClient, role: str, s: Setup) -> None:
    assert list(client.commit_log(s.branch))  # gc: LIST_COMMIT_LOG


def open_an_ingest_branch(server, client: NessieClient, role: str, s: Setup) -> None:
    client.ensure_branch_from_main(f"wap_sales_orders_20261127T{next(_names):06d}_{role[4:8]}")


def write_tables_on_an_ingest_branch(server, client: NessieClient, role: str, s: Setup) -> None:
    commit_table(server, server.token(role), s.branch, f"s3://w/{role}.json")  # the job


def merge_into_main(server, client: NessieClient, role: str, s: Setup) -> None:
    # publish, compaction's conclusion, wap publish
    client.merge_into_main(s.branch, s.head, MergeMeta(message=f"by {role}", author=role))


def delete_an_ingest_branch(server, client: NessieClient, role: str, s: Setup) -> None:
    # publish (after a merge or a rebase), sweeper, compaction, wap discard
    assert client.delete_branch(s.branch, s.head)


def smoke_branch(server, client: NessieClient, role: str, s: Setup) -> None:
    """spark_jobs/smoke.py: create and drop a wap-doctor-* branch (API v2, as the job)."""
    name = f"wap-doctor-{next(_names):08d}"
    main = raw(server, role, "GET", "/trees/-").json()["reference"]
    created = raw(
        server, role, "POST", "/trees", params={"name": name, "type": "BRANCH"}, json=main
    )
    assert created.status_code == 200, created.text
    gone = raw(server, role, "DELETE", f"/trees/{name}@{created.json()['reference']['hash']}")
    assert gone.status_code == 200, gone.text


def commit_to_main(server, client: NessieClient, role: str, s: Setup) -> None:
    """Not a call the service makes: a write to main that is no merge. Rules cannot tell it
    from a merge (the rules file says so), so the publishing roles could; the others not."""
    commit_table(server, server.token(role), "main", f"s3://m/{role}.json")


def assign_main(server, client: NessieClient, role: str, s: Setup) -> None:
    main = raw(server, role, "GET", "/trees/main").json()["reference"]["hash"]
    raw(
        server,
        role,
        "PUT",
        f"/trees/main@{main}",
        json={"type": "BRANCH", "name": s.branch, "hash": s.head},
    )


CALLS: dict[str, tuple[Callable[..., None], frozenset[str]]] = {
    "read main": (read_main, EVERYONE),
    "list references": (list_references, EVERYONE),
    "list tables on main": (list_tables_on_main, EVERYONE),
    "read a table at an audited commit": (read_table_on_branch, EVERYONE),
    "list contents at a commit": (list_contents_at_a_commit, EVERYONE),
    "read a branch's log": (read_the_log, EVERYONE),
    "open an ingest branch": (open_an_ingest_branch, frozenset({TRIGGER, PUBLISHER, MAINTENANCE})),
    "write tables on an ingest branch": (write_tables_on_an_ingest_branch, frozenset({JOB})),
    "merge an audited commit into main": (
        merge_into_main,
        frozenset({PUBLISHER, MAINTENANCE, OPERATOR}),
    ),
    "delete an ingest branch": (
        delete_an_ingest_branch,
        frozenset({PUBLISHER, MAINTENANCE, OPERATOR}),
    ),
    "smoke run's branch": (smoke_branch, frozenset({JOB})),
    "commit to main (no merge)": (commit_to_main, frozenset({PUBLISHER, MAINTENANCE, OPERATOR})),
    "assign main": (assign_main, NOBODY),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server with the service's rules (the module's `nessie` allows everything)."""
    from local.nessie.runner import start_server

    running = start_server(str(tmp_path_factory.mktemp("matrix") / "nessie.db"))
    yield running
    running.stop()


# Calls that use up what they act on (a branch merged or deleted, main moved): a fresh
# branch for each role; the others share one.
CONSUMING = {merge_into_main, delete_an_ingest_branch}


def test_every_call_by_every_role_is_allowed_exactly_where_the_rules_say(server):
    clients = {role: role_client(server, role) for role in ROLES}
    shared = ingest_branch(server)
    outcomes: dict[str, set[str]] = {}
    for name, (call, _) in CALLS.items():
        allowed = outcomes.setdefault(name, set())
        for role in ROLES:
            setup = ingest_branch(server) if call in CONSUMING else shared
            client = clients[role]
            try:
                call(server, client, role, setup)
            except NessieForbiddenError as exc:
                assert "is not allowed for role" in str(exc) or "not listed" in str(exc), exc
            else:
                allowed.add(role)
    wrong = {
        name: {"allowed": sorted(outcomes[name]), "expected": sorted(expected)}
        for name, (_, expected) in CALLS.items()
        if outcomes[name] != expected
    }
    assert not wrong, wrong
    # Every rule allowed some call: an unused rule grants what the service does not need.
    used = set(server.security.authorizer.used)
    unused = set(load_rules()) - used
    assert not unused, f"rules no call of the service used (remove them): {sorted(unused)}"


def test_a_reader_reads_everything_and_changes_nothing(server):
    setup = ingest_branch(server)
    before = {r.name: r.hash for r in harness_client(server).references()}
    reader = role_client(server, READER)
    for call, expected in CALLS.values():
        if READER in expected:
            call(server, reader, READER, setup)
            continue
        with pytest.raises(NessieForbiddenError):
            call(server, reader, READER, setup)
    after = {r.name: r.hash for r in harness_client(server).references()}
    assert after == before
