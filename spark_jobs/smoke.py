"""`wap doctor`'s smoke run: the deployed job's environment, checked step by step.

Submitted like an ingest (same entry point, archive, jars and Spark conf), it loads
Iceberg's `NessieCatalog` and the configured FileIO, creates a branch through Nessie's
API v2, opens the catalog on it, drops the branch, and writes a report of every step
(pass or fail, with the error) where the ingest's report would go. Runs on EMR's Python
3.9 with the standard library only.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from contracts.job_args import SmokeArgs
from spark_jobs.catalog import (
    CATALOG_PREFIX,
    catalog_conf,
    configure_run_catalog,
    nessie_request,
)
from spark_jobs.identifiers import validate_branch
from spark_jobs.report import write_report

DEFAULT_FILE_IO = "org.apache.iceberg.hadoop.HadoopFileIO"


def check_smoke_args(args: SmokeArgs) -> SmokeArgs:
    """`args` (contracts/job_args.py) if its branch is a valid Nessie reference name."""
    validate_branch(args.branch)
    return args


def run_smoke(spark, args: SmokeArgs) -> dict[str, Any]:
    """Run every step (a failed step does not stop the independent ones); write the report."""
    steps: list[dict[str, Any]] = []

    def step(name: str, check: Callable[[], str]) -> bool:
        try:
            steps.append({"step": name, "ok": True, "detail": check()})
            return True
        except Exception as exc:  # the report names the failure; the doctor prints it
            steps.append({"step": name, "ok": False, "detail": f"{type(exc).__name__}: {exc}"})
            return False

    conf = catalog_conf(spark, args.catalog)
    file_io = conf.get(CATALOG_PREFIX + args.catalog + ".io-impl", DEFAULT_FILE_IO)

    def load(class_name: str) -> Callable[[], str]:
        def check() -> str:
            loaded = spark._jvm.java.lang.Class.forName(
                class_name, True, spark._jvm.Thread.currentThread().getContextClassLoader()
            )
            return loaded.getName()

        return check

    step(
        "load org.apache.iceberg.nessie.NessieCatalog",
        load("org.apache.iceberg.nessie.NessieCatalog"),
    )
    step(f"load FileIO {file_io}", load(file_io))
    branch = urllib.parse.quote(args.branch, safe="")

    def create() -> str:
        main = nessie_request(conf, args.catalog, "GET", "/trees/-")["reference"]
        created = nessie_request(
            conf,
            args.catalog,
            "POST",
            f"/trees?name={branch}&type=BRANCH",
            {"type": "BRANCH", "name": main["name"], "hash": main["hash"]},
        )
        return f"{args.branch} at {created['reference']['hash'][:12]}"

    if step("create a Nessie branch", create):

        def open_catalog() -> str:
            run_catalog = "wap_doctor"
            configure_run_catalog(spark, args.catalog, run_catalog, args.branch)
            namespaces = spark.sql(f"SHOW NAMESPACES IN {run_catalog}").collect()
            return f"{len(namespaces)} namespace(s) on {args.branch}"

        def drop() -> str:
            ref = nessie_request(conf, args.catalog, "GET", f"/trees/{branch}")["reference"]
            at = urllib.parse.quote(f"{args.branch}@{ref['hash']}", safe="")
            nessie_request(conf, args.catalog, "DELETE", f"/trees/{at}")
            return f"{args.branch} deleted"

        step("open the Iceberg catalog on the branch", open_catalog)
        step("drop the Nessie branch", drop)
    report = {
        "report_version": 1,
        "kind": "smoke",
        "branch": args.branch,
        "ok": all(s["ok"] for s in steps),
        "steps": steps,
    }
    write_report(spark, args.report_uri, report)
    return report
