"""The per-run Iceberg catalog (`wap_<id8>` at `ref=<branch>`) and the branch's Nessie hash.

One SparkSession serves many runs: each run copies the `lake` catalog template
(`spark.sql.catalog.lake.*`) under its own name with `ref` set to its branch.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
import urllib.request

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


def configure_run_catalog(spark, template: str, run_catalog: str, branch: str) -> dict[str, str]:
    """Register `run_catalog` as a copy of `template` pointing at `branch`; return its conf."""
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
    """One Nessie API v2 call at the catalog's `uri` (with its bearer token, if any): the
    JSON answer. CatalogError when the catalog has no http(s) uri; the HTTP and network
    errors of urllib otherwise."""
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
    if conf.get(prefix + ".authentication.type", "").upper() == "BEARER":
        request.add_header(
            "Authorization", "Bearer " + conf.get(prefix + ".authentication.token", "")
        )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        return json.load(response)


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
