"""Errors of the WAP job; each maps to one report outcome (see report.py)."""

from __future__ import annotations


class WapJobError(Exception):
    """Base error of the WAP job."""

    reason_code = "job_error"


class InvalidArgumentError(WapJobError):
    """A job argument (table, branch, ingest id) is malformed."""

    reason_code = "invalid_argument"


class ConfigError(WapJobError):
    """The table config is invalid (unknown check, missing column, bad regex, ...)."""

    reason_code = "config_error"


class InputRejectedError(WapJobError):
    """The source files cannot be read or written into the table."""

    reason_code = "unreadable_input"


class SchemaPolicyError(InputRejectedError):
    """The file's schema differs from the table's in a way the policy forbids."""

    reason_code = "schema_policy"


class CatalogError(WapJobError):
    """The catalog (Nessie) did not answer as expected."""

    reason_code = "catalog_error"


class ReportWriteError(WapJobError):
    """The report could not be written; the only case where the job exits non-zero."""

    reason_code = "report_write_failed"


def describe(exc: BaseException, limit: int = 400) -> str:
    """One readable line for an exception, the JVM's root cause when there is one.

    Spark wraps the interesting part ("Null value appeared in non-nullable field",
    "is not a Parquet file") several causes deep behind "Job aborted ...".
    """
    java = getattr(exc, "java_exception", None)
    if java is not None:
        root = java
        while root.getCause() is not None and root.getCause() != root:
            root = root.getCause()
        text = str(root.getMessage() or root.toString())
    else:
        text = str(exc)
    text = " ".join(line.strip() for line in text.strip().splitlines()[:3] if line.strip())
    return (text[:limit] + "...") if len(text) > limit else (text or type(exc).__name__)
