"""A course's AI policy as pure checks (live.policy), the explain-only edit engine and prompt."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Doc

from spark_ide.editing import ProseEvent, TurnEditor
from spark_ide.editing.document import document_texts, set_file_text
from spark_ide.live.policy import AiMode, AiPolicy, BadPolicy, Refusal
from spark_ide.live.prompting import EXPLAIN_ONLY, PromptStyle, TurnInput, build_request

EDIT = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n</new_text>\n</edit>\n'


def test_outside_a_course_everything_is_allowed() -> None:
    policy = AiPolicy.from_mapping(None)
    assert policy is AiPolicy.OPEN
    assert policy.refusal() is None
    assert policy.edits_apply
    assert policy.effort("xhigh") == "xhigh"
    assert policy.tokens_left() is None
    assert not policy.over_quota(10**9)
    assert policy.label() == "AI: on"


def test_off_refuses_with_a_clear_message() -> None:
    policy = AiPolicy.from_mapping({"mode": "off", "max_effort": None, "token_quota": None, "tokens_used": 0})
    assert policy.refusal() == (Refusal.DISABLED, "the AI is turned off for this course")
    assert not policy.edits_apply


def test_quota_exhausted_refuses_and_counts_tokens_not_yet_stored() -> None:
    policy = AiPolicy(mode=AiMode.ON, token_quota=20_000, tokens_used=19_000)
    assert policy.refusal() is None
    assert policy.tokens_left() == 1_000
    assert policy.tokens_left(spent=400) == 600
    assert policy.refusal(spent=1_000) == (Refusal.QUOTA, "you have used your 20,000 AI tokens for this course")
    assert policy.tokens_left(spent=5_000) == 0  # never negative
    assert AiPolicy(token_quota=100, tokens_used=100).over_quota()
    assert AiPolicy(token_quota=0).refusal() is not None  # a quota of nothing: no turns


def test_off_is_told_before_the_quota() -> None:
    policy = AiPolicy(mode=AiMode.OFF, token_quota=10, tokens_used=10)
    refusal = policy.refusal()
    assert refusal is not None and refusal[0] is Refusal.DISABLED


def test_the_label_and_the_rules_say_the_mode_in_the_same_words() -> None:
    """One wording for a mode: the live label beside the prompt box, the course's notice and
    the teacher's form choices all read ``AiMode.word``."""
    explain = AiPolicy(mode=AiMode.EXPLAIN, max_effort="low", token_quota=20_000, tokens_used=7_600)
    assert explain.label() == "AI: explain-only · effort up to low · 12,400 tokens left"
    assert explain.rules() == (
        "AI: explain-only (it answers but does not edit files), effort up to low, 20,000 tokens for the course."
    )
    off = AiPolicy(mode=AiMode.OFF, max_effort="low", token_quota=5)
    assert (off.label(), off.rules()) == ("AI: off", "AI: off.")
    assert AiPolicy().rules() == "AI: on."
    assert [mode.word for mode in AiMode] == ["off", "explain-only", "on"]
    assert AiMode.known("explain") and not AiMode.known("EXPLAIN") and not AiMode.known(None)


@pytest.mark.parametrize(
    ("cap", "requested", "effective"),
    [("medium", "xhigh", "medium"), ("medium", "high", "medium"), ("medium", "medium", "medium"),
     ("medium", "low", "low"), ("low", "medium", "low"), (None, "xhigh", "xhigh")],
)
def test_the_effort_is_capped(cap: Any, requested: Any, effective: str) -> None:
    assert AiPolicy(max_effort=cap).effort(requested) == effective


def test_explain_only_runs_but_does_not_apply() -> None:
    data: dict[str, object] = {"mode": "explain", "max_effort": "high", "token_quota": 20_000, "tokens_used": 7_600}
    policy = AiPolicy.from_mapping(data)
    assert policy.refusal() is None
    assert not policy.edits_apply
    assert policy.label() == "AI: explain-only · effort up to high · 12,400 tokens left"
    assert policy.label(spent=400) == "AI: explain-only · effort up to high · 12,000 tokens left"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"mode": "sometimes"}, "unknown AI mode 'sometimes'"),
        ({"mode": "on", "max_effort": "maximal"}, "unknown effort 'maximal'"),
        ({"mode": "on", "token_quota": "lots"}, "the token quota must be a whole number"),
        ({"mode": "on", "token_quota": True}, "the token quota must be a whole number"),
        ({"mode": "on", "token_quota": -5}, "a token quota cannot be negative"),
        ({"mode": "on", "tokens_used": None}, "tokens used must be a whole number"),
        ({"mode": "on", "tokens_used": -1}, "tokens used cannot be negative"),
    ],
)
def test_a_stored_policy_that_makes_no_sense_is_refused(data: dict[str, object], message: str) -> None:
    with pytest.raises(BadPolicy, match=message):
        AiPolicy.from_mapping(data)


def test_an_explain_only_editor_shows_blocks_as_prose_and_applies_nothing() -> None:
    doc: Doc[Any] = Doc()
    set_file_text(doc, "util.py", "X = 1\n", "setup")
    editor = TurnEditor(doc, "t1", explain_only=True)
    text = "Change X like this:\n" + EDIT + "That is all.\n"
    events = []
    for i in range(0, len(text), 7):  # streamed in small pieces, tags split across them
        events += editor.feed(text[i : i + 7])
    events += editor.finish()
    assert all(isinstance(event, ProseEvent) for event in events)
    assert "".join(event.text for event in events if isinstance(event, ProseEvent)) == text
    assert editor.withheld == 1
    assert document_texts(doc) == {"util.py": "X = 1\n"}
    assert not editor.ledger.entries
    assert editor.revert() == []  # nothing to take back


def test_an_explain_only_editor_holds_a_small_models_fence_too() -> None:
    doc: Doc[Any] = Doc()
    editor = TurnEditor(doc, "t2", fence_path="main.py", explain_only=True)
    events = editor.feed("Here:\n```python\nprint('hi')\n```\n") + editor.finish()
    assert editor.withheld == 1
    assert "".join(e.text for e in events if isinstance(e, ProseEvent)).count("print('hi')") == 1
    assert document_texts(doc) == {}


def test_an_explain_only_request_tells_the_model_not_to_edit() -> None:
    style = PromptStyle()
    plain = build_request(TurnInput(text="why?", files={"a.py": "x\n"}), style)
    explain = build_request(TurnInput(text="why?", files={"a.py": "x\n"}, explain_only=True), style)
    assert EXPLAIN_ONLY not in plain.instructions
    assert explain.instructions.endswith(EXPLAIN_ONLY)
    assert "must not edit files" in explain.instructions
