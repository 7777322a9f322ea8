"""All Nessie access of the Lambdas, through `pynessie` (API v1), in one place.

Transport and server errors are translated here into our exceptions so the
client can be swapped without touching the handlers.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from lambdas.common.constants import MAIN_BRANCH
from lambdas.common.exceptions import MergeConflictError, NessieError, NessieUnavailableError
from lambdas.common.naming import NESSIE_REF_NAME

_TIMEOUT_SECONDS = 10


def _translate(exc: Exception, action: str) -> Exception:
    """Map a pynessie/requests failure to our error hierarchy."""
    import requests
    from pynessie.error import NessieConflictException, NessieException, NessieServerException

    if isinstance(exc, requests.RequestException):
        return NessieUnavailableError(f"Nessie unreachable while trying to {action}: {exc}")
    if isinstance(exc, NessieServerException):
        return NessieUnavailableError(f"Nessie server error while trying to {action}: {exc}")
    if isinstance(exc, NessieConflictException):
        return MergeConflictError(f"Nessie conflict while trying to {action}: {exc}")
    if isinstance(exc, NessieException):
        return NessieError(f"Nessie refused to {action}: {exc}")
    return exc


def _check_ref(name: str) -> None:
    if not NESSIE_REF_NAME.fullmatch(name):
        raise ValueError(f"not a valid Nessie reference name: {name!r}")


class NessieGateway:
    """Branch operations the orchestration needs, on a Nessie API v1 endpoint."""

    def __init__(self, api_v1_uri: str) -> None:
        import pynessie

        # pynessie's `confuse` configuration creates its config directory (default
        # ~/.config/nessie); on Lambda only /tmp is writable, so point it there.
        os.environ.setdefault("NESSIEDIR", os.path.join(tempfile.gettempdir(), "nessie"))
        self._client = pynessie.init(
            config_dict={
                "endpoint": api_v1_uri,
                "verify": True,
                "auth": {"type": "none", "timeout": _TIMEOUT_SECONDS},
            }
        )

    def _call(self, action: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            translated = _translate(exc, action)
            if translated is exc:
                raise
            raise translated from exc

    def branch_hash(self, branch: str) -> str | None:
        """Current hash of `branch`, or None when it does not exist."""
        from pynessie.error import NessieNotFoundException

        _check_ref(branch)
        try:
            return self._client.get_reference(branch).hash_
        except NessieNotFoundException:
            return None
        except Exception as exc:
            raise _translate(exc, f"read branch {branch}") from exc

    def main_hash(self) -> str:
        found = self.branch_hash(MAIN_BRANCH)
        if found is None:
            raise NessieError("Nessie has no main branch")
        return found

    def ensure_branch_from_main(self, branch: str) -> str:
        """Create `branch` at main's current hash; an existing branch is kept. Returns its hash."""
        from pynessie.error import NessieConflictException

        existing = self.branch_hash(branch)
        if existing is not None:
            return existing
        main = self.main_hash()
        try:
            return self._client.create_branch(branch, MAIN_BRANCH, main).hash_
        except NessieConflictException:  # created concurrently by a retried invocation
            found = self.branch_hash(branch)
            if found is None:
                raise
            return found
        except Exception as exc:
            raise _translate(exc, f"create branch {branch}") from exc

    def table_snapshot(self, table: str, ref: str, hash_on_ref: str | None = None) -> int | None:
        """The Iceberg snapshot id Nessie holds for `table` (`ns.table`) on `ref`
        (at `hash_on_ref` when given); None when the table is not there.

        Raises `NessieUnavailableError` or `NessieError`.
        """
        from pynessie.error import NessieNotFoundException
        from pynessie.model import ContentKey

        _check_ref(ref)
        key = ContentKey(table.split("."))
        try:
            content = self._client.get_content(ref, key, hash_on_ref)
        except NessieNotFoundException:
            return None
        except Exception as exc:
            raise _translate(exc, f"read {table} on {ref}") from exc
        snapshot = getattr(content, "snapshot_id", None)
        return int(snapshot) if snapshot is not None else None

    def main_holds(self, table: str, snapshot_id: int | None) -> bool:
        """Whether main's `table` is at `snapshot_id`: the audited commit was merged.

        One table lock means nothing else publishes to the table between a merge and
        the recording of its outcome, so main's current snapshot is the one to compare.
        """
        if snapshot_id is None:
            return False
        return self.table_snapshot(table, MAIN_BRANCH) == int(snapshot_id)

    def merge_into_main(self, branch: str, from_hash: str) -> str:
        """Merge exactly `branch@from_hash` into main; return main's new hash.

        Raises `MergeConflictError` when main changed the same content.
        """
        _check_ref(branch)
        main = self.main_hash()
        self._call(
            f"merge {branch}@{from_hash} into main",
            self._client.merge,
            branch,
            MAIN_BRANCH,
            from_hash,
            main,
        )
        return self.main_hash()

    def delete_branch(self, branch: str) -> bool:
        """Delete `branch` at whatever hash it has; False when it was already gone."""
        from pynessie.error import NessieNotFoundException

        current = self.branch_hash(branch)
        if current is None:
            return False
        try:
            self._client.delete_branch(branch, current)
        except NessieNotFoundException:
            return False
        except Exception as exc:
            raise _translate(exc, f"delete branch {branch}") from exc
        return True
