"""The streaming decoder of a function call's ``input`` argument: split anywhere, it gives
the text json.loads gives, as soon as each character is known."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_ide.upstream.partial_json import StringMemberDecoder


def feed_in_pieces(text: str, cuts: list[int]) -> list[str]:
    decoder = StringMemberDecoder("input")
    bounds = [0, *sorted(set(c % (len(text) + 1) for c in cuts)), len(text)]
    return [decoder.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]


# Other members around the one wanted: any JSON values, strings with quotes and braces included.
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    value=st.text(),
    before=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "input"), _values, max_size=3),
    after=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "input"), _values, max_size=3),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 1]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_any_split_decodes_to_what_json_loads_gives(
    value: str, before: dict[str, object], after: dict[str, object], ascii_only: bool, indent: int | None,
    cuts: list[int],
) -> None:
    document = {**before, "input": value, **after}
    text = json.dumps(document, ensure_ascii=ascii_only, indent=indent)
    assert "".join(feed_in_pieces(text, cuts)) == json.loads(text)["input"]


@settings(max_examples=200, deadline=None)
@given(value=st.text(min_size=1), ascii_only=st.booleans())
def test_one_character_at_a_time_nothing_is_held_back_longer_than_a_character(value: str, ascii_only: bool) -> None:
    """Each piece of the value is out as soon as its last byte is in (a high surrogate waits
    for its low half; nothing else waits)."""
    text = json.dumps({"input": value}, ensure_ascii=ascii_only)
    decoder = StringMemberDecoder("input")
    out = ""
    for position in range(len(text)):
        out += decoder.feed(text[position])
        try:  # what the text so far says, if it ended here
            known = json.loads(text[: position + 1] + '"}')["input"]
        except (ValueError, KeyError, TypeError):
            continue
        if known and "\ud800" <= known[-1] <= "\udbff":
            known = known[:-1]  # a high surrogate waits for its low half
        assert out == known
    assert out == value and decoder.complete


def test_escapes_split_inside_themselves() -> None:
    text = '{"input": "a\\u00e9\\n\\ud83d\\ude00\\"b"}'
    for cut in range(len(text) + 1):
        decoder = StringMemberDecoder()
        assert decoder.feed(text[:cut]) + decoder.feed(text[cut:]) == 'aé\n😀"b'


def test_a_lone_surrogate_stays_as_json_loads_leaves_it() -> None:
    text = '{"input": "x\\ud800y"}'
    assert StringMemberDecoder().feed(text) == json.loads(text)["input"] == "x\ud800y"


def test_only_the_first_top_level_member_of_that_name_counts() -> None:
    text = '{"meta": {"input": "nested"}, "list": ["input", 1], "input": "top", "input": "again"}'
    assert StringMemberDecoder().feed(text) == "top"


def test_a_raw_newline_inside_the_string_passes_through() -> None:
    assert StringMemberDecoder().feed('{"input": "a\nb"}') == "a\nb"  # models do write these


def test_text_that_is_not_an_object_gives_nothing() -> None:
    for text in ('["input", "x"]', '"input"', 'input: x', '{"input": 3}'):
        decoder = StringMemberDecoder()
        assert decoder.feed(text) == "" and not decoder.found
