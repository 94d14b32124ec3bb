"""The browser's copy of the session protocol: ``static/src/protocol.js``, generated.

The page must agree with the server on every name that crosses the socket: the event types
(and which of them are ephemeral), the client message types, an edit block's states (and
which are still in flight), turn statuses, finish reasons, error codes, roles, close codes,
efforts. They are defined once, in Python (``live.events``, ``live.messages``,
``editing.status``, ``editing.parse_events``); this module writes them out as an ES module
the bundle imports, so no list is typed twice. The file is committed (the bundle needs no
Python to build); ``tests/live/test_protocol_export.py`` fails when it is stale.

    python -m spark_ide.live.protocol_export           # (re)write static/src/protocol.js
    python -m spark_ide.live.protocol_export --check   # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from spark_ide.editing.parse_events import BlockKind
from spark_ide.editing.status import BlockOperation, EditState

from .events import DEFAULT_EFFORT, DRIVER_ROLES, EFFORTS, EVENTS, CloseCode, ErrorCode, FinishReason, Role, TurnStatus
from .messages import MESSAGES

__all__ = ["COMMAND", "TARGET", "constant_name", "main", "render", "sections"]

TARGET = Path(__file__).resolve().parents[2] / "static" / "src" / "protocol.js"
COMMAND = "python -m spark_ide.live.protocol_export"
SOURCES = (
    "spark_ide/live/events.py", "spark_ide/live/messages.py", "spark_ide/editing/status.py",
    "spark_ide/editing/parse_events.py",
)

Value = str | int
LINE_CHARS = 120  # longer lines of values are written one value a line


@dataclass(frozen=True)
class Section:
    """One export of the module: ``kind`` ``names`` (a frozen object, NAME: value), ``set``
    (a Set of values), ``list`` (a frozen array) or ``value`` (one value)."""

    name: str
    doc: str
    kind: str
    values: tuple[tuple[str, Value], ...]


def constant_name(value: str) -> str:
    """The JS constant for a protocol name: ``turn.started`` -> ``TURN_STARTED``."""
    return value.upper().replace(".", "_").replace("-", "_")


def _names(name: str, doc: str, pairs: Iterable[tuple[str, Value]]) -> Section:
    return Section(name, doc, "names", tuple(pairs))


def _enum(name: str, doc: str, enum: type[Enum]) -> Section:
    return _names(name, doc, ((member.name, member.value) for member in enum))


def _set(name: str, doc: str, values: Iterable[str]) -> Section:
    return Section(name, doc, "set", tuple((value, value) for value in values))


def sections() -> tuple[Section, ...]:
    """What the module exports, in order; every value is read from its Python definition."""
    return (
        _names("EVENT", "Every event the server sends on the session socket, by type (events.EVENTS).",
               ((constant_name(cls.type), cls.type) for cls in EVENTS)),
        _set("EPHEMERAL_EVENTS", "Events that carry the room's current seq without taking one; never replayed.",
             (cls.type for cls in EVENTS if cls.ephemeral)),
        _names("MESSAGE", "Every message a client may send, by type (messages.MESSAGES).",
               ((constant_name(kind), kind) for kind in MESSAGES)),
        _enum("EDIT_STATE", "An edit block's `state` in `edit.status` (editing.status.EditState).", EditState),
        _set("EDIT_STATES_IN_FLIGHT", "The edit states that are not final: the block is still being written.",
             (state.value for state in EditState if not state.is_final)),
        _set("EDIT_STATES_FINAL", "The edit states that end a block.",
             (state.value for state in EditState if state.is_final)),
        _enum("BLOCK_KIND", "An edit block's `detail.kind` (editing.parse_events.BlockKind).", BlockKind),
        _enum("BLOCK_OPERATION",
              "An apply_patch block's file operation: `detail.operation` (editing.status.BlockOperation).",
              BlockOperation),
        _enum("TURN_STATUS", "A turn's `status` (events.TurnStatus).", TurnStatus),
        _enum("FINISH_REASON", "Why a turn ended: `turn.finished` `reason` (events.FinishReason).", FinishReason),
        _enum("ERROR_CODE", "The `code` of an `error` event (events.ErrorCode).", ErrorCode),
        _enum("ROLE", "A participant's role (events.Role).", Role),
        _set("DRIVER_ROLES", "The roles that may prompt, steer, stop, revert, run and edit.",
             (role.value for role in Role if role in DRIVER_ROLES)),
        _enum("CLOSE_CODE", "The codes the server closes a session socket with (events.CloseCode).", CloseCode),
        Section("EFFORTS", "The effort levels a prompt may ask for, lowest first.", "list",
                tuple((effort, effort) for effort in EFFORTS)),
        Section("DEFAULT_EFFORT", "The effort of a prompt that names none.", "value",
                (("DEFAULT_EFFORT", DEFAULT_EFFORT),)),
    )


def _render_section(section: Section) -> list[str]:
    lines = [f"// {section.doc}"]
    literal = [json.dumps(value, ensure_ascii=False) for _, value in section.values]
    if section.kind == "names":
        lines.append(f"export const {section.name} = Object.freeze({{")
        lines.extend(f"  {key}: {value}," for (key, _), value in zip(section.values, literal, strict=True))
        lines.append("});")
    elif section.kind in ("set", "list"):
        opening, closing = ("new Set([", "]);") if section.kind == "set" else ("Object.freeze([", "]);")
        line = f"export const {section.name} = {opening}{', '.join(literal)}{closing}"
        if len(line) <= LINE_CHARS:
            lines.append(line)
        else:  # one value a line
            lines.extend([f"export const {section.name} = {opening}", *(f"  {value}," for value in literal), closing])
    else:
        lines.append(f"export const {section.name} = {literal[0]};")
    return lines


def render() -> str:
    """The text of ``static/src/protocol.js``."""
    lines = [
        f"// GENERATED by `{COMMAND}` (make protocol): do not edit.",
        "// The session protocol's names as the server defines them, in",
        *(f"//   {source}" for source in SOURCES),
        "// Change them there and run the command again (docs/protocol.md, \"The browser's copy\").",
        "// The Sets are shared: read them, never add to them.",
    ]
    for section in sections():
        lines.append("")
        lines.extend(_render_section(section))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Write the browser's copy of the session protocol.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is stale")
    parser.add_argument("--output", type=Path, default=TARGET, help=f"default: {TARGET}")
    args = parser.parse_args(argv)
    text = render()
    current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
    if args.check:
        if current != text:
            print(f"{args.output} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
