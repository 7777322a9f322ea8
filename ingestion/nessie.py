"""The one Nessie client of the Python side: the Lambdas and the `wap` tools.

Transport: `pynessie` (API v1) for everything it serves: reading, creating and
deleting branches, single contents. What pynessie 0.67 cannot do goes to API v2 over
`requests` (pynessie's own dependency): a merge that carries a commit message, author
and properties (every merge into main names its ingest, and a human publish its
reviewer); listing references with their head commits (pynessie fails to parse a
reference that has no commit yet, which Nessie sends without `commitMetaOfHEAD`); and
listing a reference's tables with their metadata in one call per page. Every
transport error becomes one of our exceptions here and nowhere else; reference
names and hashes are validated before they reach a URL.

Authentication: with `credentials` (a role's OAuth2 client, contracts/catalog_tokens.py)
every request, v1 and v2, carries a bearer token of that role, fetched by client
credentials, cached per process and renewed before it expires; a 401 (the token expired
or the server restarted with new keys) fetches a new token and retries the call once. A
403 is `NessieForbiddenError`, naming the operation and the reference Nessie refused.

The Spark job does not use this client: on EMR it runs on Python 3.9 with no
packages beyond pyspark, and it only reads its branch's head hash
(`spark_jobs/catalog.py`, a few lines of urllib).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from contracts.catalog_tokens import (
    CatalogCredentials,
    TokenCache,
    TokenEndpointUnavailableError,
    TokenError,
    shared_cache,
)
from ingestion.config import Settings
from ingestion.constants import MAIN_BRANCH
from ingestion.exceptions import (
    InvalidNessieNameError,
    MergeConflictError,
    NessieAuthenticationError,
    NessieError,
    NessieForbiddenError,
    NessieNotFoundError,
    NessieUnavailableError,
)
from ingestion.naming import NESSIE_REF_NAME, TableRef
from ingestion.secrets import SecretUnreadableError, read_secret_string, secret_field

_TIMEOUT_SECONDS = 10
_HASH = re.compile(r"[0-9a-fA-F]{8,64}")
_API_SUFFIX = re.compile(r"/api(/v[12])?/?$")


@dataclass(frozen=True)
class Ref:
    """A Nessie reference and, when the server sent it, the time of its head commit."""

    name: str
    hash: str
    type: str = "BRANCH"
    head_commit_time: str | None = None


@dataclass(frozen=True)
class Commit:
    """One commit of a reference's log: its hash and when it was committed (ISO 8601)."""

    hash: str
    commit_time: str | None


@dataclass(frozen=True)
class Content:
    """A content value at a commit that points at files: an Iceberg table or view."""

    key: str  # the content key's elements joined by "."
    type: str  # ICEBERG_TABLE | ICEBERG_VIEW
    metadata_location: str
    snapshot_id: int | None = None  # tables only; None or -1 before the first snapshot


@dataclass(frozen=True)
class MergeMeta:
    """What a merge commit on main records: why, by whom, and for which ingest."""

    message: str
    author: str
    properties: Mapping[str, str] = field(default_factory=dict)


def client_for(settings: Settings) -> NessieClient:
    """The Nessie client of a Lambda: its settings' URI, as its role (`catalog_credentials`;
    a secret kept in Secrets Manager is read with the function's AWS credentials)."""
    return NessieClient(
        settings.nessie_uri,
        credentials=settings.catalog_credentials,
        secret_loader=read_client_secret,
    )


def read_client_secret(secret_arn: str) -> str:
    """The client secret kept in Secrets Manager: the secret string itself, or the
    `client_secret` of a JSON object. The value is never logged or raised."""
    try:
        text = read_secret_string(secret_arn)
    except SecretUnreadableError as exc:
        error = TokenError if exc.answered else TokenEndpointUnavailableError
        raise error(f"cannot read the catalog client secret {secret_arn}: {exc.code}") from exc
    if not text:  # a binary secret
        raise TokenError(f"secret {secret_arn} holds no secret string")
    refused = TokenError(f"secret {secret_arn} is JSON without a client_secret string")
    value = secret_field(text, "client_secret", unparseable=refused)
    if not isinstance(value, str) or not value:
        raise refused
    return value


