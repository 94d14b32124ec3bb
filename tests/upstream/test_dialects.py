"""Edit dialects: the setting and its defaults, the V4A grammar against real patches, and the
tools each dialect puts in a request."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark, LarkError

from spark_ide.upstream import ConfigError, EditStyle, ProviderConfig
from spark_ide.upstream.dialects import (
    INSTRUCTIONS,
    V4A_GRAMMAR,
    chat_tools,
    default_edit_style,
    edit_style_from,
    responses_tools,
)

PARSER = Lark(V4A_GRAMMAR, start="start", parser="earley")


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [("openai", "gpt-5.1-codex", EditStyle.APPLY_PATCH), ("openai-compatible", "llama", EditStyle.FUNCTION),
     ("local", "smollm2", EditStyle.WHOLE_FILE), ("local", "qwen", EditStyle.EDITS)],
)
def test_the_default_follows_the_provider_and_model(provider: str, model: str, expected: EditStyle) -> None:
    assert default_edit_style(provider, model) is expected
    assert edit_style_from({}, provider=provider, model=model) is expected
    assert edit_style_from({"SPARK_EDIT_STYLE": " "}, provider=provider, model=model) is expected


def test_the_setting_overrides_the_default_everywhere_it_is_read() -> None:
    env = {"SPARK_PROVIDER": "openai", "OPENAI_API_KEY": "sk-x", "SPARK_MODEL": "gpt-5.1",
           "SPARK_EDIT_STYLE": "apply-patch-builtin"}
    assert ProviderConfig.from_env(env).dialect is EditStyle.APPLY_PATCH_BUILTIN
    assert ProviderConfig.from_env({**env, "SPARK_EDIT_STYLE": ""}).dialect is EditStyle.APPLY_PATCH


@pytest.mark.parametrize("value", ["apply_patch", "patch", "EDITS", "whole file"])
def test_a_bad_value_is_refused_naming_the_setting_and_the_choices(value: str) -> None:
    with pytest.raises(ConfigError, match="SPARK_EDIT_STYLE must be one of apply-patch, apply-patch-builtin, "
                                          "function, edits, whole-file"):
        ProviderConfig.from_env({"SPARK_EDIT_STYLE": value})


@pytest.mark.parametrize("value", ["apply-patch", "apply-patch-builtin"])
def test_a_chat_completions_provider_refuses_the_responses_only_tools(value: str) -> None:
    env = {"SPARK_PROVIDER": "openai-compatible", "OPENAI_BASE_URL": "http://h/v1", "SPARK_MODEL": "m",
           "SPARK_EDIT_STYLE": value}
    with pytest.raises(ConfigError, match="take only function, edits, whole-file"):
        ProviderConfig.from_env(env)


def test_each_dialect_has_its_instructions_and_only_tool_dialects_a_tool() -> None:
    assert set(INSTRUCTIONS) == set(EditStyle)
    for style in EditStyle:
        assert bool(responses_tools(style)) is style.uses_tool is bool(chat_tools(style))
        assert ("apply_patch" in INSTRUCTIONS[style]) is style.uses_tool
    assert responses_tools(None) == chat_tools(None) == []  # explain-only: no tool at all
    assert responses_tools(EditStyle.APPLY_PATCH_BUILTIN) == [{"type": "apply_patch"}]
    (custom,) = responses_tools(EditStyle.APPLY_PATCH)
    assert custom["type"] == "custom" and custom["name"] == "apply_patch"
    assert custom["format"] == {"type": "grammar", "syntax": "lark", "definition": V4A_GRAMMAR}
    (function,) = responses_tools(EditStyle.FUNCTION)
    (chat,) = chat_tools(EditStyle.FUNCTION)
    assert chat == {"type": "function", "function": {
        "name": function["name"], "description": function["description"], "parameters": function["parameters"]}}


EXAMPLE = """\
*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+text
*** Delete File: old.py
*** Update File: src/app.py
*** Move to: src/main.py
@@ class App:
@@     def run(self):
         setup()
-        go()
+        go(fast=True)
     done()
*** End of File
*** End Patch
"""


def test_the_grammar_takes_every_part_of_the_format() -> None:
    PARSER.parse(EXAMPLE)
    PARSER.parse(EXAMPLE.replace("\n", "\r\n"))
    PARSER.parse("*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End Patch")  # a first hunk without @@
    PARSER.parse("*** Begin Patch\n*** Update File: a\n@@ \n \n-\n+\n*** End Patch\n")  # empty lines with their role


@pytest.mark.parametrize(
    "broken",
    ["*** Update File: a\n@@\n-x\n*** End Patch\n",  # no envelope
     "*** Begin Patch\n*** End Patch\n",  # no operation
     "*** Begin Patch\n*** Update File: a\n@@\nx\n*** End Patch\n",  # a line without its role
     "*** Begin Patch\n*** Remove File: a\n*** End Patch\n",  # no such operation
     "*** Begin Patch\n*** Add File: a\n-x\n*** End Patch\n"],  # an added file removes nothing
)
def test_the_grammar_refuses_what_is_not_a_patch(broken: str) -> None:
    with pytest.raises(LarkError):
        PARSER.parse(broken)


_lines = st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12), max_size=12)


@settings(max_examples=60, deadline=None)
@given(old=_lines, new=_lines)
def test_the_grammar_takes_patches_made_from_real_diffs(old: list[str], new: list[str]) -> None:
    hunks = []
    for group in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_grouped_opcodes(3):
        lines = ["@@"]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [f" {line}" for line in old[i1:i2]]
            else:
                lines += [f"-{line}" for line in old[i1:i2]] + [f"+{line}" for line in new[j1:j2]]
        hunks.append("\n".join(lines))
    body = "\n".join(hunks) or "@@\n+appended"
    added = "".join(f"+{line}\n" for line in new)
    PARSER.parse(f"*** Begin Patch\n*** Update File: f.py\n{body}\n*** Add File: g.py\n{added}*** End Patch\n")
