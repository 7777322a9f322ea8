"""The per-run Iceberg catalog (`wap_<id8>` at `ref=<branch>`) and the branch's Nessie hash.

One SparkSession serves many runs: each run copies the `lake` catalog template
(`spark.sql.catalog.lake.*`) under its own name with `ref` set to its branch.

The job calls Nessie as the `wap-job` role: when its environment names a catalog client
(contracts/catalog_tokens.py: WAP_NESSIE_TOKEN_ENDPOINT, _CLIENT_ID, _CLIENT_SECRET; the
local EMR stand-in sets them, on AWS they come from Secrets Manager), each run catalog's
Nessie client fetches its tokens with them, and so do the job's own calls
(`nessie_request`). Without one, the template's authentication (if any) is kept.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
import urllib.request
from collections.abc import Mapping

from contracts.catalog_tokens import CatalogCredentials, TokenError, shared_cache
from spark_jobs.conf import (
    AUTH_TYPE,
    OAUTH2_CLIENT_ID,
    OAUTH2_CLIENT_SECRET,
    OAUTH2_TOKEN_ENDPOINT,
    catalog_auth_conf,
)
from spark_jobs.errors import CatalogError
from spark_jobs.identifiers import validate_branch, validate_identifier
from spark_jobs.jvm import java_map

CATALOG_PREFIX = "spark.sql.catalog."
# Keys that pin the template to one commit; a run follows its branch's head instead.
_DROPPED_KEYS = {"ref.hash"}
_lock = threading.Lock()
_configured: dict[str, dict[str, str]] = {}


def catalog_conf(spark, catalog: str) -> dict[str, str]:
    """Current session conf of `spark.sql.catalog.<catalog>` and its `.<key>` entries."""
    confs = spark._jvm.scala.collection.JavaConverters.mapAsJavaMap(
        spark._jsparkSession.sessionState().conf().getAllConfs()
    )
    prefix = CATALOG_PREFIX + catalog
    return java_map(confs, lambda key: key == prefix or key.startswith(prefix + "."))


def job_credentials(environ: Mapping[str, str] | None = None) -> CatalogCredentials | None:
    """The job's catalog client from its environment (None: none is named)."""
    try:
        return CatalogCredentials.from_environment(os.environ if environ is None else environ)
    except ValueError as exc:
        raise CatalogError(f"the job's catalog credentials are incomplete: {exc}") from None


def configure_run_catalog(
    spark,
    template: str,
    run_catalog: str,
    branch: str,
    credentials: CatalogCredentials | None = None,
) -> dict[str, str]:
    """Register `run_catalog` as a copy of `template` pointing at `branch`, as the job's
    catalog client (`credentials`, else `job_credentials()`, else the template's); return
    its conf."""
    validate_identifier(template, "catalog")
    validate_identifier(run_catalog, "catalog")
    validate_branch(branch)
    source = catalog_conf(spark, template)
    if CATALOG_PREFIX + template not in source:
        raise CatalogError(
            f"Spark conf has no catalog {template!r} (set {CATALOG_PREFIX}{template}.*)"
        )
    old_prefix, new_prefix = CATALOG_PREFIX + template, CATALOG_PREFIX + run_catalog
    wanted = {
        new_prefix + key[len(old_prefix) :]: value
        for key, value in source.items()
        if key[len(old_prefix) + 1 :] not in _DROPPED_KEYS
    }
    wanted[new_prefix + ".ref"] = branch
    credentials = credentials or job_credentials()
    if credentials is not None:
        for key in (AUTH_TYPE, OAUTH2_TOKEN_ENDPOINT, OAUTH2_CLIENT_ID, OAUTH2_CLIENT_SECRET):
            wanted.pop(f"{new_prefix}.{key}", None)
        wanted.update(catalog_auth_conf(credentials, new_prefix))
    with _lock:
        previous = _configured.get(run_catalog)
        for key, value in wanted.items():
            spark.conf.set(key, value)
        if previous is not None and previous != wanted:
            # Spark caches catalog instances by name; a re-run of this ingest on another
            # branch (or another Nessie) must not reuse the old instance. Catalogs are
            # re-created from conf on next use, so other runs only pay a reconnect.
            spark._jsparkSession.sessionState().catalogManager().reset()
        _configured[run_catalog] = wanted
    return wanted


def nessie_request(
    conf: dict[str, str],
    catalog: str,
    method: str,
    path: str,
    body: object = None,
    timeout_s: float = 30.0,
) -> dict:
    """One Nessie API v2 call at the catalog's `uri`, authenticated as the catalog's Nessie
    client is (the job's client credentials, an OAuth2 client of its conf, or a fixed bearer
    token): the JSON answer. CatalogError when the catalog has no http(s) uri or no token
    can be had; the HTTP and network errors of urllib otherwise."""
    prefix = CATALOG_PREFIX + catalog
    base = conf.get(prefix + ".uri", "").rstrip("/")
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        raise CatalogError(f"catalog {catalog!r} has no http(s) Nessie uri: {base!r}")
    request = urllib.request.Request(  # noqa: S310 - scheme checked above
        base + path,
        method=method,
        headers={"Accept": "application/json"},
        data=None if body is None else json.dumps(body).encode(),
    )
    if body is not None:
        request.add_header("Content-Type", "application/json")
    token = _bearer_token(conf, prefix)
    if token is not None:
        request.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        return json.load(response)


def _bearer_token(conf: dict[str, str], prefix: str) -> str | None:
    auth_type = conf.get(f"{prefix}.{AUTH_TYPE}", "").upper()
    if auth_type == "BEARER":
        return conf.get(prefix + ".authentication.token", "")
    credentials = job_credentials()
    if credentials is None and auth_type == "OAUTH2":
        try:
            credentials = CatalogCredentials(
                conf.get(f"{prefix}.{OAUTH2_TOKEN_ENDPOINT}", ""),
                conf.get(f"{prefix}.{OAUTH2_CLIENT_ID}", ""),
                conf.get(f"{prefix}.{OAUTH2_CLIENT_SECRET}") or None,
            )
        except ValueError as exc:
            raise CatalogError(f"catalog {prefix}: incomplete OAuth2 settings: {exc}") from None
    if credentials is None:
        return None
    try:
        return shared_cache(credentials).token()
    except TokenError as exc:
        raise CatalogError(f"no Nessie token for the job: {exc}") from exc


def nessie_branch_hash(
    conf: dict[str, str], catalog: str, branch: str, timeout_s: float = 30.0
) -> str:
    """The head hash of `branch` from Nessie API v2 (`GET <uri>/trees/<branch>`).

    CatalogError (an infrastructure error: the branch is the trigger's, not the input's)
    when Nessie cannot be reached or does not know the branch.
    """
    validate_branch(branch)
    try:
        body = nessie_request(
            conf,
            catalog,
            "GET",
            f"/trees/{urllib.parse.quote(branch, safe='')}",
            timeout_s=timeout_s,
        )
    except CatalogError:
        raise
    except Exception as exc:
        raise CatalogError(f"cannot read the hash of branch {branch!r} from Nessie: {exc}") from exc
    reference = body.get("reference", body)
    if reference.get("name") != branch or not reference.get("hash"):
        raise CatalogError(f"unexpected Nessie answer for branch {branch!r}: {body}")
    return reference["hash"]
