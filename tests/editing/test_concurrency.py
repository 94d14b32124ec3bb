from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc

from spark_ide.editing import BlockStatus, EditState, Outcome, TurnEditor, workspace_files

from .scenarios import Scenario, scenarios
from .support import Block, build_stream, chunk, make_doc, read, read_files, sync

APP = "def a():\n    return 1\n\ndef b():\n    return 2\n"
REWRITE_B = build_stream(
    [Block("edit", "app.py", "def b():\n    return 2\n", "def b(x):\n    return x\n")]
)[0]


def peers(files: dict[str, str]) -> tuple[Doc[Any], Doc[Any]]:
    server = make_doc(files, client_id=1)
    person: Doc[Any] = Doc(client_id=2)
    person.apply_update(server.get_update())
    return server, person


def person_types(person: Doc[Any], path: str, after: str, text: str) -> None:
    ytext = workspace_files(person)[path]
    current = str(ytext)
    at = current.index(after) + len(after)
    with person.transaction(origin="human"):
        ytext.insert(len(current[:at].encode()), text)


def test_a_line_a_person_changed_is_kept_and_reported_as_a_conflict() -> None:
    server, person = peers({"app.py": APP})
    editor = TurnEditor(server, "t1")
    editor.feed(REWRITE_B[: REWRITE_B.index("def b(x):\n") + len("def b(x):\n")])
    person_types(person, "app.py", "return 2", "  # keep me")
    sync(server, person)
    events = editor.feed(REWRITE_B[REWRITE_B.index("def b(x):\n") + len("def b(x):\n") :])
    events += editor.finish()
    applied = [e for e in events if isinstance(e, BlockStatus) and e.state is EditState.APPLIED]
    assert applied[0].conflicts == (5,)
    assert applied[0].detail()["conflict"] == {"lines": [5]}
    sync(server, person)
    expected = "def a():\n    return 1\n\ndef b(x):\n    return x\n    return 2  # keep me\n"
    assert read(server, "app.py") == read(person, "app.py") == expected
    assert editor.ledger.entry(0).outcome is Outcome.CONFLICTED
    assert "changed by a person" in editor.ledger.as_prompt()


def test_a_line_a_person_deleted_is_not_deleted_twice() -> None:
    server, person = peers({"app.py": APP})
    editor = TurnEditor(server, "t1")
    editor.feed(REWRITE_B[: REWRITE_B.index("<new_text>")])
    ytext = workspace_files(person)["app.py"]
    start = str(ytext).index("    return 2\n")
    with person.transaction(origin="human"):
        del ytext[start : start + len("    return 2\n")]
    sync(server, person)
    editor.feed(REWRITE_B[REWRITE_B.index("<new_text>") :])
    editor.finish()
    sync(server, person)
    assert read(server, "app.py") == "def a():\n    return 1\n\ndef b(x):\n    return x\n"
    assert read(person, "app.py") == read(server, "app.py")


def test_typing_inside_a_line_the_model_wrote_survives_a_cancel() -> None:
    server, person = peers({"app.py": APP})
    editor = TurnEditor(server, "t1")
    editor.feed(REWRITE_B[: REWRITE_B.index("    return x")])
    sync(server, person)
    person_types(person, "app.py", "def b(", "ü")
    sync(server, person)
    editor.cancel()
    sync(server, person)
    # The model's characters are gone, the person's one stays where it was typed.
    expected = APP.replace("def b():", "üdef b():")
    assert read(server, "app.py") == read(person, "app.py") == expected


@pytest.mark.timeout(300)
@settings(max_examples=120, deadline=None)
@given(
    scenario=scenarios(),
    cut_points=st.lists(st.integers(min_value=0, max_value=5000), max_size=20),
    typing=st.lists(
        st.tuples(st.integers(min_value=0, max_value=50), st.integers(0, 10_000)), max_size=8
    ),
)
def test_two_peers_converge_while_a_person_types_anywhere(
    scenario: Scenario, cut_points: list[int], typing: list[tuple[int, int]]
) -> None:
    server, person = peers(scenario.files)
    editor = TurnEditor(server, "t1")
    pieces = chunk(scenario.stream, cut_points)
    for number, piece in enumerate(pieces):
        for when, where in typing:
            if when % (len(pieces) + 1) != number:
                continue
            ytext = workspace_files(person)["a.py"]
            current = str(ytext)
            at = where % (len(current) + 1)
            with person.transaction(origin="human"):
                ytext.insert(len(current[:at].encode()), "«é»")
            sync(server, person)
        editor.feed(piece)
        if number % 3 == 0:
            sync(server, person)
    editor.finish()
    sync(server, person)
    assert read_files(server) == read_files(person)
    assert not editor.ledger.with_outcome(Outcome.IN_FLIGHT)


def test_a_new_file_a_person_typed_into_survives_a_cancel() -> None:
    server, person = peers({"app.py": APP})
    editor = TurnEditor(server, "t1")
    editor.feed('<write path="new.py">\nfirst = 1\nsec')
    sync(server, person)
    ytext = workspace_files(person)["new.py"]
    with person.transaction(origin="human"):
        ytext.insert(0, "# mine\n")
    sync(server, person)
    editor.cancel()
    sync(server, person)
    assert read_files(server) == read_files(person) == {"app.py": APP, "new.py": "# mine\n"}


def test_a_new_file_a_person_typed_into_survives_a_revert() -> None:
    server, person = peers({"app.py": APP})
    editor = TurnEditor(server, "t1")
    editor.feed(build_stream([Block("write", "new.py", "", "first = 1\n")])[0])
    editor.finish()
    sync(server, person)
    ytext = workspace_files(person)["new.py"]
    with person.transaction(origin="human"):
        ytext.insert(len(ytext), "# mine\n")
    sync(server, person)
    editor.revert()
    sync(server, person)
    assert read_files(server) == read_files(person) == {"app.py": APP, "new.py": "# mine\n"}
