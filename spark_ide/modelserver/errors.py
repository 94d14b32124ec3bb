"""Errors a client can cause, and the ``error`` event they become (the codes are the
protocol's, in :mod:`spark_ide.responses_protocol`).

We send OpenAI's nested WebSocket shape everywhere, so a client needs to parse one form::

    {"type": "error", "status": 400,
     "error": {"type": "invalid_request_error", "code": "...", "message": "...", "param": ...}}
"""

from __future__ import annotations

from typing import Any

from spark_ide import responses_protocol as protocol


class ProtocolError(Exception):
    """A client message the server refuses; the connection stays open. ``code`` is None
    where OpenAI sends ``"code": null`` (a broken tool-call chain)."""

    def __init__(
        self,
        code: str | None,
        message: str,
        *,
        param: str | None = None,
        status: int = 400,
        error_type: str = protocol.INVALID_REQUEST_ERROR,
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
        return {"type": protocol.ERROR, "status": self.status, "error": self.body()}


def missing(param: str) -> ProtocolError:
    return ProtocolError(protocol.MISSING_PARAMETER, f"Missing required parameter: '{param}'.", param=param)


def wrong_type(param: str, expected: str) -> ProtocolError:
    return ProtocolError(
        protocol.INVALID_TYPE, f"Invalid type for '{param}': expected {expected}.", param=param
    )


def bad_value(param: str, detail: str) -> ProtocolError:
    return ProtocolError(protocol.INVALID_VALUE, f"Invalid value for '{param}': {detail}", param=param)
