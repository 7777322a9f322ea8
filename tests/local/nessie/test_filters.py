"""CEL `filter` parameters: what real Nessie accepts works, what it refuses is a 400."""

from __future__ import annotations

import pytest

from bench.nessie_requests import iceberg_table, namespace_content, put_op
from tests.fixtures.nessie_api import commit, create_branch, head, unique

from .test_errors import assert_error


@pytest.fixture
def tables(api) -> str:
    """A namespace `<top>` holding `<top>.sub` and tables t1, t2 and `<top>.sub.deep`."""
    top = unique("flt")
    ops = [
        put_op([top], namespace_content([top])),
        put_op([top, "sub"], namespace_content([top, "sub"])),
        put_op([top, "t1"], iceberg_table("s3://w/1.json")),
        put_op([top, "t2"], iceberg_table("s3://w/2.json")),
        put_op([top, "sub", "deep"], iceberg_table("s3://w/3.json")),
    ]
    assert commit(api, "main", head(api), *ops).status_code == 200
    return top


def _names(api, top: str, flt: str) -> list[str]:
    resp = api.get("/trees/main/entries", params={"filter": flt, "prefix-key": top})
    assert resp.status_code == 200, resp.text
    return [".".join(e["name"]["elements"][1:]) for e in resp.json()["entries"]]


# Each of these is valid CEL that Nessie evaluates; the hand-written evaluator refused them all.
@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        # ternary
        (
            "size(entry.keyElements) > 2 ? entry.name == 'deep' : entry.name == 't1'",
            ["sub.deep", "t1"],
        ),
        # has() macro
        ("has(entry.contentType) && entry.contentType == 'NAMESPACE'", ["", "sub"]),
        # exists macro on a list
        (
            "entry.keyElements.exists(e, e == 'sub') && entry.contentType != 'NAMESPACE'",
            ["sub.deep"],
        ),
        # all macro
        (
            "entry.namespaceElements.all(e, e.startsWith('flt_')) && entry.name.startsWith('t')",
            ["t1", "t2"],
        ),
        # string concatenation
        ("entry.namespace + '.' + entry.name == entry.key && entry.name == 't2'", ["t2"]),
        # int arithmetic
        ("size(entry.keyElements) - 1 == 2", ["sub.deep"]),
        # list indexing
        ("entry.keyElements[size(entry.keyElements) - 1] in ['t1', 'sub']", ["sub", "t1"]),
        # double quotes and a method-call size
        ('entry.name.size() == 2 && entry.contentType == "ICEBERG_TABLE"', ["t1", "t2"]),
    ],
)
def test_entries_filters_that_real_cel_accepts(api, tables, flt, expected):
    assert _names(api, tables, flt) == expected


def test_history_and_reference_filters_use_nessies_variables(api):
    branch = unique("fltb")
    create_branch(api, branch)
    author, ns = unique("author"), unique("ns")
    body = {
        "commitMeta": {"message": "by someone", "authors": [author]},
        "operations": [put_op([ns], namespace_content([ns]))],
    }
    resp = api.post(f"/trees/{branch}@{head(api, branch)}/history/commit", json=body)
    assert resp.status_code == 200, resp.text

    # The example of Nessie's documentation: `author` is the first of `authors`.
    log = api.get(f"/trees/{branch}/history", params={"filter": f"commit.author == '{author}'"})
    assert log.status_code == 200, log.text
    assert [e["commitMeta"]["message"] for e in log.json()["logEntries"]] == ["by someone"]
    newer = api.get(
        f"/trees/{branch}/history",
        params={"filter": "commit.commitTime > timestamp('2000-01-01T00:00:00Z')"},
    )
    assert newer.status_code == 200, newer.text
    assert newer.json()["logEntries"]

    refs = api.get(
        "/trees",
        params={
            "fetch": "ALL",
            "filter": (
                f"refType == 'BRANCH' && ref.name == '{branch}' && commit.author == '{author}'"
            ),
        },
    )
    assert refs.status_code == 200, refs.text
    assert [r["name"] for r in refs.json()["references"]] == [branch]


@pytest.mark.parametrize(
    ("flt", "message", "prefix"),
    [
        ("entry.name ==", None, "Invalid filter expression"),
        ("entry.name == 'a' &&& true", None, "Invalid filter expression"),
        ("nope == 'x'", "Unknown filter variable 'nope'", None),
        ("commit.author == 'x'", "Unknown filter variable 'commit'", None),
        ("entry.secret == 'x'", "Unknown filter attribute 'secret'", None),
        ("entry.name.evil() == 'x'", None, "Invalid filter expression: unknown function 'evil'"),
        ("__import__('os').system('true')", None, "Invalid filter expression"),
        ("x" * 5000, "Filter expression too long", None),
    ],
)
def test_filters_that_do_not_parse_or_check_are_refused_before_any_entry(api, flt, message, prefix):
    # No entry under this prefix: the refusal does not depend on the data.
    resp = api.get("/trees/main/entries", params={"filter": flt, "prefix-key": unique("empty")})
    assert_error(resp, 400, "BAD_REQUEST", message, prefix)


@pytest.mark.parametrize(
    "flt",
    [
        "int(entry.name) > 0",  # not a number
        "entry.name",  # not a bool
        "entry.keyElements[10] == 'x'",  # out of bounds
        "size(entry.keyElements) / 0 == 1",
        "entry.name.matches('(')",
        "entry.name + 1 == 'x'",  # no such overload
    ],
)
def test_errors_while_evaluating_an_entry_are_bad_requests(api, tables, flt):
    resp = api.get("/trees/main/entries", params={"filter": flt, "prefix-key": tables})
    assert_error(resp, 400, "BAD_REQUEST", prefix="Invalid filter expression")
