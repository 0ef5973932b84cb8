"""The one mapping from errors to HTTP responses (Topic Memory RFC, "HTTP API": "the
existing 401, 422, 503, and 500 semantics"; TOPIC-MEMORY.md, "Auth").

Every error body is ``{"error": {"code": <snake code>, "message": <text>, "field":
<name or null>}}``:

======  ===============================  ==============================================
status  code                             raised for
======  ===============================  ==============================================
401     ``unauthorized``                 no or a wrong bearer token (``WWW-Authenticate``)
404     ``not_found``                    ArtifactNotFoundError (an unknown or foreign
                                         reference), an unknown path
405     ``method_not_allowed``           a known path with another method
408     ``request_timeout``              a body that did not arrive within 10 s
                                         (:mod:`.guards`; the connection is closed)
409     ``conflict``                     RevisionConflictError (retry)
422     ``invalid_input``                InvalidInputError (``field`` named), a request
                                         body pydantic refuses (wrong types, extra or
                                         missing fields, oversized strings, bad JSON),
                                         any other ValueError
503     ``topic_processing_unavailable`` TopicProcessingUnavailableError,
                                         SupervisorUnavailableError (flush while the Topic
                                         generation configuration is refused)
503     ``capability_not_supported``     another CapabilityNotSupportedError (a hybrid
                                         search whose embedding model failed)
503     ``backend_unavailable``          BackendError, CommitOutcomeUnknownError, a
                                         retrieval shape or profile the deployment's
                                         database refuses, a connection error
503     ``writes_paused``                WritesPausedError (``Retry-After``)
500     ``integrity_error``              IntegrityError (stored data fails its check)
500     ``internal``                     anything else; the message says only that, the
                                         exception is logged (type and traceback, never
                                         the request body)
======  ===============================  ==============================================

Bad input is never a 500: the request models refuse it first, the services' own
checks raise InvalidInputError second. A token-protected route checks the token before
it reads the body (:mod:`.guards`): without a valid token the answer is 401, whatever
the body holds.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from powercontext.core import errors

__all__ = [
    "ERROR_RESPONSES",
    "ApiError",
    "ErrorBody",
    "error_body",
    "install_error_handlers",
    "status_for",
]

log = logging.getLogger("powercontext.http")


class ApiError(Exception):
    """An HTTP-level refusal that is no domain error: ``status``, snake ``code``,
    ``message``, the offending ``field`` (or None) and extra response ``headers``."""

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers or {}


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The error body every route returns: ``{"error": {"code", "message", "field"}}``."""
    return {"error": {"code": code, "message": message, "field": field}}


#: (type, status, code), most specific first.
_TABLE: tuple[tuple[type[BaseException], int, str], ...] = (
    (errors.InvalidInputError, 422, "invalid_input"),
    (errors.ArtifactNotFoundError, 404, "not_found"),
    (errors.TopicProcessingUnavailableError, 503, "topic_processing_unavailable"),
    (errors.SupervisorUnavailableError, 503, "topic_processing_unavailable"),
    (errors.CapabilityNotSupportedError, 503, "capability_not_supported"),
    (errors.RevisionConflictError, 409, "conflict"),
    (errors.WritesPausedError, 503, "writes_paused"),
    (errors.ProfileMismatchError, 503, "backend_unavailable"),
    (errors.BackendError, 503, "backend_unavailable"),
    (errors.CommitOutcomeUnknownError, 503, "backend_unavailable"),
    (errors.IntegrityError, 500, "integrity_error"),
    (errors.InvalidCitationError, 422, "invalid_input"),
    (ConnectionError, 503, "backend_unavailable"),
    (ValueError, 422, "invalid_input"),
)


def status_for(exc: BaseException) -> tuple[int, str, str, str | None]:
    """``(status, code, message, field)`` for an exception a route raised (the table of
    the module docstring). An unknown exception is ``(500, "internal", <a fixed text>,
    None)``: nothing of it reaches the client."""
    if isinstance(exc, ApiError):
        return exc.status, exc.code, exc.message, exc.field
    for cls, status, code in _TABLE:
        if isinstance(exc, cls):
            field = getattr(exc, "field", None)
            message = str(exc) or type(exc).__name__
            if status >= 500 and code == "backend_unavailable" \
                    and not isinstance(exc, errors.PowerContextError):
                message = "the database is unavailable"  # a driver's text may hold a DSN
            return status, code, message, field if isinstance(field, str) else None
    return 500, "internal", "internal error (logged on the server)", None


