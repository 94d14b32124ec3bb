"""The run tool in the requests: its Lark grammar against commands (the same ones the parser
takes and refuses, live.run_command), offered only when asked, in each wire shape, and a run
function call's ``command`` decoded as it streams over a real socket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark, LarkError

from spark_ide.live.run_command import CommandRefused, parse_run_command
from spark_ide.upstream import (
    Message,
    ProviderConfig,
    ToolCallDone,
    ToolInputDelta,
    TurnRequest,
    open_client,
    profile_for,
)
from spark_ide.upstream.dialects import (
    RUN_GRAMMAR,
    RUN_INSTRUCTIONS,
    RUN_RULES,
    EditStyle,
    chat_tools,
    function_argument,
    responses_tools,
    run_instructions,
)
from spark_ide.upstream.request import chat_completion, responses_create, responses_warmup
from tests.support.responses_socket import ResponsesSocket, function_call
from tests.upstream.helpers import API_KEY, FAST_RETRY, collect

OPENAI = profile_for("openai", "gpt-5.1-codex")
PARSER = Lark(RUN_GRAMMAR, start="start", parser="earley")
# LALR with a contextual lexer reads it too: no token needs looking ahead to be told apart
# (what a constrained decoder's lexer needs).
LALR = Lark(RUN_GRAMMAR, start="start", parser="lalr")
FILES = {"main.py", "data files/in.txt", "tests/test_app.py", "tests/unit/test_x.py"}

ACCEPTED = [
    "python main.py",
    "python3 main.py",
    "python main.py 3 -n --verbose x=1",
    "python main.py 'two words' \"and more\" '$HOME'",
    "python 'data files/in.txt'",
    "pytest",
    "pytest -x -q",
    "pytest tests",
    "pytest tests/test_app.py::test_add",
    "pytest tests/test_app.py::TestApp::test_add[1-2]",
    "pytest -k test_add tests/unit",
    "pytest -q -k 'add and not (slow or big)'",
    "python -m pytest -x",
    "python3 -m pytest tests/test_app.py",
]

REFUSED_BY_BOTH = [
    "",
    "ls -la",
    "bash -c 'pytest'",
    "python -c 'print(1)'",
    "python",
    "pytest -v",
    "pytest --maxfail=1",
    "pytest -k",
    "pytest -k -x",
    "pytest; rm -rf /",
    "pytest && python main.py",
    "python main.py | head",
    "python main.py > out.txt",
    "python main.py $HOME",
    'python main.py "$HOME"',
    "python main.py `id`",
    "python main.py \\;",
    "python /etc/passwd",
    "pytest\npython main.py",
    "python main.py 'unclosed",
]


@pytest.mark.parametrize("command", ACCEPTED)
def test_the_grammar_and_the_parser_take_the_same_commands(command: str) -> None:
    PARSER.parse(command)
    LALR.parse(command)
    parse_run_command(command, files=FILES)


@pytest.mark.parametrize("command", REFUSED_BY_BOTH)
def test_the_grammar_and_the_parser_refuse_what_is_not_a_run(command: str) -> None:
    for grammar in (PARSER, LALR):
        with pytest.raises(LarkError):
            grammar.parse(command)
    with pytest.raises(CommandRefused):
        parse_run_command(command, files=FILES)


@pytest.mark.parametrize("command", ["pytest  -x", "python main.py ", " pytest", "pytest\t-x"])
def test_the_grammar_wants_one_space_between_words_where_the_parser_is_lenient(command: str) -> None:
    """A custom tool's input is generated to the grammar, so it is held to the plain form; a
    function's argument is not, and the parser reads it as a shell would split it."""
    with pytest.raises(LarkError):
        PARSER.parse(command)
    parse_run_command(command, files=FILES)


def test_nothing_changes_unless_runs_are_asked_for() -> None:
    for style in [*EditStyle, None]:
        assert responses_tools(style) == responses_tools(style, runs=False)
        assert all(tool.get("name") != "run" for tool in responses_tools(style))
        chat: list[Any] = chat_tools(style)
        assert all(tool["function"]["name"] != "run" for tool in chat)
    request = TurnRequest(instructions="i", input=(Message("user", "go"),), edit_style=EditStyle.APPLY_PATCH)
    body: Any = responses_create(request, model="m", profile=OPENAI, store=True, chain=False)
    assert [tool["name"] for tool in body["tools"]] == ["apply_patch"]


