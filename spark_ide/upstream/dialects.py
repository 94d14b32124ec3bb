"""Edit dialects: how the model is asked to change files (``SPARK_EDIT_STYLE``).

One module holds, for each dialect, everything the model is told: the instructions added to
the system prompt, and the editing tool offered in the request (in the wire shape of each
transport). The dialects:

* ``apply-patch``: a custom (freeform) tool ``apply_patch`` whose input is constrained by a
  Lark grammar of the V4A patch format, as Codex-family models are trained on. Default for
  the ``openai`` provider.
* ``apply-patch-builtin``: the Responses API's built-in ``{"type": "apply_patch"}`` tool: one
  ``apply_patch_call`` per file operation, the diff without the patch envelope.
* ``function``: a JSON function tool ``apply_patch`` taking ``{"input": "<V4A patch>"}``, what
  Chat Completions hosts stream. Default for ``openai-compatible``.
* ``edits``: no tool; ``<edit>``/``<write>`` blocks in the answer's text (PROTOCOL.md §4).
* ``whole-file``: no tool; whole files in ``<write>`` blocks (small models such as the bundled
  SmolLM2; the default for the ``local`` provider with it).

With ``runs``, the tool dialects also offer a ``run`` tool: one command of a small grammar
(``RUN_GRAMMAR``, stated for people and models in ``RUN_RULES``; parsed by
``live.run_command``), as a custom tool with that grammar or as a function taking
``{"command": ...}``.

Written here from the published descriptions of the format; pure data, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from spark_ide.upstream.errors import ConfigError

_JSON = dict[str, object]

APPLY_PATCH = "apply_patch"  # the tool's name in every tool dialect
RUN = "run"  # the tool that runs a file or the tests in the room's sandbox (offered on request)


class EditStyle(StrEnum):
    APPLY_PATCH = "apply-patch"
    APPLY_PATCH_BUILTIN = "apply-patch-builtin"
    FUNCTION = "function"
    EDITS = "edits"
    WHOLE_FILE = "whole-file"

    @property
    def uses_tool(self) -> bool:
        """Whether the model edits through a tool call (else through blocks in its text)."""
        return self in _TOOL_STYLES


_TOOL_STYLES = frozenset({EditStyle.APPLY_PATCH, EditStyle.APPLY_PATCH_BUILTIN, EditStyle.FUNCTION})
# Chat Completions knows function tools only.
_CHAT_STYLES = frozenset({EditStyle.FUNCTION, EditStyle.EDITS, EditStyle.WHOLE_FILE})
SMALL_LOCAL_MODEL = "smollm2"  # the bundled model: it manages whole files only


def default_edit_style(provider: str, model: str) -> EditStyle:
    """The dialect a provider's models are best at when ``SPARK_EDIT_STYLE`` is not set."""
    if provider == "openai":
        return EditStyle.APPLY_PATCH
    if provider == "openai-compatible":
        return EditStyle.FUNCTION
    return EditStyle.WHOLE_FILE if model == SMALL_LOCAL_MODEL else EditStyle.EDITS


def parse_edit_style(raw: str, *, provider: str, setting: str = "SPARK_EDIT_STYLE") -> EditStyle:
    """``raw`` as a dialect the provider can carry; :class:`ConfigError` saying why not."""
    try:
        style = EditStyle(raw.strip())
    except ValueError:
        known = ", ".join(style.value for style in EditStyle)
        raise ConfigError(f"{setting} must be one of {known}, got {raw!r}") from None
    if provider == "openai-compatible" and style not in _CHAT_STYLES:
        allowed = ", ".join(s.value for s in EditStyle if s in _CHAT_STYLES)
        raise ConfigError(
            f"{setting}={style.value} needs the Responses API; Chat Completions providers "
            f"(openai-compatible) take only {allowed}"
        )
    return style