def check_ref_name(name: str) -> str:
    """`name` if it is a valid Nessie reference name; `InvalidNessieNameError` otherwise."""
    return _matching(name, NESSIE_REF_NAME, "a valid Nessie reference name")


def check_hash(value: str) -> str:
    """`value` if it is a Nessie commit hash; `InvalidNessieNameError` otherwise."""
    return _matching(value, _HASH, "a Nessie commit hash")


def _matching(value: str, pattern: re.Pattern[str], what: str) -> str:
    if isinstance(value, str) and pattern.fullmatch(value):
        return value
    raise InvalidNessieNameError(f"not {what}: {value!r}")


def api_base(uri: str) -> str:
    """The server's base URL from its API v1 or v2 URL, `<base>/api` or the base itself
    (Nessie serves `<base>/api/v1` and `<base>/api/v2` beside each other)."""
    return _API_SUFFIX.sub("", uri.rstrip("/"))


class NessieClient:
    """Branches, table contents and merges on one Nessie server.

    Raises `NessieUnavailableError` (unreachable or 5xx: retry), `NessieNotFoundError`,
    `MergeConflictError` (a merge or delete lost to a concurrent change),
    `InvalidNessieNameError` (refused before any request) and `NessieError` (any other
    refusal). Lookups return None for what does not exist instead of raising.
    """

    def __init__(
        self,
        uri: str,
        *,
        timeout: float = _TIMEOUT_SECONDS,
        credentials: CatalogCredentials | None = None,
        tokens: TokenCache | None = None,
        secret_loader: Callable[[str], str] | None = None,
    ) -> None:
        """A client of the server at `uri`, as the role of `credentials` (its tokens from the
        process's shared cache; `secret_loader` reads a secret kept in Secrets Manager) or
        of `tokens`; with neither, requests carry no token."""
        import pynessie
        import requests

        self.base = base = api_base(uri)
        self.api_v1, self.api_v2 = f"{base}/api/v1", f"{base}/api/v2"
        self._timeout = timeout
        # pynessie's `confuse` configuration creates its config directory (default
        # ~/.config/nessie); on Lambda only /tmp is writable, so point it there.
        os.environ.setdefault("NESSIEDIR", os.path.join(tempfile.gettempdir(), "nessie"))
        self._v1 = pynessie.init(
            config_dict={
                "endpoint": self.api_v1,
                "verify": True,
                "auth": {"type": "none", "timeout": int(timeout)},
            }
        )
        self._http = requests.Session()
        if tokens is None and credentials is not None:
            tokens = shared_cache(credentials, secret_loader=secret_loader)
        self.tokens = tokens
        if tokens is not None:
            auth = _BearerAuth(tokens)
            self._http.auth = auth
            # pynessie 0.67 only takes a fixed token (`auth.type: bearer`); its client sends
            # whatever `requests` auth it holds, so it gets ours, which renews the token.
            self._v1._auth = auth

    # ---- references ------------------------------------------------------------------------

    def references(self) -> list[Ref]:
        """Every reference, with its head commit time."""
        body = self._v2_call("GET", "trees", "list references", params={"fetch": "ALL"})
        return [
            _ref_from_v2(r)
            for r in body.get("references", [])
            if isinstance(r, dict) and isinstance(r.get("name"), str)
        ]

    def reference(self, name: str) -> Ref | None:
        """The reference `name`, or None when it does not exist."""
        check_ref_name(name)
        found = self._v1_call(f"read {name}", self._v1.get_reference, name, missing_ok=True)
        return _ref_from_pynessie(found) if found is not None else None

    def branch_hash(self, branch: str) -> str | None:
        """Current hash of `branch`, or None when it does not exist."""
        found = self.reference(branch)
        return found.hash if found is not None else None

    def main_hash(self) -> str:
        """Current hash of main; `NessieError` when the server has no main."""
        found = self.branch_hash(MAIN_BRANCH)
        if found is None:
            raise NessieError("Nessie has no main branch")
        return found

    def ensure_branch_from_main(self, branch: str) -> str:
        """Create `branch` at main's current hash; an existing branch is kept. Returns its hash."""
        existing = self.branch_hash(branch)
        if existing is not None:
            return existing
        main = self.main_hash()
        try:
            created = self._v1_call(
                f"create branch {branch}", self._v1.create_branch, branch, MAIN_BRANCH, main
            )
        except MergeConflictError:  # created concurrently by a retried invocation
            found = self.branch_hash(branch)
            if found is None:
                raise
            return found
        return created.hash_

    def delete_branch(self, branch: str, expected_hash: str | None = None) -> bool:
        """Delete `branch` (only if its head is `expected_hash`, when given); False when it
        was already gone. `MergeConflictError` when it moved past `expected_hash`."""
        current = self.branch_hash(branch)
        if current is None:
            return False
        if expected_hash is not None and check_hash(expected_hash) != current:
            raise MergeConflictError(
                f"branch {branch} is at {current[:12]}, not {expected_hash[:12]}: not deleted"
            )
        try:
            self._v1_call(f"delete branch {branch}", self._v1.delete_branch, branch, current)
        except NessieNotFoundError:  # deleted meanwhile
            return False
        return True

    # ---- contents --------------------------------------------------------------------------

    def _content(self, table: str, ref: str, hash_on_ref: str | None = None) -> Any:
        from pynessie.model import ContentKey

        check_ref_name(ref)
        if hash_on_ref is not None:
            check_hash(hash_on_ref)
        key = ContentKey(TableRef.parse(table).qualified.split("."))
        return self._v1_call(
            f"read {table} on {ref}", self._v1.get_content, ref, key, hash_on_ref, missing_ok=True
        )

    def table_snapshot(self, table: str, ref: str, hash_on_ref: str | None = None) -> int | None:
        """The Iceberg snapshot id Nessie holds for `table` (`ns.table`) on `ref`
        (at `hash_on_ref` when given); None when the table is not there."""
        snapshot = getattr(self._content(table, ref, hash_on_ref), "snapshot_id", None)
        return int(snapshot) if snapshot is not None else None

    def metadata_location(self, ref: str, table: str) -> str | None:
        """`metadataLocation` of the Iceberg table `ns.table` on `ref`; None when absent."""
        return getattr(self._content(table, ref), "metadata_location", None)

    def iceberg_tables(self, ref: str) -> dict[str, str]:
        """`ns.table` -> `metadataLocation` of every Iceberg table on `ref` whose key is a
        valid table identifier (others cannot be named by `wap` commands)."""
        tables: dict[str, str] = {}
        params: dict[str, Any] = {"content": "true", "max-records": 250}
        while True:
            path = f"trees/{quote(check_ref_name(ref), safe='')}/entries"
            body = self._v2_call("GET", path, f"list tables on {ref}", params=params)
            for entry in body.get("entries", []):
                location = (entry.get("content") or {}).get("metadataLocation")
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

    def contents_at(self, ref: str, commit_hash: str) -> list[Content]:
        """Every Iceberg table and view at `ref@commit_hash`, whatever its key (garbage
        collection must see the files of contents `wap` cannot name, too)."""
        path = f"trees/{quote(check_ref_name(ref), safe='')}@{check_hash(commit_hash)}/entries"
        found: list[Content] = []
        params: dict[str, Any] = {"content": "true", "max-records": 250}
        while True:
            body = self._v2_call(
                "GET", path, f"list contents of {ref}@{commit_hash[:12]}", params=params
            )
            for entry in body.get("entries", []):
                content = entry.get("content") or {}
                location = content.get("metadataLocation")
                if entry.get("type") not in ("ICEBERG_TABLE", "ICEBERG_VIEW") or not isinstance(
                    location, str
                ):
                    continue
                snapshot = content.get("snapshotId")
                found.append(
                    Content(
                        key=".".join(entry.get("name", {}).get("elements", [])),
                        type=entry["type"],
                        metadata_location=location,
                        snapshot_id=int(snapshot) if isinstance(snapshot, int) else None,
                    )
                )
            if not body.get("hasMore") or not body.get("token"):
                return found
            params = {**params, "page-token": body["token"]}

    def commit_log(self, ref: str, head: str | None = None) -> Iterator[Commit]:
        """The commits of `ref` (from `head`, when given), newest first, one page at a time:
        a caller that stops early reads no further."""
        spec = quote(check_ref_name(ref), safe="")
        if head is not None:
            spec += f"@{check_hash(head)}"
        params: dict[str, Any] = {"max-records": 250}
        while True:
            body = self._v2_call(
                "GET", f"trees/{spec}/history", f"read the log of {ref}", params=params
            )
            for entry in body.get("logEntries", []):
                meta = entry.get("commitMeta") or {}
                if isinstance(meta.get("hash"), str):
                    yield Commit(hash=meta["hash"], commit_time=meta.get("commitTime"))
            if not body.get("hasMore") or not body.get("token"):
                return
            params = {**params, "page-token": body["token"]}

    def main_holds(self, table: str, snapshot_id: int | None) -> bool:
        """Whether main's `table` is at `snapshot_id`: the audited commit was merged.

        One table lock means nothing else publishes to the table between a merge and
        the recording of its outcome, so main's current snapshot is the one to compare.
        """
        if snapshot_id is None:
            return False
        return self.table_snapshot(table, MAIN_BRANCH) == int(snapshot_id)

    # ---- merges ----------------------------------------------------------------------------

    def merge_into_main(self, branch: str, audited_hash: str, meta: MergeMeta) -> str:
        """Merge exactly `branch@audited_hash` into main's current head; return main's new hash.

        The state machine's publish and a human `wap publish` both merge here, so main
        moves only by merging an audited commit. `MergeConflictError` when main changed
        the same content (or moved under the merge).
        """
        body = self._merge_request(
            branch,
            audited_hash,
            "merge",
            message=meta.message,
            commitMeta={
                "message": meta.message,
                "authors": [meta.author],
                "properties": dict(meta.properties),
            },
        )
        if not body.get("wasSuccessful", True):
            raise MergeConflictError(f"Nessie refused to merge {branch} into main: conflict")
        merged = body.get("resultantTargetHash")
        if not isinstance(merged, str):
            raise NessieError(f"Nessie's merge answer names no resulting hash: {_one_line(body)}")
        return merged

    def merge_conflicts(self, branch: str, audited_hash: str) -> list[str]:
        """The content keys (`ns.table`) whose change on main since `branch` forked would
        make merging `branch@audited_hash` conflict; [] when it would merge. A dry run:
        nothing is committed."""
        body = self._merge_request(
            branch, audited_hash, "try merging", dryRun=True, returnConflictAsResult=True
        )
        if body.get("wasSuccessful", True):
            return []
        return [
            ".".join((detail.get("key") or {}).get("elements") or ())
            for detail in body.get("details") or ()
            if detail.get("conflict")
        ]

    def _merge_request(
        self, branch: str, audited_hash: str, action: str, **body: Any
    ) -> dict[str, Any]:
        """POST a merge of `branch@audited_hash` into main's current head with `body`'s
        other fields; Nessie's answer."""
        check_ref_name(branch)
        check_hash(audited_hash)
        main = self.main_hash()
        return self._v2_call(
            "POST",
            f"trees/{quote(MAIN_BRANCH, safe='')}@{check_hash(main)}/history/merge",
            f"{action} {branch}@{audited_hash[:12]} into main",
            json={"fromRefName": branch, "fromHash": audited_hash, **body},
        )

    # ---- transports ------------------------------------------------------------------------

    def _v1_call(
        self,
        action: str,
        fn: Any,
        *args: Any,
        missing_ok: bool = False,
        **kwargs: Any,
    ) -> Any:
        """pynessie's `fn(*args)`, its failures as our errors; None for a missing reference
        or content when `missing_ok`. A 401 renews the token and calls once more."""
        from pynessie.error import NessieUnauthorizedException

        for attempt in (1, 2):
            try:
                return fn(*args, **kwargs)
            except NessieUnauthorizedException as exc:
                if attempt == 1 and self._renew_token():
                    continue
                raise _unauthorized(f"{action} (Nessie at {self.base})", _one_line(exc)) from exc
            except Exception as exc:
                translated = _translate(exc, f"{action} (Nessie at {self.base})")
                if translated is exc:
                    raise
                if missing_ok and isinstance(translated, NessieNotFoundError):
                    return None
                raise translated from exc
        raise AssertionError("unreachable")

    def _renew_token(self) -> bool:
        """Forget the token after a 401; whether there is one to fetch anew (then retry)."""
        if self.tokens is None:
            return False
        self.tokens.invalidate()
        return True

    def _v2_call(
        self,
        method: str,
        path: str,
        action: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]:
        import requests

        for attempt in (1, 2):
            try:
                response = self._http.request(
                    method,
                    f"{self.api_v2}/{path}",
                    params=params,
                    json=json,
                    timeout=self._timeout,
                )
            except requests.RequestException as exc:
                raise NessieUnavailableError(
                    f"Nessie at {self.base} unreachable while trying to {action}: "
                    f"{type(exc).__name__}"
                ) from exc
            except TokenError as exc:
                raise _token_error(exc, action) from exc
            if response.status_code != 401 or attempt == 2 or not self._renew_token():
                break
        if response.status_code < 400:
            try:
                body = response.json() if response.content else {}
            except ValueError as exc:
                # Not Nessie answering (a proxy's or load balancer's page): an outage.
                raise NessieUnavailableError(
                    f"Nessie at {self.base} answered {action} with something other than "
                    f"JSON (HTTP {response.status_code})"
                ) from exc
            if not isinstance(body, dict):
                raise NessieError(f"Nessie at {self.base}: unexpected answer to {action}")
            return body
        try:
            message = response.json().get("message") or response.text
        except ValueError:
            message = response.text
        raise _error_for_status(
            response.status_code, f"{action} (Nessie at {self.base})", _one_line(message)
        )


