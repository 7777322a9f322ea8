"""`wap doctor`'s checks that must run inside the deployment: the trigger's network
(the VPC that reaches Nessie) and role (the one that starts job runs).

An event `{"wap_doctor": {"check": ...}}` selects one; it never touches an ingest.
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

from ingestion.config import Settings
from ingestion.exceptions import DoctorRequestError
from ingestion.ingest import start_smoke_run

DOCTOR_KEY = "wap_doctor"
_RUN_ID = re.compile(r"^[0-9a-f]{8,32}$")


def is_doctor_event(event: Any) -> bool:
    """Whether the invocation is `wap doctor`'s, not an S3 event."""
    return isinstance(event, dict) and DOCTOR_KEY in event


def run_check(event: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """`nessie`: Nessie's `/api/v2/config` as this function reaches it. `smoke_job`: start
    the smoke run (spark_jobs/smoke.py) as this function's role; returns its id and report."""
    request = event[DOCTOR_KEY] if isinstance(event[DOCTOR_KEY], dict) else {}
    check = request.get("check")
    if check == "nessie":
        return {"check": check, "config": nessie_config(settings.nessie_uri, _token(settings))}
    if check == "smoke_job":
        run_id = str(request.get("run_id", ""))
        if not _RUN_ID.match(run_id):
            raise DoctorRequestError(f"run_id must be 8-32 lowercase hex digits, not {run_id!r}")
        branch = f"wap-doctor-{run_id}"
        report_uri = settings.report_uri("_doctor", run_id, 1)
        job_run_id = start_smoke_run(settings, run_id, branch, report_uri)
        return {
            "check": check,
            "job_run_id": job_run_id,
            "report_uri": report_uri,
            "branch": branch,
            "application_id": settings.emr_application_id,
        }
    raise DoctorRequestError(f"unknown doctor check {check!r} (nessie, smoke_job)")


def nessie_config(nessie_uri: str, token: str | None = None) -> dict[str, Any]:
    """GET `<Nessie>/api/v2/config` (the deployment's URI names API v1), with `token`."""
    base = re.sub(r"/api/v[12]/?$", "", nessie_uri.rstrip("/"))
    if not base.startswith(("http://", "https://")):
        raise DoctorRequestError(f"Nessie URI {nessie_uri!r} is not http(s)")
    request = urllib.request.Request(f"{base}/api/v2/config")  # noqa: S310
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return json.load(response)


def _token(settings: Settings) -> str | None:
    """A token of the function's catalog client (the process's cached one); None without:
    with authentication on, Nessie answers nothing under /api without one."""
    if settings.catalog_credentials is None:
        return None
    from contracts.catalog_tokens import shared_cache
    from ingestion.nessie import read_client_secret

    return shared_cache(settings.catalog_credentials, secret_loader=read_client_secret).token()
