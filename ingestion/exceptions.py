"""Errors of the orchestration Lambdas.

The Python Lambda runtime reports an exception's class name as `errorType`;
the state machine retries on the names of the `RetryableError` subclasses.
"""

from __future__ import annotations


class WapError(Exception):
    """Base error of the orchestration Lambdas."""


class ConfigError(WapError):
    """The Lambda environment is missing or has an invalid setting."""


class RetryableError(WapError):
    """A dependency failed transiently; the same invocation may succeed later."""


class NessieUnavailableError(RetryableError):
    """The Nessie server could not be reached or answered 5xx."""


class AwsUnavailableError(RetryableError):
    """An AWS API throttled the call or failed on its side (5xx, connection); idempotent
    calls are retried."""


class LedgerContentionError(RetryableError):
    """A ledger item kept changing under a conditional write."""


class NessieError(WapError):
    """Nessie refused a request (4xx other than a conflict)."""


class NessieNotFoundError(NessieError):
    """A Nessie reference (or the content asked for on it) does not exist."""


class NessieForbiddenError(NessieError):
    """Nessie's authorization rules refused this caller's role an operation (HTTP 403); the
    message names the operation and the reference. Permanent: nothing was changed."""


class NessieAuthenticationError(NessieError):
    """The catalog did not accept this caller's credentials: the token endpoint refused the
    client, or Nessie refused a freshly fetched token (HTTP 401)."""


class InvalidNessieNameError(NessieError, ValueError):
    """A reference name or commit hash is malformed; refused before it reaches a URL."""


class MergeConflictError(WapError):
    """Nessie rejected a merge (or a delete) because the target moved or changed the same
    content."""


class AuditedCommitMismatchError(WapError):
    """The commit to publish does not hold the snapshot its audit report names."""


class InvalidEventError(WapError):
    """The Lambda input does not have the expected shape."""


class DoctorRequestError(InvalidEventError, ValueError):
    """A doctor event that names no known check, or an invalid run id."""


class UnroutableKeyError(WapError, ValueError):
    """An object key does not name a table we can ingest into (the message says why)."""


class SourceVersionGoneError(WapError):
    """The object version named by the event no longer exists (or was replaced)."""


class TableBusyError(WapError):
    """A compaction asked for a table another run holds (try again when it is free)."""


class UnknownTableError(WapError, ValueError):
    """A compaction asked for a table main does not have."""


class NotACompactionError(InvalidEventError):
    """A run id that names no compaction of the ledger."""