def _translate(exc: Exception, action: str) -> Exception:
    """A pynessie/requests/token failure as our error; other exceptions unchanged."""
    import requests
    from pynessie.error import (
        NessieConflictException,
        NessieException,
        NessieNotFoundException,
        NessiePermissionException,
        NessieServerException,
    )

    if isinstance(exc, TokenError):
        return _token_error(exc, action)
    if isinstance(exc, NessiePermissionException):
        return NessieForbiddenError(f"Nessie refused to {action}: {_one_line(exc)}")
    if isinstance(exc, requests.RequestException):
        return NessieUnavailableError(f"Nessie unreachable while trying to {action}: {exc}")
    if isinstance(exc, NessieServerException):
        return NessieUnavailableError(f"Nessie server error while trying to {action}: {exc}")
    if isinstance(exc, NessieConflictException):
        return MergeConflictError(f"Nessie conflict while trying to {action}: {exc}")
    if isinstance(exc, NessieNotFoundException):
        return NessieNotFoundError(f"Nessie: {_one_line(exc)}")
    if isinstance(exc, NessieException):
        return NessieError(f"Nessie refused to {action}: {exc}")
    return exc


def _token_error(exc: TokenError, action: str) -> Exception:
    if isinstance(exc, TokenEndpointUnavailableError):
        return NessieUnavailableError(f"no catalog token to {action}: {exc}")
    return NessieAuthenticationError(f"no catalog token to {action}: {exc}")


