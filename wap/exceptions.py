"""Errors of the operations: each names the condition and carries a one-line message for humans."""

from __future__ import annotations


class OpsError(Exception):
    """Base error of `wap` operations; the message is shown to the user as is."""


class InvalidInputError(OpsError):
    """An argument is malformed (file, table name, branch name, reason)."""


class UnknownTargetError(OpsError):
    """No ingest or branch matches the given name or id."""


class NotAllowedError(OpsError):
    """The ingest is not in a state that allows the operation (e.g. publishing a PUBLISHED one)."""


class CatalogError(OpsError):
    """Nessie refused the request or could not be reached."""


class CatalogConflictError(CatalogError):
    """Nessie rejected a merge or delete because a reference moved (HTTP 409)."""


class BackendError(OpsError):
    """The backend could not be opened (stack outputs, credentials, local state)."""
