"""The HTTP edge shared by both API versions: body limits, gzip, JSON, routing by raw path
segments, and Nessie's error bodies. Routes modules declare `(method, pattern, handler)`."""

from __future__ import annotations

import gzip
import json
import logging
import sqlite3
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .authz import Checks, Security
from .exceptions import (
    BadRequestError,
    NessieApiError,
    NotFoundError,
    PayloadTooLargeError,
    ServiceUnavailableError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from .store import NessieStore

LOG = logging.getLogger(__name__)
MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass
class Call:
    """One parsed request: what handlers see (no Starlette types past this point)."""

    method: str
    params: dict[str, str]
    query: list[tuple[str, str]]
    headers: dict[str, str]
    raw_body: bytes = b""
    # The caller's access checks (Nessie's BatchAccessChecker); without security, all pass.
    access: Checks = field(default_factory=lambda: Checks(None, None))
    _json: Any = field(default=None, init=False)

    def arg(self, name: str, default: str | None = None) -> str | None:
        for k, v in self.query:
            if k == name:
                return v
        return default

    def args(self, name: str) -> list[str]:
        return [v for k, v in self.query if k == name]

    def int_arg(self, name: str) -> int | None:
        value = self.arg(name)
        if value is None or value == "":
            return None
        try:
            number = int(value)
        except ValueError:
            raise BadRequestError(f"Query parameter '{name}' must be an integer") from None
        if number < 0:
            raise BadRequestError(f"Query parameter '{name}' must not be negative")
        return number

    def bool_arg(self, name: str) -> bool:
        return (self.arg(name) or "").lower() == "true"

    def json(self) -> Any:
        if self._json is None:
            if not self.raw_body:
                raise BadRequestError("Request body is required")
            try:
                self._json = json.loads(self.raw_body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise BadRequestError(f"Malformed JSON request body: {exc}") from None
        return self._json


Handler = Callable[[NessieStore, Call], tuple[int, Any]]
Route = tuple[str, tuple[str, ...], Handler]


def _match(pattern: tuple[str, ...], segments: list[str]) -> dict[str, str] | None:
    if len(pattern) != len(segments):
        return None
    params: dict[str, str] = {}
    for pat, seg in zip(pattern, segments, strict=True):
        if pat.startswith("{"):
            if not seg:
                return None
            params[pat[1:-1]] = seg
        elif pat != seg:
            return None
    return params


def route(
    routes: list[Route], method: str, raw_segments: list[str]
) -> tuple[Handler, dict[str, str]]:
    """Find the handler; a ref segment may span '/' when it carries '@' (Nessie's rule)."""
    candidates = [[unquote(s) for s in raw_segments]]
    # `feature/x@hash` sent with an unencoded '/': join segments up to the one with '@'.
    for i, seg in enumerate(raw_segments[2:], start=2):
        if "@" in seg or "%40" in seg.lower():
            joined = "/".join(raw_segments[1 : i + 1])
            candidates.append(
                [unquote(raw_segments[0]), unquote(joined)]
                + [unquote(s) for s in raw_segments[i + 1 :]]
            )
            break
    allowed = False
    for segments in candidates:
        for meth, pattern, handler in routes:
            params = _match(pattern, segments)
            if params is None:
                continue
            if meth == method:
                return handler, params
            allowed = True
    if allowed:
        raise _method_not_allowed(method)
    raise NotFoundError(f"No such API endpoint: {method} /{'/'.join(raw_segments)}")


async def read_body(request: Request) -> bytes:
    """Request body, gunzipped when `Content-Encoding: gzip`, both capped at MAX_BODY_BYTES."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise PayloadTooLargeError(f"Request body exceeds {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise PayloadTooLargeError(f"Request body exceeds {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").lower().strip()
    if encoding in ("", "identity") or not body:
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise UnsupportedMediaTypeError(f"Unsupported Content-Encoding '{encoding}'")
    try:
        wbits = 16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS
        decoder = zlib.decompressobj(wbits)
        out = decoder.decompress(body, MAX_BODY_BYTES + 1)
        if len(out) > MAX_BODY_BYTES or decoder.unconsumed_tail:
            raise PayloadTooLargeError(f"Decompressed request body exceeds {MAX_BODY_BYTES} bytes")
        if not decoder.eof:
            raise BadRequestError("Truncated gzip request body")
        return out
    except (zlib.error, gzip.BadGzipFile, EOFError) as exc:
        raise BadRequestError(f"Invalid gzip request body: {exc}") from None


def error_response(exc: NessieApiError, request: Request) -> JSONResponse:
    # Nessie's rule: the integer part of `Nessie-Client-Spec` (e.g. "2" or "2.1") >= 2.
    spec = request.headers.get("nessie-client-spec", "").strip().split(".", 1)[0]
    with_details = spec.isdigit() and int(spec) >= 2
    headers = {"WWW-Authenticate": exc.challenge} if isinstance(exc, UnauthorizedError) else None
    return JSONResponse(exc.body(with_details), status_code=exc.status, headers=headers)


def make_endpoint(
    store: NessieStore, routes: list[Route], prefix: str, security: Security | None = None
) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint serving every route of one API version under `prefix`; with
    `security`, every request authenticated first and its operations authorized."""
    prefix_bytes = prefix.encode()

    async def endpoint(request: Request) -> Response:
        try:
            raw_path: bytes = request.scope.get("raw_path") or request.url.path.encode()
            raw_path = raw_path.split(b"?", 1)[0]
            if not raw_path.startswith(prefix_bytes):
                raise NotFoundError("No such API endpoint")
            rest = raw_path[len(prefix_bytes) :].decode("utf-8", "strict").strip("/")
            segments = rest.split("/") if rest else []
            # Quarkus authenticates before Nessie routes: an unknown path is a 401 too.
            principal = (
                security.authenticate(request.headers.get("authorization"))
                if security is not None
                else None
            )
            handler, params = route(routes, request.method, segments)
            call = Call(
                request.method,
                params,
                list(request.query_params.multi_items()),
                {k.lower(): v for k, v in request.headers.items()},
            )
            if security is not None:
                call.access = security.checks(principal)
            if request.method in ("POST", "PUT"):
                call.raw_body = await read_body(request)
            status, payload = handler(store, call)
            LOG.debug(
                "%s %s?%s -> %s", request.method, raw_path.decode(), request.url.query, status
            )
            if status == 204 and payload is None:
                return Response(status_code=204)
            return JSONResponse(payload, status_code=status)
        except NessieApiError as exc:
            LOG.debug("%s %s -> %s %s", request.method, request.url, exc.status, exc.message)
            return error_response(exc, request)
        except UnicodeDecodeError:
            return error_response(BadRequestError("Request is not valid UTF-8"), request)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return error_response(
                    ServiceUnavailableError(
                        "The repository is busy (database locked), retry later"
                    ),
                    request,
                )
            LOG.exception("Database error for %s %s", request.method, request.url.path)
            return error_response(NessieApiError("Internal server error"), request)
        except Exception:  # never a bare 500 page: Nessie's error body, details logged
            LOG.exception("Unhandled error for %s %s", request.method, request.url.path)
            return error_response(NessieApiError("Internal server error"), request)

    return endpoint


class _MethodNotAllowed(NessieApiError):
    status = 405
    error_code = "UNKNOWN"


def _method_not_allowed(method: str) -> NessieApiError:
    return _MethodNotAllowed(f"HTTP method {method} is not allowed for this endpoint")