def _field(loc: Sequence[Any]) -> str | None:
    parts = [str(p) for p in loc]
    if parts and parts[0] == "body":
        parts = parts[1:]
    return ".".join(parts) or None


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    problems = list(exc.errors())
    if not problems:
        return "the request is not valid", None
    first = problems[0]
    field = _field(first.get("loc", ()))
    kind = first.get("type", "")
    if kind == "json_invalid":
        return "the request body is not valid JSON", None
    if field is None and kind in ("missing", "model_attributes_type", "dict_type",
                                  "model_type"):
        return ("the request body must be a JSON object (Content-Type: "
                "application/json)"), None
    msg = str(first.get("msg", "is not valid"))
    if kind == "extra_forbidden":
        msg = "is not a field of this request"
    text = f"{field}: {msg}" if field else msg
    if len(problems) > 1:
        text += f" (and {len(problems) - 1} more problem(s))"
    return text, field


def _response(status: int, code: str, message: str, field: str | None,
              headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message, field), status_code=status,
                        headers=headers)


async def _on_validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    message, field = _validation_message(exc)
    return _response(422, "invalid_input", message, field)


async def _on_http(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    codes = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
             413: "invalid_input", 415: "invalid_input"}
    status = exc.status_code
    message = exc.detail if isinstance(exc.detail, str) else "request refused"
    if status == 400:  # the framework's body parsing (a body that is not UTF-8 JSON)
        status, message = 422, "the request body is not valid JSON (UTF-8)"
    code = codes.get(status, "internal" if status >= 500 else "invalid_input")
    if status == 404 and message == "Not Found":
        message = "no such endpoint (see /openapi.json)"
    return _response(status, code, message, None, dict(exc.headers or {}))


async def _on_error(request: Request, exc: Exception) -> JSONResponse:
    status, code, message, field = status_for(exc)
    headers = exc.headers if isinstance(exc, ApiError) else None
    if isinstance(exc, errors.WritesPausedError):
        headers = {"Retry-After": "5"}
    if status >= 500:
        # the code and the type only: never the request body
        log.log(logging.ERROR if status == 500 else logging.WARNING,
                "request failed path=%s", request.url.path,
                extra={"stage": "http", "error_code": code,
                       "exception_type": type(exc).__name__})
    return _response(status, code, message, field, headers)


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers: request validation -> 422, Starlette's own HTTP errors
    (404 unknown path, 405) re-shaped, every other exception through
    :func:`status_for`."""
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    # the typed errors only: a handler for Exception itself would run in Starlette's
    # ServerErrorMiddleware, which re-raises; the app's guard middleware answers those
    for cls in (ApiError, errors.PowerContextError, ValueError, ConnectionError):
        app.add_exception_handler(cls, _on_error)


class ErrorDetail(BaseModel):
    """What went wrong: a snake ``code``, a readable ``message`` and the offending
    ``field`` (or null)."""

    model_config = ConfigDict(extra="forbid")
    code: str
    message: str
    field: str | None


class ErrorBody(BaseModel):
    """The body of every error response (the module docstring's table)."""

    model_config = ConfigDict(extra="forbid")
    error: ErrorDetail


#: The documented error responses of every authenticated POST route (OpenAPI).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"description": text, "model": ErrorBody}
    for status, text in (
        (401, "Missing or wrong bearer token (`unauthorized`)"),
        (404, "Unknown or foreign reference (`not_found`)"),
        (409, "A concurrent change won; retry (`conflict`)"),
        (413, "The request body is over 256 KiB (`invalid_input`)"),
        (422, "Bad input (`invalid_input`; `field` names the offender)"),
        (500, "Internal error (`internal`, `integrity_error`)"),
        (503, "Topic processing, the database or a capability is unavailable"),
    )
}
