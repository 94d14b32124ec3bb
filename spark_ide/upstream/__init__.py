"""Spark IDE's way to the model: one interface over the Responses WebSocket and
Chat Completions SSE, with normalised events, timing marks and cancel strategies.

No Django in here. See docs/upstream.md.
"""

from spark_ide.upstream.backoff import RETRYABLE_CLOSE_CODES, RetryPolicy
from spark_ide.upstream.base import ModelClient
from spark_ide.upstream.client import open_client
from spark_ide.upstream.config import ProviderConfig, websocket_url
from spark_ide.upstream.dialects import EditStyle
from spark_ide.upstream.errors import ConfigError, UpgradeRefused, UpstreamError
from spark_ide.upstream.events import (
    Completed,
    ErrorEvent,
    Failed,
    FileOperation,
    Incomplete,
    Marks,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStarted,
    ToolInputDelta,
    ToolKind,
    UpstreamEvent,
    Usage,
    is_terminal,
)
from spark_ide.upstream.profiles import (
    CancelStrategy,
    Effort,
    Provider,
    ProviderProfile,
    Transport,
    profile_for,
)
from spark_ide.upstream.request import InputItem, Message, ToolOutput, TurnRequest
from spark_ide.upstream.sse import ChatCompletionsClient
from spark_ide.upstream.stream import TurnStream
from spark_ide.upstream.ws_client import ResponsesClient

__all__ = [
    "RETRYABLE_CLOSE_CODES",
    "CancelStrategy",
    "ChatCompletionsClient",
    "Completed",
    "ConfigError",
    "EditStyle",
    "Effort",
    "ErrorEvent",
    "Failed",
    "FileOperation",
    "Incomplete",
    "InputItem",
    "Marks",
    "Message",
    "ModelClient",
    "Provider",
    "ProviderConfig",
    "ProviderProfile",
    "ResponsesClient",
    "RetryPolicy",
    "TextDelta",
    "ToolCall",
    "ToolCallDone",
    "ToolCallStarted",
    "ToolInputDelta",
    "ToolKind",
    "ToolOutput",
    "Transport",
    "TurnRequest",
    "TurnStream",
    "UpgradeRefused",
    "UpstreamError",
    "UpstreamEvent",
    "Usage",
    "is_terminal",
    "open_client",
    "profile_for",
    "websocket_url",
]
