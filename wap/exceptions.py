"""Errors of the operations: each names the condition and carries a one-line message for humans.

Nessie's errors are the client's own (`ingestion.exceptions`, raised by
`ingestion.nessie.NessieClient`), and an unreadable Iceberg table raises the lake
reader's `lakeview.exceptions.TableReadError`; the user-facing edges (`wap.cli.app._run`,
the dashboard's `_with_backend`) show them as they show these.
"""

from __future__ import annotations


class OpsError(Exception):
    """Base error of `wap` operations; the message is shown to the user as is."""


class InvalidInputError(OpsError):
    """An argument is malformed (file, table name, branch name, reason)."""


class ConfigurationError(OpsError):
    """A setting of the command's environment is unusable (e.g. WAP_TABLES_DIR names no
    directory): refused before anything runs without it."""


class UnknownTargetError(OpsError):
    """No ingest or branch matches the given name or id."""


class NotAllowedError(OpsError):
    """The ingest is not in a state that allows the operation (e.g. publishing a PUBLISHED one)."""


class DashboardError(Exception):
    """A dashboard page cannot be shown; the message says why, in one line."""


class BackendError(OpsError):
    """The backend could not be opened (stack outputs, credentials, local state)."""