def test_the_run_tool_sits_beside_the_editing_tool_in_each_shape() -> None:
    custom: Any = responses_tools(EditStyle.APPLY_PATCH, runs=True)[1]
    assert custom["type"] == "custom" and custom["name"] == "run"
    assert custom["format"] == {"type": "grammar", "syntax": "lark", "definition": RUN_GRAMMAR}
    builtin = responses_tools(EditStyle.APPLY_PATCH_BUILTIN, runs=True)
    assert builtin[0] == {"type": "apply_patch"} and builtin[1] == custom
    function: Any = responses_tools(EditStyle.FUNCTION, runs=True)[1]
    assert function["type"] == "function" and function["name"] == "run"
    assert function["parameters"]["required"] == ["command"] and RUN_RULES in function["description"]
    for style in (EditStyle.APPLY_PATCH, EditStyle.APPLY_PATCH_BUILTIN, EditStyle.FUNCTION):
        pair: list[Any] = chat_tools(style, runs=True)
        (patch, run) = pair
        assert patch["function"]["name"] == "apply_patch"
        assert run == {"type": "function", "function": {
            "name": "run", "description": function["description"], "parameters": function["parameters"]}}
    # text dialects and explain-only turns have no tools at all, runs or not
    for text_style in (EditStyle.EDITS, EditStyle.WHOLE_FILE, None):
        assert responses_tools(text_style, runs=True) == chat_tools(text_style, runs=True) == []
        assert run_instructions(text_style) == ""
    request = TurnRequest(instructions="i", input=(Message("user", "go"),), edit_style=EditStyle.FUNCTION, runs=True)
    completion: Any = chat_completion(request, model="m", profile=OPENAI)
    assert [tool["function"]["name"] for tool in completion["tools"]] == ["apply_patch", "run"]
    warmup: Any = responses_warmup(model="m", instructions="i", store=True, edit_style=EditStyle.APPLY_PATCH, runs=True)
    assert [tool["name"] for tool in warmup["tools"]] == ["apply_patch", "run"]  # the prefix turns will have
    assert request.next_round(response_id=None, answer="", calls=(), outputs=(), then=(Message("user", "more"),)).runs


def test_the_instructions_name_the_tool_as_each_dialect_calls_it() -> None:
    assert run_instructions(EditStyle.APPLY_PATCH) == RUN_INSTRUCTIONS
    assert "the run tool" in RUN_INSTRUCTIONS and RUN_RULES in RUN_INSTRUCTIONS
    function = run_instructions(EditStyle.FUNCTION)
    assert 'calling the run function with one argument, "command"' in function and RUN_RULES in function
    assert function_argument("run") == "command" and function_argument("apply_patch") == "input"
    assert function_argument("made_up") == "input"


@pytest.fixture
async def fake() -> AsyncIterator[ResponsesSocket]:
    async with ResponsesSocket() as socket:
        yield socket


async def test_a_run_function_call_streams_its_command(fake: ResponsesSocket) -> None:
    command = "pytest -k \"héllo or 'x'\" tests"
    arguments = json.dumps({"command": command})
    pieces = [arguments[i : i + 4] for i in range(0, len(arguments), 4)]
    config = ProviderConfig(provider="openai", base_url=fake.base_url, model="gpt-5.1-codex", api_key=API_KEY,
                            retry=FAST_RETRY, first_byte_timeout_s=10, idle_timeout_s=10)
    client = await open_client(config, warmup_instructions="test")
    try:
        fake.answer(function_call("call_r", arguments, pieces, name="run"))
        request = TurnRequest(instructions="t", input=(Message("user", "test it"),), edit_style=EditStyle.FUNCTION,
                              runs=True)
        events = await collect(await client.start(request))
    finally:
        await client.close()
    assert "".join(e.text for e in events if isinstance(e, ToolInputDelta) and e.call_id == "call_r") == command
    (done,) = [e for e in events if isinstance(e, ToolCallDone)]
    assert done.call.name == "run" and done.input == command and done.call.arguments == arguments
    sent: Any = fake.requests[0]["tools"]
    assert [tool["name"] for tool in sent] == ["apply_patch", "run"]


_word = st.one_of(
    st.text(st.sampled_from("ab-_./:=[]*#é;&|<>()$`\\"), min_size=1, max_size=8),
    st.text(st.sampled_from("ab -$\"`\\;"), max_size=6).map(lambda text: f"'{text}'"),
    st.text(st.sampled_from("ab '-$`\\;"), max_size=6).map(lambda text: f'"{text}"'),
    st.sampled_from(["-x", "-q", "-k", "-v", "main.py", "tests", "t.py::test_a"]),
)


@settings(max_examples=300, deadline=None)
@given(head=st.sampled_from(["python", "python3", "pytest", "python -m pytest", "ls"]),
       words=st.lists(_word, max_size=5))
def test_what_the_grammar_lets_a_model_write_the_parser_reads(head: str, words: list[str]) -> None:
    """A custom tool's input is generated to the grammar: the parser takes all of it, but for
    what only the workspace's path rules can tell (``..``, ``//``) and pytest test names."""
    command = " ".join([head, *words])
    try:
        PARSER.parse(command)
    except LarkError:
        return
    try:
        parse_run_command(command)
    except CommandRefused as refused:
        assert refused.reason.startswith("bad path") or "does not name a test" in refused.reason, command
