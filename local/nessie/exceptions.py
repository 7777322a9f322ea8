"""Nessie's error codes, HTTP statuses and messages (word for word where Nessie's source has them).

Every error the server returns is a `NessieApiError`; the routes turn it into Nessie's JSON error
body (`status`, `reason`, `message`, `errorCode`, `serverStackTrace`, `errorDetails`).
Messages follow `RefMapping`, `ReferenceConflictException` and the `Nessie*Exception` classes of
projectnessie/nessie 0.104.
"""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class NessieApiError(Exception):
    """Base of every error the server reports to clients."""

    status = 500
    error_code = "UNKNOWN"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def body(self, with_details: bool) -> dict[str, Any]:
        """Nessie's `NessieError` JSON; `errorDetails` only for clients sending spec >= 2."""
        body: dict[str, Any] = {
            "status": self.status,
            "reason": REASONS.get(self.status, "Error"),
            "message": self.message,
            "errorCode": self.error_code,
            "serverStackTrace": None,
        }
        if with_details and self.details is not None:
            body["errorDetails"] = self.details
        return body


class BadRequestError(NessieApiError):
    """Malformed input: JSON, parameters, names, hashes."""

    status = 400
    error_code = "BAD_REQUEST"


class UnauthorizedError(NessieApiError):
    """No bearer token, or one that is invalid or expired (Quarkus answers before Nessie:
    the message is NessieAuthMechanism's; `WWW-Authenticate` says how to authenticate)."""

    status = 401
    error_code = "UNKNOWN"

    def __init__(self, message: str, *, invalid: bool = False) -> None:
        super().__init__(message)
        # RFC 6750 3: a refused token is `invalid_token`; a missing one gets the bare scheme.
        self.challenge = 'Bearer error="invalid_token"' if invalid else "Bearer"


class ForbiddenError(NessieApiError):
    """An authorization rule refused an operation (Nessie's AccessCheckException)."""

    status = 403
    error_code = "FORBIDDEN"


class PayloadTooLargeError(BadRequestError):
    """Request body over the configured limit (Nessie's HTTP layer answers 413)."""

    status = 413


class UnsupportedMediaTypeError(NessieApiError):
    """A Content-Type or Content-Encoding the server does not accept."""

    status = 415
    error_code = "UNSUPPORTED_MEDIA_TYPE"


class ServiceUnavailableError(NessieApiError):
    """The repository database stayed locked by another writer for too long."""

    status = 503
    error_code = "SERVICE_UNAVAILABLE"


class NotFoundError(NessieApiError):
    """Unknown path or method (no Nessie error code applies)."""

    status = 404
    error_code = "UNKNOWN"


class ReferenceNotFoundError(NessieApiError):
    """A named reference or a commit hash does not exist (or is not on the reference)."""

    status = 404
    error_code = "REFERENCE_NOT_FOUND"

    @classmethod
    def named(cls, name: str) -> ReferenceNotFoundError:
        return cls(f"Named reference '{name}' not found")

    @classmethod
    def hash_not_on_ref(cls, hash_: str, ref: str) -> ReferenceNotFoundError:
        return cls(f"Could not find commit '{hash_}' in reference '{ref}'.")

    @classmethod
    def commit(cls, hash_: str) -> ReferenceNotFoundError:
        return cls(f"Commit '{hash_}' not found")


class ReferenceAlreadyExistsError(NessieApiError):
    """Creating a reference whose name is taken."""

    status = 409
    error_code = "REFERENCE_ALREADY_EXISTS"

    @classmethod
    def named(cls, name: str) -> ReferenceAlreadyExistsError:
        return cls(f"Named reference '{name}' already exists.")


class ContentNotFoundError(NessieApiError):
    """No content at a key on the requested commit."""

    status = 404
    error_code = "CONTENT_NOT_FOUND"

    @classmethod
    def at(cls, key_elements: list[str], ref: str) -> ContentNotFoundError:
        key = ".".join(key_elements)
        return cls(
            f"Could not find content for key '{key}' in reference '{ref}'.",
            {"type": "CONTENT_KEY", "key": {"elements": list(key_elements)}},
        )


class ReferenceConflictError(NessieApiError):
    """Expected hash mismatch or per-key conflicts; carries Nessie's `Conflict` list."""

    status = 409
    error_code = "REFERENCE_CONFLICT"

    def __init__(self, conflicts: list[dict[str, Any]]) -> None:
        self.conflicts = conflicts
        super().__init__(
            conflicts_message(conflicts), {"type": "REFERENCE_CONFLICTS", "conflicts": conflicts}
        )

    @classmethod
    def unexpected_hash(cls, ref: str, expected: str, current: str) -> ReferenceConflictError:
        return cls(
            [
                conflict(
                    "UNEXPECTED_HASH",
                    None,
                    f"named-reference '{ref}' is not at expected hash '{expected}', "
                    f"but at '{current}'",
                )
            ]
        )


def conflict(conflict_type: str, key: list[str] | None, message: str) -> dict[str, Any]:
    """One `Conflict` object as Nessie serialises it."""
    out: dict[str, Any] = {"conflictType": conflict_type, "message": message}
    if key is not None:
        out["key"] = {"elements": list(key)}
    return out


def conflicts_message(conflicts: list[dict[str, Any]]) -> str:
    """`ReferenceConflictException.buildMessage`: one conflict capitalised, several joined."""
    if len(conflicts) == 1:
        msg = conflicts[0]["message"]
        return msg[:1].upper() + msg[1:] + "."
    joined = ", ".join(c["message"] for c in conflicts)
    return (
        f"There are multiple conflicts that prevent committing the provided operations: {joined}."
    )
