"""Every message a client may send on the session socket, declared once (docs/protocol.md §2).

A declaration names the type, the roles that may send it and each field: its JSON type,
whether it is required, its default and its limits. The consumer looks a message up here,
checks the sender's role, then ``validate`` turns the untrusted JSON object into plain
values of the declared types, or says which field is wrong. No handler ever sees a field
that was not checked: a list where a string belongs used to reach a set lookup and close
the socket (issue 16). The authorisation test walks ``MESSAGES`` too, so a new message
without a rule in its table fails there.

Fields a declaration does not name are ignored, so clients may send more than a server
knows (the contract may grow).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .context import MAX_EXCLUDED, MAX_MENTIONS
from .events import DRIVER_ROLES, EFFORTS, ErrorCode, Role
from .focus import AskedRange
from .prompt_queue import MAX_QUEUED

__all__ = [
    "ALL_ROLES",
    "MESSAGES",
    "Field",
    "Invalid",
    "Limits",
    "MessageSpec",
    "validate",
]

ALL_ROLES = frozenset(Role)
MAX_ID_CHARS = 64  # turn and run ids are 32 hex characters; room to spare, not for abuse
MAX_SAFE_INT = 2**53 - 1  # the largest integer every client (JavaScript) reads exactly
MAX_SEQ = 2**63 - 1  # a seq travels between processes as a 64-bit integer (msgpack)
MAX_LINE = 10_000_000  # a line number a range may name (past a file's end it is clamped)


@dataclass(frozen=True)
class Limits:
    """Lengths that come from settings (the consumer fills them in); the defaults are the
    documented ones."""

    prompt_chars: int = 20_000
    path_chars: int = 512
    run_input_chars: int = 10_000  # one line typed into a running program
    id_chars: int = MAX_ID_CHARS
    name_chars: int = 200  # a checkpoint's name


class Invalid(Exception):
    """A message refused for one field: the error code and a message naming the field."""

    def __init__(self, code: ErrorCode, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.field = code, message, field


@dataclass(frozen=True)
class Field:
    """One field of a message.

    ``kinds``: the JSON types accepted (``bool`` is never taken for ``int``). ``limit``: for a
    string, the ``Limits`` attribute bounding its length. ``blank``: whether a string of only
    spaces counts as given. ``choices``: the values allowed. ``minimum``/``maximum``: for an
    integer. ``required_unless``: required except when that boolean field is true. A list
    with a ``limit`` is a list of non-empty strings (``items`` says of what), each within
    that limit, at most ``maximum`` of them (``strings``). ``parse``: for an object, checks
    its parts and makes the value (raises ``Invalid``); ``what``: what it must be, in words.
    """

    name: str
    kinds: tuple[type, ...]
    required: bool = False
    default: Any = None
    limit: str | None = None
    blank: bool = True
    choices: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    required_unless: str | None = None
    items: str = "turn ids"
    parse: Callable[[Mapping[str, Any], Limits], Any] | None = None
    what: str | None = None

    def describe(self) -> str:
        """What the field must be, in words, for error messages and the docs."""
        if self.what is not None:
            return self.what
        names = {str: "a string", bool: "true or false", int: "an integer", list: f"a list of {self.items}"}
        kind = " or ".join(names.get(kind, kind.__name__) for kind in self.kinds)
        if self.choices is not None:
            return f"one of {list(self.choices)}"
        if str in self.kinds and not self.blank:
            kind = "a non-empty string"
        if self.kinds == (int,) and self.minimum is not None and self.maximum is not None:
            kind += f" from {self.minimum} to {self.maximum}"
        return kind


@dataclass(frozen=True)
class MessageSpec:
    """One client message type: who may send it and what it carries."""

    type: str
    roles: frozenset[Role]
    fields: tuple[Field, ...] = ()
    doc: str = ""
    names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(f.name for f in self.fields))


def _text(name: str, *, limit: str, required: bool = True, blank: bool = False, **rest: Any) -> Field:
    return Field(name, (str,), required=required, default="", limit=limit, blank=blank, **rest)


def _flag(name: str) -> Field:
    return Field(name, (bool,), default=False)


def _line_range(value: Mapping[str, Any], limits: Limits) -> AskedRange:
    """A ``range``: ``{path, from_line, to_line}`` (a selection's lines, 1-based, inclusive) or
    ``{path, line}`` (the cursor's line: the server takes the block around it)."""
    path = value.get("path")
    if not isinstance(path, str) or not path.strip():
        raise Invalid(ErrorCode.MISSING_FIELD, "'range' needs 'path': the file's path, a non-empty string", "range")
    if len(path) > limits.path_chars:
        raise Invalid(ErrorCode.TOO_LONG, f"'range.path' is longer than {limits.path_chars} characters", "range")
    named = [name for name in ("from_line", "to_line", "line") if value.get(name) is not None]
    if named not in (["from_line", "to_line"], ["line"]):
        raise Invalid(ErrorCode.MISSING_FIELD if len(named) < 2 else ErrorCode.BAD_FIELD,
                      "'range' needs either 'from_line' and 'to_line' (a selection) or 'line' (the cursor)", "range")
    numbers = [value[name] for name in named]
    for name, number in zip(named, numbers, strict=True):
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= MAX_LINE:
            raise Invalid(ErrorCode.BAD_FIELD, f"'range.{name}' must be an integer from 1 to {MAX_LINE}", "range")
    if named == ["line"]:
        return AskedRange(path, numbers[0], numbers[0], cursor=True)
    if numbers[0] > numbers[1]:
        raise Invalid(ErrorCode.BAD_FIELD,
                      f"'range.from_line' ({numbers[0]}) is after 'range.to_line' ({numbers[1]})", "range")
    return AskedRange(path, numbers[0], numbers[1])


_RANGE = Field("range", (dict,), parse=_line_range,
               what="an object: {path, from_line, to_line} (lines, 1-based, inclusive) or {path, line} (the cursor)")
def _strings(name: str, *, most: int, items: str) -> Field:
    """An optional list of at most ``most`` paths (or ``path:symbol``), each a non-empty string
    within ``path_chars``."""
    return Field(name, (list,), default=(), limit="path_chars", maximum=most, items=items)


# What a prompt (and a steer, and a preview of either) names of the context: @-mentions, files
# the person took out (docs/protocol.md "Mentions and the context").
_CONTEXT_FIELDS = (
    _strings("mentions", most=MAX_MENTIONS, items="paths or path:symbol (strings)"),
    _strings("exclude", most=MAX_EXCLUDED, items="paths (strings)"),
)


_DECLARED = (
    MessageSpec("prompt", DRIVER_ROLES, (
        _text("text", limit="prompt_chars"),
        Field("effort", (str,), default="medium", choices=tuple(EFFORTS)),
        _text("path", limit="path_chars", required=False, blank=True),
        _RANGE,  # a prompt on lines of a file (Ctrl+K): ``live.focus``
        *_CONTEXT_FIELDS,
    ), "start a turn (queued while one runs)"),
    MessageSpec("steer", DRIVER_ROLES, (_text("text", limit="prompt_chars"), _RANGE, *_CONTEXT_FIELDS),
                "stop the running turn and prompt again"),
    MessageSpec("context.preview", DRIVER_ROLES, (
        _text("text", limit="prompt_chars", required=False, blank=True),
        _text("path", limit="path_chars", required=False, blank=True),
        *_CONTEXT_FIELDS,
    ), "what the next request would carry of the workspace: answered by a context event to this page"),
    MessageSpec("symbols", DRIVER_ROLES, (_text("path", limit="path_chars"),),
                "the top-level definitions of a Python file: answered by a symbols event to this page"),
    MessageSpec("stop", DRIVER_ROLES, (), "cancel the running turn"),
    MessageSpec("edit_steer.commit", DRIVER_ROLES, (
        Field("why", (str,), default="key", choices=("key", "left")),
    ), "steer now with the pending steering edit (Ctrl+Enter: key; the cursor left its lines: left)"),
    MessageSpec("edit_steer.cancel", DRIVER_ROLES, (), "the pending steering edit stays an ordinary edit (Esc)"),
    MessageSpec("edit_steer.switch", DRIVER_ROLES, (Field("on", (bool,), required=True),),
                "whether this person's edits of the lines the model writes steer it (on by default)"),
    MessageSpec("queue.edit", DRIVER_ROLES, (
        _text("turn", limit="id_chars"), _text("text", limit="prompt_chars"), _CONTEXT_FIELDS[0],
    ),
                "change the text of a queued prompt"),
    MessageSpec("queue.delete", DRIVER_ROLES, (_text("turn", limit="id_chars"),), "take a prompt out of the queue"),
    MessageSpec("queue.move", DRIVER_ROLES, (
        _text("turn", limit="id_chars"),
        Field("position", (int,), required=True, minimum=1, maximum=MAX_QUEUED),
    ), "move a queued prompt to another place (1 runs next)"),
    MessageSpec("queue.steer", DRIVER_ROLES, (_text("turn", limit="id_chars"),),
                "take a prompt out of the queue and steer the running turn with it now (or start it)"),
    MessageSpec("queue.merge", DRIVER_ROLES, (Field("turns", (list,), required=True),),
                "replace queued prompts by one, their texts joined in queue order, at the first one's place"),
    MessageSpec("revert", DRIVER_ROLES, (_text("turn", limit="id_chars"),), "undo a turn's edits"),
    MessageSpec("restore", DRIVER_ROLES, (_text("turn", limit="id_chars"),),
                "undo the revert of a turn (until the next turn starts): its edits back"),
    MessageSpec("hunk.keep", DRIVER_ROLES, (
        _text("turn", limit="id_chars"),
        _flag("all"),  # (before ``block``, which it makes optional)
        Field("block", (int,), required_unless="all", minimum=0, maximum=MAX_SAFE_INT),
    ), "keep an applied block of a turn (its edit.status block), or all of the turn's waiting for review"),
    MessageSpec("hunk.undo", DRIVER_ROLES, (
        _text("turn", limit="id_chars"),
        _flag("all"),  # (before ``block``, which it makes optional)
        Field("block", (int,), required_unless="all", minimum=0, maximum=MAX_SAFE_INT),
    ), "undo one applied block of a turn alone (others' typing stays), or all of the turn's waiting for review"),
    MessageSpec("checkpoint.create", DRIVER_ROLES, (_text("name", limit="name_chars"),),
                "a named checkpoint of the files and the conversation as they are now"),
    MessageSpec("checkpoint.restore", DRIVER_ROLES, (
        _text("checkpoint", limit="id_chars"),
        _flag("code"),  # every file back to the checkpoint's text
        _flag("conversation"),  # the next request starts from the checkpoint's conversation
    ), "go back to a checkpoint: its code, its conversation or both (not while a turn runs)"),
    MessageSpec("run", DRIVER_ROLES, (
        _flag("tests"),
        _text("path", limit="path_chars", required=False, required_unless="tests"),
        _flag("confirm"),  # run despite the watchdog's high-severity findings
    ), "run a file, or the tests, in the sandbox"),
    MessageSpec("run.input", DRIVER_ROLES, (
        _text("run", limit="id_chars"),
        _text("text", limit="run_input_chars", blank=True),
    ), "a line for the running program's stdin"),
    MessageSpec("run.stop", DRIVER_ROLES, (_text("run", limit="id_chars"),), "kill a run"),
    MessageSpec("resume", ALL_ROLES, (
        Field("after", (int,), required=True, minimum=0, maximum=MAX_SEQ),
    ), "replay what came before joining, after that seq"),
    MessageSpec("document.adopted", ALL_ROLES, (
        Field("generation", (int,), required=True, minimum=0, maximum=MAX_SAFE_INT),
    ), "the page now holds the replaced document: its binary frames from here on are of it"),
    MessageSpec("ping", ALL_ROLES, (
        Field("id", (int, str), limit="id_chars", minimum=-MAX_SAFE_INT, maximum=MAX_SAFE_INT),
    ), "answered by pong with the same id"),
)

MESSAGES: Mapping[str, MessageSpec] = {spec.type: spec for spec in _DECLARED}
"""The client message types by name (dotted names; ``run_input`` is not ``run.input``)."""


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in kinds  # JSON true is not the integer 1
    return isinstance(value, kinds)


def validate(spec: MessageSpec, message: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
    """The declared fields of ``message`` as checked values (defaults filled in), or ``Invalid``.

    A required field that is absent, null or not of its type is ``missing_field`` (the
    message says what it must be); an optional one of the wrong type, or any value outside
    its choices or range, is ``bad_field``; a string over its limit is ``too_long``.
    """
    values: dict[str, Any] = {}
    for spec_field in spec.fields:
        name = spec_field.name
        value = message.get(name)
        required = spec_field.required or (
            spec_field.required_unless is not None and values.get(spec_field.required_unless) is not True
        )
        given = value is not None and _is(value, spec_field.kinds)
        if given and isinstance(value, str) and not spec_field.blank and not value.strip():
            given = False  # only spaces: as good as absent
        if not given:
            if required:
                raise Invalid(
                    ErrorCode.MISSING_FIELD, f"'{spec.type}' needs '{name}': {spec_field.describe()}", name
                )
            if value is not None and not (isinstance(value, str) and str in spec_field.kinds):
                raise Invalid(ErrorCode.BAD_FIELD, f"'{name}' must be {spec_field.describe()}", name)
            values[name] = spec_field.default
            continue
        if isinstance(value, str):
            limit = getattr(limits, spec_field.limit) if spec_field.limit is not None else None
            if limit is not None and len(value) > limit:
                raise Invalid(ErrorCode.TOO_LONG, f"'{name}' is longer than {limit} characters", name)
            if spec_field.choices is not None and value not in spec_field.choices:
                raise Invalid(ErrorCode.BAD_FIELD, f"'{name}' must be {spec_field.describe()}", name)
        elif isinstance(value, list) and spec_field.limit is not None:
            value = _string_list(spec, spec_field, value, limits)
        elif isinstance(value, int) and not isinstance(value, bool):
            low, high = spec_field.minimum, spec_field.maximum
            if (low is not None and value < low) or (high is not None and value > high):
                raise Invalid(ErrorCode.BAD_FIELD, f"'{name}' must be {spec_field.describe()}", name)
        elif isinstance(value, dict) and spec_field.parse is not None:
            value = spec_field.parse(value, limits)
        values[name] = value
    return values


def _string_list(spec: MessageSpec, spec_field: Field, value: list[Any], limits: Limits) -> tuple[str, ...]:
    """A list field of strings (``_strings``) as a tuple, or ``Invalid``: an item that is not a
    non-empty string is ``bad_field``; too many items, or one too long, ``too_long``."""
    name = spec_field.name
    most = spec_field.maximum
    if most is not None and len(value) > most:
        raise Invalid(ErrorCode.TOO_LONG, f"'{name}' holds more than {most} items", name)
    limit = getattr(limits, spec_field.limit or "")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise Invalid(ErrorCode.BAD_FIELD, f"'{name}' must be {spec_field.describe()}", name)
        if len(item) > limit:
            raise Invalid(ErrorCode.TOO_LONG, f"an item of '{name}' is longer than {limit} characters", name)
    return tuple(dict.fromkeys(value))
