"""The errors of the HTTP API: ``{"error": {"code", "message"}}`` with the code's status. Each
code is spelled once (``ApiCode``), listed in docs/protocol.md ("Errors of the HTTP API").

A code that means what the session socket's ``error`` event means (a bad path, a body that
is not JSON, too many files, a file where a folder is) is the socket's own
(``live.events.ErrorCode``): a client reads one word for one fault, whichever way it came.
"""

from __future__ import annotations

from enum import StrEnum

from django.http import JsonResponse

from spark_ide.live.events import ErrorCode


class ApiCode(StrEnum):
    # The socket's codes, where the fault is the same.
    MALFORMED_JSON = ErrorCode.MALFORMED_JSON.value
    BAD_PATH = ErrorCode.BAD_PATH.value
    TOO_MANY_FILES = ErrorCode.TOO_MANY_FILES.value
    PATH_CONFLICT = ErrorCode.PATH_CONFLICT.value
    BAD_FIELD = ErrorCode.BAD_FIELD.value
    FORBIDDEN = ErrorCode.FORBIDDEN.value
    # The HTTP API's own.
    BAD_NAME = "bad_name"
    BAD_FILE = "bad_file"
    BAD_ZIP = "bad_zip"
    BAD_UPLOAD = "bad_upload"
    BAD_ACTION = "bad_action"
    NOT_AUTHENTICATED = "not_authenticated"
    BAD_TOKEN = "bad_token"  # noqa: S105  # an error code, not a secret
    CSRF_FAILED = "csrf_failed"
    GUEST_FORBIDDEN = "guest_forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    EXISTS = "exists"
    CHANGED = "changed"  # the file changed since the text the write was based on
    READ_ONLY = "read_only"
    FILE_TOO_LARGE = "file_too_large"
    IMPORT_TOO_LARGE = "import_too_large"
    TOO_MANY_WORKSPACES = "too_many_workspaces"
    NOT_UTF8 = "not_utf8"
    UNKNOWN_MODEL = "unknown_model"  # not a model of the server's catalogue (docs/models.md)
    MODEL_NOT_ALLOWED = "model_not_allowed"  # a model the student's course does not allow
    INTERNAL_ERROR = "internal_error"

    @property
    def status(self) -> int:
        """The HTTP status the API answers this code with."""
        return _STATUS.get(self, 400)


_STATUS: dict[ApiCode, int] = {
    ApiCode.NOT_AUTHENTICATED: 401,
    ApiCode.BAD_TOKEN: 401,
    ApiCode.CSRF_FAILED: 403,
    ApiCode.GUEST_FORBIDDEN: 403,
    ApiCode.FORBIDDEN: 403,
    ApiCode.MODEL_NOT_ALLOWED: 403,
    ApiCode.NOT_FOUND: 404,
    ApiCode.METHOD_NOT_ALLOWED: 405,
    ApiCode.EXISTS: 409,
    ApiCode.CHANGED: 409,
    ApiCode.READ_ONLY: 409,
    ApiCode.PATH_CONFLICT: 409,
    ApiCode.FILE_TOO_LARGE: 413,
    ApiCode.IMPORT_TOO_LARGE: 413,
    ApiCode.TOO_MANY_FILES: 413,
    ApiCode.NOT_UTF8: 415,
    ApiCode.INTERNAL_ERROR: 500,
}


class ApiError(Exception):
    """A client error with a stable machine-readable code (``api.api_view`` answers it)."""

    def __init__(self, code: ApiCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error_response(code: ApiCode, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code.value, "message": message}}, status=code.status)