def _unauthorized(action: str, message: str) -> Exception:
    return NessieAuthenticationError(
        f"Nessie did not accept the credentials to {action} (HTTP 401): {message}"
    )


class _BearerAuth:
    """`requests` auth: the cache's current token on every request (pynessie's and ours)."""

    def __init__(self, tokens: TokenCache) -> None:
        self.tokens = tokens

    def __call__(self, request: Any) -> Any:
        request.headers["Authorization"] = f"Bearer {self.tokens.token()}"
        return request


def _error_for_status(status: int, action: str, message: str) -> Exception:
    if status == 401:
        return _unauthorized(action, message)
    if status == 403:
        return NessieForbiddenError(f"Nessie refused to {action} (HTTP 403): {message}")
    if status >= 500:
        return NessieUnavailableError(f"Nessie server error while trying to {action}: {message}")
    if status == 404:
        return NessieNotFoundError(f"Nessie: {message}")
    if status == 409:
        return MergeConflictError(f"Nessie conflict while trying to {action}: {message}")
    return NessieError(f"Nessie refused to {action} (HTTP {status}): {message}")


def _one_line(value: object) -> str:
    return " ".join(str(value).split())[:300]


def _ref_from_pynessie(ref: Any) -> Ref:
    return Ref(name=ref.name, hash=ref.hash_ or "", type=type(ref).__name__.upper())


def _ref_from_v2(raw: dict[str, Any]) -> Ref:
    head = (raw.get("metadata") or {}).get("commitMetaOfHEAD") or {}
    return Ref(
        name=raw["name"],
        hash=raw.get("hash", ""),
        type=raw.get("type", "BRANCH"),
        head_commit_time=head.get("commitTime"),
    )
