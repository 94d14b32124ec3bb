"""Errors a client can cause, and the ``error`` event they become.

We send OpenAI's nested WebSocket shape everywhere, so a client needs to parse one form::

    {"type": "error", "status": 400,
     "error": {"type": "invalid_request_error", "code": "...", "message": "...", "param": ...}}
"""

from __future__ import annotations

from typing import Any

INVALID_JSON = "invalid_json"
INVALID_VALUE = "invalid_value"
INVALID_TYPE = "invalid_type"
MISSING_PARAMETER = "missing_required_parameter"
MESSAGE_TOO_LARGE = "message_too_large"
MODEL_NOT_FOUND = "model_not_found"
PREVIOUS_RESPONSE_NOT_FOUND = "previous_response_not_found"
RESPONSE_NOT_FOUND = "response_not_found"
CANCEL_NOT_ACTIVE = "response_cancel_not_active"
CONNECTION_LIMIT_REACHED = "websocket_connection_limit_reached"


class ProtocolError(Exception):
    """A client message the server refuses; the connection stays open."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        param: str | None = None,
        status: int = 400,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param
        self.status = status
        self.error_type = error_type

    def body(self) -> dict[str, Any]:
        """The inner ``error`` object (also used inside ``response.steer.failed``)."""
        return {
            "type": self.error_type,
            "code": self.code,
            "message": self.message,
            "param": self.param,
        }

    def event(self) -> dict[str, Any]:
        return {"type": "error", "status": self.status, "error": self.body()}


def missing(param: str) -> ProtocolError:
    return ProtocolError(MISSING_PARAMETER, f"Missing required parameter: '{param}'.", param=param)


def wrong_type(param: str, expected: str) -> ProtocolError:
    return ProtocolError(
        INVALID_TYPE, f"Invalid type for '{param}': expected {expected}.", param=param
    )


def bad_value(param: str, detail: str) -> ProtocolError:
    return ProtocolError(INVALID_VALUE, f"Invalid value for '{param}': {detail}", param=param)