def configured_edit_style(env: Mapping[str, str], *, provider: str) -> EditStyle | None:
    """``SPARK_EDIT_STYLE`` from ``env`` (None: unset or empty)."""
    raw = env.get("SPARK_EDIT_STYLE", "").strip()
    return parse_edit_style(raw, provider=provider) if raw else None


def edit_style_from(env: Mapping[str, str], *, provider: str, model: str) -> EditStyle:
    """``SPARK_EDIT_STYLE`` from ``env``, or the provider's default when unset or empty."""
    return configured_edit_style(env, provider=provider) or default_edit_style(provider, model)


# -- the V4A format ---------------------------------------------------------------------------

# A Lark grammar (the syntax OpenAI's custom tools take) of a whole patch. Marker lines are
# literal; every other line starts with its role character. Hunks are a flat run of context
# markers and lines, so a first hunk without "@@" is allowed, as the format allows it.
V4A_GRAMMAR = r"""start: begin file_op+ end

begin: "*** Begin Patch" LF
end: "*** End Patch" LF?

file_op: add_file | delete_file | update_file

add_file: "*** Add File: " PATH LF added_line*
delete_file: "*** Delete File: " PATH LF
update_file: "*** Update File: " PATH LF move_to? hunk_part+

move_to: "*** Move to: " PATH LF
hunk_part: anchor | kept_line | removed_line | added_line | end_of_file
anchor: "@@" (" " TEXT?)? LF
kept_line: " " TEXT? LF
removed_line: "-" TEXT? LF
added_line: "+" TEXT? LF
end_of_file: "*** End of File" LF

PATH: /[^\r\n]+/
TEXT: /[^\r\n]+/
LF: /\r?\n/
"""

V4A_RULES = """\
A patch is plain text between "*** Begin Patch" and "*** End Patch", one or more file
operations in between. Paths are relative to the workspace root. There are no line numbers.
- "*** Add File: <path>" then every line of the new file, each starting with "+".
- "*** Delete File: <path>" alone.
- "*** Update File: <path>", optionally "*** Move to: <new path>" to rename it, then hunks.
  A hunk is "@@" (or "@@ <a line of the file above the change>" when the spot is not unique;
  several may follow each other, outermost first), then its lines: " " + an unchanged line,
  "-" + a line to remove, "+" + a line to add. Give about 3 unchanged lines before and after
  each change, copied exactly, so the change can be found. Hunks of a file go top to bottom.
  "*** End of File" after a hunk that ends at the end of the file."""

_TOOL_RESULT = """\
Each call's result says which hunks applied and which failed, and why. Fix a failed hunk with
a new patch against the file as it is now; do not repeat hunks that applied."""

_EDITOR = "You are a coding assistant working live inside the user's editor. Explain briefly, then"

_APPLY_PATCH_INSTRUCTIONS = f"""\
{_EDITOR} change files by calling the apply_patch tool with a patch in the V4A format.

{V4A_RULES}

{_TOOL_RESULT}"""

_BUILTIN_INSTRUCTIONS = f"""\
{_EDITOR} change files with the apply_patch tool: each call creates, updates or deletes one
file. An update's diff is its hunks only: "@@" or "@@ <a line above the change>", then " "
for unchanged lines (about 3 before and after each change, copied exactly), "-" for lines to
remove and "+" for lines to add, hunks top to bottom. A new file's diff is its lines, each
starting with "+".

{_TOOL_RESULT}"""

_FUNCTION_INSTRUCTIONS = f"""\
{_EDITOR} change files by calling the apply_patch function with one argument, "input": the
whole patch as a string in the V4A format.

{V4A_RULES}

{_TOOL_RESULT}"""

_EDITS_INSTRUCTIONS = f"""\
{_EDITOR}
change files with edit blocks. Tags must start at the beginning of a line.

To change part of a file, quote the exact current lines and give their replacement:
<edit path="src/app.py">
<old_text line="12">
exact current lines to replace
</old_text>
<new_text>
replacement lines
</new_text>
</edit>

To create a file or rewrite a small one, give its whole content:
<write path="src/new_module.py">
whole file content
</write>

Blocks apply in order. Each old_text must match the file uniquely; quote enough lines."""

