from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.editing import TurnEditor

from .scenarios import Scenario, scenarios
from .support import chunk, make_doc, read_files

cuts = st.lists(st.integers(min_value=0, max_value=5000), max_size=30)


def run_chunks(
    scenario: Scenario, pieces: list[str]
) -> tuple[dict[str, str], list[dict[str, object]]]:
    doc = make_doc(scenario.files)
    editor = TurnEditor(doc, "t1")
    for piece in pieces:
        editor.feed(piece)
    editor.finish()
    return read_files(doc), editor.ledger.as_dicts()


@pytest.mark.timeout(300)
@settings(max_examples=150, deadline=None)
@given(scenario=scenarios(), cut_points=cuts)
def test_any_chunking_gives_the_same_document_and_ledger(
    scenario: Scenario, cut_points: list[int]
) -> None:
    whole_files, whole_ledger = run_chunks(scenario, [scenario.stream])
    files, ledger = run_chunks(scenario, chunk(scenario.stream, cut_points))
    assert files == whole_files
    assert ledger == whole_ledger


@pytest.mark.timeout(300)
@settings(max_examples=150, deadline=None)
@given(scenario=scenarios())
def test_streaming_one_character_at_a_time_gives_the_files_the_blocks_describe(
    scenario: Scenario,
) -> None:
    files, _ = run_chunks(scenario, list(scenario.stream))
    assert files == scenario.expected
