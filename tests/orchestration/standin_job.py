"""A stand-in for the Spark job in the fast tests: it commits to the branch like the job does.

It puts an Iceberg table entry on the ingest's branch through the Nessie API
(a new metadata location per run, as an append would) and writes a report
that follows docs/contracts.md. What the "data" does is scripted by the
source file name: `...fail...` fails an error check, `...reject...` is rejected, and two
`...twin...` files in one run fail it while each passes on its own (a key in both).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pynessie
import requests
from pynessie.model import ContentKey, IcebergTable, Namespace, Put

from local.aws.emr_serverless import JobFunction


def snapshot_of(tag: str) -> int:
    """The stand-in's snapshot id for a run tagged `tag` (an ingest id: stable across re-runs)."""
    try:
        return int(tag[:15], 16)
    except ValueError:
        return random.randint(1, 2**40)


def commit_table_on_branch(api_v1: str, table: str, branch: str, tag: str) -> str:
    """Put `table` on `branch` (new metadata location); returns the branch's new hash."""
    client = pynessie.init(
        config_dict={"endpoint": api_v1, "verify": True, "auth": {"type": "none", "timeout": 10}}
    )
    head = client.get_reference(branch).hash_
    key = ContentKey(table.split("."))
    content = IcebergTable(
        id=None,
        metadata_location=f"file:///warehouse/{table}/{tag}.json",
        snapshot_id=snapshot_of(tag),
        schema_id=0,
        spec_id=0,
        sort_order_id=0,
    )
    expected = None
    try:
        expected = client.get_content(branch, key)
        content = IcebergTable(
            id=expected.id,
            metadata_location=content.metadata_location,
            snapshot_id=content.snapshot_id,
            schema_id=0,
            spec_id=0,
            sort_order_id=0,
        )
    except Exception:  # the table does not exist on this branch yet
        expected = None
    ops = [Put(key, content, expected) if expected is not None else Put(key, content)]
    namespace = table.split(".")[0]
    # pynessie 0.67 cannot parse a Namespace with `properties` (as Nessie returns it): ask raw.
    found = requests.get(f"{api_v1}/contents/{namespace}", params={"ref": branch}, timeout=10)
    if found.status_code == 404:  # like the job: a namespace must exist before a table under it
        ops.insert(0, Put(ContentKey([namespace]), Namespace(id=None, elements=[namespace])))
    return client.commit(branch, head, f"stand-in append {tag}", "wap-tests", *ops).hash_


def standin_job(api_v1: str, calls: list[dict[str, Any]] | None = None):
    """A job function for `LocalEmrServerless` (see module docstring)."""

    def make_report(args: dict[str, Any]) -> dict[str, Any]:
        if calls is not None:
            calls.append(args)
        sources = args["sources"]
        source = sources[0] if len(sources) == 1 else ", ".join(sources)
        base = {
            "report_version": 1,
            "ingest_id": args["ingest_id"],
            "table": args["table"],
            "source_uris": sources,
            "branch": args["branch"],
            "schema_changes": [],
            "timings": {},
            "snapshot_id": None,
        }
        # As the job judges each source: `reject` cannot be read, `fail` fails the check.
        # By file name: the staged path holds a random job run id ("...fail..." happens).
        verdicts = [{"uri": uri, "rows": None if "reject" in name else 10,
                     "status": "rejected" if "reject" in name else
                     "failed" if "fail" in name else "passed",
                     "failed_checks": ["amount_positive"] if "fail" in name else [],
                     "reason": f"corrupt parquet file: {uri}" if "reject" in name else None}
                    for uri in sources for name in [uri.rsplit("/", 1)[-1]]]
        base["sources"] = verdicts
        written = [v for v in verdicts if v["status"] != "rejected"]
        if not written or ("all_or_nothing" in args and len(written) < len(verdicts)):
            return {
                **base,
                "branch_hash": None,
                "rows_written": 0,
                "checks": [],
                "outcome": "rejected",
                "reason": f"corrupt parquet file: {source}",
            }
        branch_hash = commit_table_on_branch(
            api_v1, args["table"], args["branch"], args["ingest_id"]
        )
        base["snapshot_id"] = snapshot_of(args["ingest_id"])
        check = {
            "name": "amount_positive",
            "kind": "range",
            "columns": ["amount"],
            "severity": "error",
            "status": "passed",
            "violations": 0,
            "threshold": None,
            "observed": 0,
            "settled_by": "metrics",
            "samples": [],
        }
        # `twin` files share a key: two in one run fail it, though each passes on its own.
        if any(v["status"] == "failed" for v in verdicts) or sum(
                "twin" in v["uri"].rsplit("/", 1)[-1] for v in written) > 1:
            check = {**check, "status": "failed", "violations": 3, "samples": [{"amount": -1.0}]}
            return {
                **base,
                "branch_hash": branch_hash,
                "rows_written": 10 * len(written),
                "checks": [check],
                "outcome": "failed",
                "reason": "check amount_positive failed (3 rows)",
            }
        return {
            **base,
            "branch_hash": branch_hash,
            "rows_written": 10 * len(written),
            "checks": [check],
            "outcome": "passed",
            "reason": None,
        }

    return report_writing_job(make_report)


def report_writing_job(make_report: Callable[[dict[str, Any]], dict[str, Any]]) -> JobFunction:
    """A stand-in job: builds a report from the parsed arguments and writes it to the report URI."""

    def job(argv: list[str]) -> dict[str, Any]:
        args: dict[str, Any] = {
            a[2:].replace("-", "_"): argv[i + 1]
            for i, a in enumerate(argv[:-1])
            if a.startswith("--")
        }
        args["sources"] = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--source"]
        if "--all-or-nothing" in argv:
            args["all_or_nothing"] = True
        report = make_report(args)
        path = Path(args["report_uri"].removeprefix("file://"))
        path.write_text(json.dumps(report))
        return report

    return job