_WHOLE_FILE_INSTRUCTIONS = """\
You are a coding assistant. Answer with the complete new content of each file you change,
inside a write block, and nothing else inside it:
<write path="main.py">
whole file content
</write>"""

INSTRUCTIONS: Mapping[EditStyle, str] = {
    EditStyle.APPLY_PATCH: _APPLY_PATCH_INSTRUCTIONS,
    EditStyle.APPLY_PATCH_BUILTIN: _BUILTIN_INSTRUCTIONS,
    EditStyle.FUNCTION: _FUNCTION_INSTRUCTIONS,
    EditStyle.EDITS: _EDITS_INSTRUCTIONS,
    EditStyle.WHOLE_FILE: _WHOLE_FILE_INSTRUCTIONS,
}

# -- the run command ---------------------------------------------------------------------------

# The command language of the run tool, as a Lark grammar (what a custom tool's input may be).
# Words are separated by one space; a word is bare (no blank, quote, backslash, "$", "`" or
# shell operator) or quoted ('...', or "..." without "$", "`" or "\"). A path (or -k's
# expression) never starts with "-" (it would read as an option), "/" or a blank. No literal
# is the start of another terminal where both may come (" -m" is two tokens, and a path cannot
# start with "-"), so a lexer need not look ahead.
# ``live.run_command`` parses the same language.
RUN_GRAMMAR = r"""start: python_run | pytest_run

python_run: PYTHON " " path (" " word)*
pytest_run: ("pytest" | PYTHON " " "-m" " " "pytest") (" " test_arg)*
test_arg: path | "-x" | "-q" | "-k " keyword

PYTHON: "python3" | "python"
path: BARE_PATH | QUOTED_PATH
keyword: BARE_PATH | QUOTED_PATH
word: BARE_WORD | QUOTED
QUOTED: /'[^'\r\n]*'/ | /"[^"\\$`\r\n]*"/
QUOTED_PATH: /'[^'\s\-\/][^'\r\n]*'/ | /"[^"\\$`\s\-\/][^"\\$`\r\n]*"/
BARE_PATH: /[^\s'"\\$`;&|<>()\-\/][^\s'"\\$`;&|<>()]*/
BARE_WORD: /[^\s'"\\$`;&|<>()]+/
"""

RUN_RULES = """\
One command, on one line, run on the workspace's files as they are now (no shell: no pipes,
redirections, ";", "&&", variables or wildcards):
- "python <file> [arguments...]" runs a file of the workspace (paths relative to its root).
- "pytest [paths...] [-x] [-q] [-k EXPRESSION]" runs the tests (all of them without paths);
  a path is a file or folder, or a test in a file ("tests/test_app.py::test_add").
Quote a word that holds blanks with '...' or "..."."""

_RUN_RESULT = """\
The result gives the exit status, which limit stopped the run if one did, and its output (a
long output keeps its start and its end)."""

_RUN_DESCRIPTION = (
    "Run a file of the workspace (python <file> [args]) or its tests (pytest [paths] [-x] [-q] [-k EXPR]) "
    "in a sandbox, on the files as they are now; everyone in the room sees the run."
)

RUN_INSTRUCTIONS = f"""\
You can run code with the run tool: after changing code, run the tests (or the program) to
check your work, read the result, fix what fails and run again. Run only what helps; do not
repeat a run when nothing changed.

{RUN_RULES}

{_RUN_RESULT}"""

_RUN_FUNCTION_INSTRUCTIONS = RUN_INSTRUCTIONS.replace(
    "with the run tool", 'by calling the run function with one argument, "command"'
)
_RUN_FUNCTION_DESCRIPTION = f"{_RUN_DESCRIPTION}\n\n{RUN_RULES}"
FUNCTION_ARGUMENTS: Mapping[str, str] = {APPLY_PATCH: "input", RUN: "command"}  # each function's one argument


