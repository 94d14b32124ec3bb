"""What a scripted answer is made of: rounds of text and tool calls.

A script is a sequence of **rounds**. Round 1 answers the user's message; when it made
tool calls, the client answers them in a follow-up request and round 2 plays, and so on.
Each round is a sequence of **steps**, each one output item of the response:

* :class:`Say` - an assistant message;
* :class:`CustomCall` - a call of a custom (freeform) tool, e.g. Codex's ``apply_patch``;
* :class:`FunctionCall` - a call of a function tool (``arguments`` is JSON text);
* :class:`PatchCall` - a call of OpenAI's built-in ``apply_patch`` tool (one file).

In a script file (JSON) the same script is written in OpenAI's own item shapes::

    "fix": [
      ["Fixing it.", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin..."}],
      "Done."
    ]

A script is a string (one round, one message) or a list of rounds; a round is a string
(one message) or a list of steps; a step is a string (a message) or an object whose
``type`` is ``custom_tool_call`` (``name``, ``input``), ``function_call`` (``name``,
``arguments``: a string or an object, sent as JSON) or ``apply_patch_call``
(``operation``: ``{type, path, diff}``; no diff for ``delete_file``). Any call may fix its
``call_id``; otherwise each play draws a fresh one. A call with ``"stream": false`` sends no
delta or done events of its own: its input arrives whole in ``response.output_item.done``
(as from a server that does not stream apply_patch diffs); its tokens still take their time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from spark_ide.modelserver.engine import PatchOperation


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class CustomCall:
    name: str
    input: str
    call_id: str | None = None
    stream: bool = True


@dataclass(frozen=True)
class FunctionCall:
    name: str
    arguments: str
    call_id: str | None = None
    stream: bool = True


@dataclass(frozen=True)
class PatchCall:
    operation: PatchOperation
    path: str
    diff: str = ""
    call_id: str | None = None
    stream: bool = True


Step = Say | CustomCall | FunctionCall | PatchCall
Round = tuple[Step, ...]
Script = tuple[Round, ...]
# What a caller may hand the engine for one script: the JSON form or the parsed one.
ScriptSource = str | Sequence[Any] | Script

_OPERATIONS = get_args(PatchOperation)


class ScriptError(ValueError):
    """A script that cannot be played; the message says where and why."""


def parse_script(source: ScriptSource, where: str = "script") -> Script:
    """The rounds of a script given as a string, a JSON list, or already parsed."""
    if isinstance(source, str):
        return ((Say(source),),)
    if not isinstance(source, Sequence) or not source:
        raise ScriptError(f"{where}: a script is a string or a non-empty list of rounds")
    return tuple(_round(value, f"{where}, round {index + 1}") for index, value in enumerate(source))


def _round(value: Any, where: str) -> Round:
    if isinstance(value, str | Step):
        return (_step(value, where),)
    if not isinstance(value, Sequence) or not value:
        raise ScriptError(f"{where}: a round is a string or a non-empty list of steps")
    return tuple(_step(step, f"{where}, step {index + 1}") for index, step in enumerate(value))


def _step(value: Any, where: str) -> Step:
    if isinstance(value, Step):
        return _checked(value, where)
    if isinstance(value, str):
        return Say(value)
    if not isinstance(value, Mapping):
        raise ScriptError(f"{where}: a step is a string or an object with a 'type'")
    kind = value.get("type")
    call_id = _text(value, "call_id", where, optional=True)
    stream = value.get("stream", True)
    if not isinstance(stream, bool):
        raise ScriptError(f"{where}: stream must be true or false")
    if kind == "custom_tool_call":
        return CustomCall(_text(value, "name", where), _text(value, "input", where), call_id or None, stream)
    if kind == "function_call":
        arguments = value.get("arguments")
        if isinstance(arguments, Mapping):
            arguments = json.dumps(arguments)
        if not isinstance(arguments, str):
            raise ScriptError(f"{where}: arguments must be a string (JSON text) or an object")
        return FunctionCall(_text(value, "name", where), arguments, call_id or None, stream)
    if kind == "apply_patch_call":
        operation = value.get("operation")
        if not isinstance(operation, Mapping):
            raise ScriptError(f"{where}: operation must be an object {{type, path, diff}}")
        op_where = f"{where}, operation"
        diff = _text(operation, "diff", op_where, optional=True)
        path = _text(operation, "path", op_where)
        call = PatchCall(operation.get("type"), path, diff, call_id or None, stream)  # type: ignore[arg-type]
        return _checked(call, where)
    raise ScriptError(
        f"{where}: type {kind!r} is not one of custom_tool_call, function_call, apply_patch_call"
    )


def _checked(step: Step, where: str) -> Step:
    if isinstance(step, PatchCall):
        if step.operation not in _OPERATIONS:
            raise ScriptError(f"{where}: operation type {step.operation!r} is not one of {list(_OPERATIONS)}")
        if step.operation == "delete_file" and step.diff:
            raise ScriptError(f"{where}: delete_file carries no diff")
        if not step.path:
            raise ScriptError(f"{where}: the operation's path must not be empty")
    return step


def _text(data: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> str:
    value = data.get(key)
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise ScriptError(f"{where}: {key} must be a string")
    return value
