"""The CLI's Nessie access, over Nessie REST API v2 (what the stack outputs as `NessieApiUrl`).

API v2 because a merge there takes a commit `message` and `commitMeta` (API v1 and
pynessie cannot set them), and the human review behind `wap publish` belongs in
main's history. Reference names and content keys are validated before they reach
a URL; HTTP failures become `CatalogError`s here, nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lambdas.common.naming import NESSIE_REF_NAME, TableRef
from wap.exceptions import CatalogConflictError, CatalogError, UnknownTargetError

_TIMEOUT_SECONDS = 15


@dataclass(frozen=True)
class Ref:
    """A Nessie reference and, when fetched, the time of its head commit."""

    name: str
    hash: str
    type: str = "BRANCH"
    head_commit_time: str | None = None


def _ref_path(name: str, at_hash: str | None = None) -> str:
    if not NESSIE_REF_NAME.fullmatch(name):
        raise UnknownTargetError(f"not a valid Nessie reference name: {name!r}")
    if at_hash is not None and not (
        8 <= len(at_hash) <= 64 and all(c in "0123456789abcdefABCDEF" for c in at_hash)
    ):
        raise CatalogError(f"not a Nessie commit hash: {at_hash!r}")
    return quote(name if at_hash is None else f"{name}@{at_hash}", safe="@")


class NessieV2:
    """References, table content and merges on one Nessie API v2 endpoint."""

    def __init__(self, api_v2: str, *, timeout: float = _TIMEOUT_SECONDS) -> None:
        import requests

        self.api_v2 = api_v2.rstrip("/")
        self._timeout = timeout
        self._session = requests.Session()

    def _call(
        self,
        method: str,
        path: str,
        *,
        what: str,
        params: dict[str, Any] | None = None,
        body: Any = None,
        missing_ok: bool = False,
    ) -> Any:
        import requests

        try:
            response = self._session.request(
                method, f"{self.api_v2}/{path}", params=params, json=body, timeout=self._timeout
            )
        except requests.RequestException as exc:
            raise CatalogError(
                f"Nessie at {self.api_v2} is unreachable ({what}): {type(exc).__name__}"
            ) from exc
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code >= 400:
            try:
                message = response.json().get("message") or response.text
            except ValueError:
                message = response.text
            message = " ".join(str(message).split())[:300]
            if response.status_code == 404:
                raise UnknownTargetError(f"Nessie: {message}")
            if response.status_code == 409:
                raise CatalogConflictError(f"Nessie refused to {what}: {message}")
            raise CatalogError(f"Nessie refused to {what} (HTTP {response.status_code}): {message}")
        return response.json() if response.content else None

    # ---- references ------------------------------------------------------------------------

    def references(self) -> list[Ref]:
        """Every reference with its head commit time."""
        body = self._call("GET", "trees", what="list references", params={"fetch": "ALL"})
        return [_ref(r) for r in body.get("references", [])]

    def reference(self, name: str) -> Ref | None:
        """The reference `name`, or None when it does not exist."""
        body = self._call(
            "GET",
            f"trees/{_ref_path(name)}",
            what=f"read {name}",
            params={"fetch": "ALL"},
            missing_ok=True,
        )
        return _ref(body["reference"]) if body else None

    def delete_branch(self, name: str, expected_hash: str) -> None:
        """Delete branch `name` if its head is still `expected_hash`."""
        self._call(
            "DELETE",
            f"trees/{_ref_path(name, expected_hash)}",
            what=f"delete branch {name}",
            params={"type": "BRANCH"},
        )

    # ---- content ---------------------------------------------------------------------------

    def metadata_location(self, ref: str, table: str) -> str | None:
        """`metadataLocation` of the Iceberg table `ns.table` on `ref`; None when absent."""
        key = TableRef.parse(table).qualified
        body = self._call(
            "GET",
            f"trees/{_ref_path(ref)}/contents/{quote(key, safe='.')}",
            what=f"read {table} on {ref}",
            missing_ok=True,
        )
        if not body:
            return None
        content = body.get("content") or {}
        return content.get("metadataLocation")

    def iceberg_tables(self, ref: str) -> dict[str, str]:
        """`ns.table` -> `metadataLocation` of every Iceberg table on `ref` whose key is a
        valid table identifier (others cannot be named by `wap` commands)."""
        tables: dict[str, str] = {}
        params: dict[str, Any] = {"content": "true", "max-records": 250}
        while True:
            path = f"trees/{_ref_path(ref)}/entries"
            body = self._call("GET", path, what=f"list tables on {ref}", params=params)
            for entry in body.get("entries", []):
                content = entry.get("content") or {}
                location = content.get("metadataLocation")
                if entry.get("type") != "ICEBERG_TABLE" or not isinstance(location, str):
                    continue
                try:
                    name = TableRef.parse(".".join(entry["name"]["elements"])).qualified
                except (KeyError, TypeError, ValueError):
                    continue
                tables[name] = location
            if not body.get("hasMore") or not body.get("token"):
                return tables
            params = {**params, "page-token": body["token"]}

    # ---- merges ----------------------------------------------------------------------------

    def merge(
        self,
        branch: str,
        from_hash: str,
        *,
        onto: str,
        message: str,
        author: str,
        properties: dict[str, str],
    ) -> str:
        """Merge exactly `branch@from_hash` onto the current head of `onto`; return its new hash.

        Raises `CatalogConflictError` when `onto` changed the same content.
        """
        target = self.reference(onto)
        if target is None:
            raise UnknownTargetError(f"Nessie has no branch {onto!r}")
        _ref_path(branch, from_hash)  # validates both
        body = self._call(
            "POST",
            f"trees/{_ref_path(onto, target.hash)}/history/merge",
            what=f"merge {branch} into {onto}",
            body={
                "fromRefName": branch,
                "fromHash": from_hash,
                "message": message,
                "commitMeta": {"message": message, "authors": [author], "properties": properties},
            },
        )
        if not body.get("wasSuccessful", True):
            raise CatalogConflictError(f"Nessie refused to merge {branch} into {onto}: conflict")
        return body["resultantTargetHash"]


def _ref(raw: dict[str, Any]) -> Ref:
    head = (raw.get("metadata") or {}).get("commitMetaOfHEAD") or {}
    return Ref(
        name=raw["name"],
        hash=raw.get("hash", ""),
        type=raw.get("type", "BRANCH"),
        head_commit_time=head.get("commitTime"),
    )