def function_argument(name: str) -> str:
    """The argument that carries a function tool's input (``input`` for a name not offered)."""
    return FUNCTION_ARGUMENTS.get(name, "input")


def _one_string_schema(name: str, description: str) -> _JSON:
    """The parameters of function tool ``name``: its one string argument."""
    argument = FUNCTION_ARGUMENTS[name]
    return {
        "type": "object",
        "properties": {argument: {"type": "string", "description": description}},
        "required": [argument],
        "additionalProperties": False,
    }


_COMMAND_SCHEMA = _one_string_schema(RUN, "The command, e.g. \"pytest -x -q\".")


def run_instructions(style: EditStyle | None) -> str:
    """What the model is told about the run tool, in ``style``'s form ("" when it has none)."""
    if style is None or not style.uses_tool:
        return ""
    return _RUN_FUNCTION_INSTRUCTIONS if style is EditStyle.FUNCTION else RUN_INSTRUCTIONS


# -- the tools, in each wire shape ------------------------------------------------------------

_PATCH_DESCRIPTION = (
    "Create, update, rename or delete files of the workspace with one patch in the V4A format "
    "(*** Begin Patch ... *** End Patch; no line numbers: hunks are found by their unchanged "
    "and removed lines). The result says which hunks applied and which failed."
)
_INPUT_SCHEMA = _one_string_schema(APPLY_PATCH, "The whole patch, in the V4A format.")
_FUNCTION_DESCRIPTION = f"{_PATCH_DESCRIPTION}\n\n{V4A_RULES}"


def responses_tools(style: EditStyle | None, *, runs: bool = False) -> list[_JSON]:
    """The ``tools`` of a Responses request offering ``style``'s editing tool ([] for none),
    and with ``runs`` the run tool beside it (a tool dialect only)."""
    tools = _responses_edit_tools(style)
    if runs and tools:
        if style is EditStyle.FUNCTION:
            tools.append({
                "type": "function", "name": RUN, "description": _RUN_FUNCTION_DESCRIPTION,
                "parameters": _COMMAND_SCHEMA, "strict": False,
            })
        else:  # a custom tool with its grammar, beside apply_patch's custom or built-in tool
            tools.append({
                "type": "custom", "name": RUN, "description": _RUN_DESCRIPTION,
                "format": {"type": "grammar", "syntax": "lark", "definition": RUN_GRAMMAR},
            })
    return tools


def _responses_edit_tools(style: EditStyle | None) -> list[_JSON]:
    if style is EditStyle.APPLY_PATCH:
        return [{
            "type": "custom", "name": APPLY_PATCH, "description": _PATCH_DESCRIPTION,
            "format": {"type": "grammar", "syntax": "lark", "definition": V4A_GRAMMAR},
        }]
    if style is EditStyle.APPLY_PATCH_BUILTIN:
        return [{"type": "apply_patch"}]
    if style is EditStyle.FUNCTION:
        return [{
            "type": "function", "name": APPLY_PATCH, "description": _FUNCTION_DESCRIPTION,
            "parameters": _INPUT_SCHEMA, "strict": False,
        }]
    return []


def chat_tools(style: EditStyle | None, *, runs: bool = False) -> list[_JSON]:
    """The ``tools`` of a Chat Completions request: function tools only, so every tool dialect
    is offered as the ``apply_patch`` function there (a Responses session that fell back to
    HTTP keeps an editing tool; the calls then arrive as ``function`` calls), and with
    ``runs`` the ``run`` function beside it."""
    if style is None or not style.uses_tool:
        return []
    function: _JSON = {"name": APPLY_PATCH, "description": _FUNCTION_DESCRIPTION, "parameters": _INPUT_SCHEMA}
    tools: list[_JSON] = [{"type": "function", "function": function}]
    if runs:
        run: _JSON = {"name": RUN, "description": _RUN_FUNCTION_DESCRIPTION, "parameters": _COMMAND_SCHEMA}
        tools.append({"type": "function", "function": run})
    return tools
