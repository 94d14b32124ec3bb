"""The page speaks the server's protocol from one generated module (static/src/protocol.js):
under Node it holds exactly the Python definitions, the page's labels cover every name in it,
and no other module of static/src types a protocol name again."""

from __future__ import annotations

import re
from typing import Any

from spark_ide.editing.parse_events import BlockKind
from spark_ide.editing.status import BlockOperation, EditState
from spark_ide.live.events import (
    DEFAULT_EFFORT,
    DRIVER_ROLES,
    EFFORTS,
    EVENTS,
    CloseCode,
    ErrorCode,
    FinishReason,
    Role,
    TurnStatus,
)
from spark_ide.live.messages import MESSAGES
from tests.browser.conftest import ROOT
from tests.support.node import run_node

SRC = ROOT / "static/src"
PROTOCOL = SRC / "protocol.js"

DUMP = """
const protocol = await import(PROTOCOL);
const { REASON_LABELS, STATE_LABELS } = await import(TRANSCRIPT);
const { OPERATION_LABELS } = await import(CHIPS);
const plain = (value) => (value instanceof Set ? [...value] : value);
const out = Object.fromEntries(Object.entries(protocol).map(([name, value]) => [name, plain(value)]));
out.frozen = Object.isFrozen(protocol.EVENT) && Object.isFrozen(protocol.FINISH_REASON);
out.labels = { reasons: REASON_LABELS, states: STATE_LABELS, operations: OPERATION_LABELS };
console.log(JSON.stringify(out));
"""


def _dump() -> dict[str, Any]:
    result: dict[str, Any] = run_node(
        DUMP, PROTOCOL=PROTOCOL.as_uri(), TRANSCRIPT=(SRC / "live/transcript.js").as_uri(),
        CHIPS=(SRC / "live/chips.js").as_uri(),
    )
    return result


def test_the_generated_module_holds_the_server_definitions_and_every_one_has_a_label() -> None:
    js = _dump()
    assert list(js["EVENT"].values()) == [cls.type for cls in EVENTS]
    assert js["EPHEMERAL_EVENTS"] == [cls.type for cls in EVENTS if cls.ephemeral]
    assert "hello" in js["EPHEMERAL_EVENTS"] and "turn.delta" not in js["EPHEMERAL_EVENTS"]
    assert list(js["MESSAGE"].values()) == list(MESSAGES)
    assert js["EDIT_STATE"] == {state.name: state.value for state in EditState}
    assert js["EDIT_STATES_IN_FLIGHT"] == ["locating", "streaming"]
    assert js["EDIT_STATES_FINAL"] == [state.value for state in EditState if state.is_final]
    assert js["BLOCK_KIND"] == {kind.name: kind.value for kind in BlockKind}
    assert js["BLOCK_OPERATION"] == {operation.name: operation.value for operation in BlockOperation}
    assert js["TURN_STATUS"] == {status.name: status.value for status in TurnStatus}
    assert js["FINISH_REASON"] == {reason.name: reason.value for reason in FinishReason}
    assert js["ERROR_CODE"] == {code.name: code.value for code in ErrorCode}
    assert js["ROLE"] == {role.name: role.value for role in Role}
    assert set(js["DRIVER_ROLES"]) == {role.value for role in DRIVER_ROLES}
    assert js["CLOSE_CODE"] == {code.name: code.value for code in CloseCode}
    assert js["CLOSE_CODE"]["REFUSED"] == 4403
    assert js["EFFORTS"] == list(EFFORTS)
    assert js["DEFAULT_EFFORT"] == DEFAULT_EFFORT
    assert js["frozen"] is True
    # The page's words stay in JS, keyed by the generated names: one for each, none for a name
    # the server no longer has.
    assert set(js["labels"]["reasons"]) == {reason.value for reason in FinishReason}, (
        "every finish reason needs its words in REASON_LABELS (static/src/live/transcript_labels.js)"
    )
    assert set(js["labels"]["states"]) == {state.value for state in EditState}, (
        "every edit state needs its words in STATE_LABELS (static/src/live/transcript_labels.js)"
    )
    assert all(js["labels"]["states"].values())
    assert set(js["labels"]["operations"]) == {operation.value for operation in BlockOperation}, (
        "every patch operation needs its word in OPERATION_LABELS (static/src/live/chips.js)"
    )


# Comments, string literals (quotes, template literals) and numbers, in source order: a comment
# is consumed whole, so a quote inside one does not start a string.
TOKENS = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|\b\d+\b", re.DOTALL,
)


def _protocol_names() -> tuple[set[str], set[str]]:
    """(names no page module may write as a string, names it may write only as a word): a name
    with a dot or an underscore, a role or an edit state's is the protocol's wherever it is;
    a plain word (error, stop, failed, ...) is also a CSS class, a toast's kind or a label."""
    names = {cls.type for cls in EVENTS} | set(MESSAGES) | set(EFFORTS)
    for enum in (EditState, BlockKind, BlockOperation, TurnStatus, FinishReason, ErrorCode, Role):
        names |= {member.value for member in enum}
    distinctive = {name for name in names if re.search(r"[._]", name)}
    distinctive |= {role.value for role in Role} | {state.value for state in EditState if not state.is_final}
    distinctive.add(EditState.APPLIED.value)
    return distinctive, names - distinctive


# Where a plain word is the protocol's: a case label, a message's type, a comparison of a field.
PROTOCOL_USE = re.compile(r"(?:case\s+|type:\s*|(?:type|state|code|role|reason|status|ref|operation)\s*[!=]==?\s*)$")
# A label keyed by a generated name (`[EDIT_STATE.APPLIED]: "applied"`) is the page's word for
# it, whatever it says.
LABEL = re.compile(r"\]:\s*$")


def _retyped(text: str) -> list[tuple[int, str]]:
    """The protocol names ``text`` (a module's source) types again: (line, literal)."""
    distinctive, words = _protocol_names()
    codes = {str(code.value) for code in CloseCode}
    found = []
    for token in TOKENS.finditer(text):
        literal = token.group()
        if literal.startswith("/"):
            continue  # a comment
        before = text[max(0, token.start() - 40):token.start()]
        if literal in codes:
            retyped = True
        elif literal[0] not in "\"'`" or LABEL.search(before):
            retyped = False
        else:
            value = literal[1:-1]
            retyped = value in distinctive or (value in words and PROTOCOL_USE.search(before) is not None)
        if retyped:
            found.append((text.count("\n", 0, token.start()) + 1, literal))
    return found


def test_no_page_module_types_a_protocol_name_again() -> None:
    sources = sorted(path for path in SRC.rglob("*.js") if path != PROTOCOL)
    assert len(sources) > 20
    found = [
        f"{path.relative_to(ROOT)}:{line}: {literal}"
        for path in sources for line, literal in _retyped(path.read_text(encoding="utf-8"))
    ]
    assert not found, (
        "protocol names typed outside static/src/protocol.js (import them from it):\n" + "\n".join(found)
    )


def test_the_scan_sees_each_kind_of_retyped_name() -> None:
    sample = """
// case "hello": a comment is not code
const refused = 4403;
if (event.type === "turn.started") start();
switch (event.type) { case "hello": break; }
send({ type: "stop" });
const named = ["rolled_back", "owner"];
toast("failed to copy", "error");
const LABELS = { [EDIT_STATE.APPLIED]: "applied", applied: "applied" };
"""
    assert [literal for _, literal in _retyped(sample)] == [
        "4403", '"turn.started"', '"hello"', '"stop"', '"rolled_back"', '"owner"', '"applied"',
    ]
