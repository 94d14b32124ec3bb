"""A deterministic engine: plays known answers (text and tool calls) at an exact token rate.

The last user message chooses the answer:

* ``[say]literal text[/say]`` plays exactly the text between the tags (may span lines);
* ``[script:NAME]`` plays ``scripts[NAME]`` (:mod:`spark_ide.modelserver.script`: rounds
  of messages and tool calls);
* anything else plays ``default_text``;
* ``[rate:N]`` (tokens/s) and ``[ttft:MS]`` (time to first token) override the engine's
  settings for that request.

When directives repeat, the **last** one counts (for the text: the last ``[say]`` block or
``[script:NAME]``, whichever comes later): a re-prompt after a steer repeats the original
request and adds the steering text, whose directives must win.

A script of several rounds plays round *k + 1* when the conversation holds *k* answers of
the model since the last user message (a follow-up that only carries tool outputs is the
next round); past its last round a follow-up fails with ``script_exhausted``. A user
message without any directive that follows one whose script the model has begun and not
finished (the IDE's own follow-up in a turn, such as a test round's failure) goes on with that
script: its rounds count from the message that named it.

Tokens are at most 4 characters, cut at whitespace where possible; a tool call's input,
arguments or diff is cut the same way. Token *i* of the answer (counting every item) is due
at ``ttft + i / rate``; whenever the generator wakes it hands over every token of the
current item that is due in one piece (at most ``MAX_PIECE_TOKENS``), so at high rates
(beyond what one event-loop wake-up per token allows) a delta carries several tokens while
the average rate stays exact. The schedule is a :class:`~spark_ide.modelserver.pacing.Timetable`:
the WebSocket server plays it with one timer for all its answers instead of iterating
``generate`` (the same pieces at the same times).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_ide.modelserver.engine import (
    CancelToken,
    EngineError,
    Job,
    MessageStart,
    Output,
    Piece,
    Tally,
    ToolCall,
)
from spark_ide.modelserver.pacing import MAX_PIECE_TOKENS as MAX_PIECE_TOKENS
from spark_ide.modelserver.pacing import Item, Timetable
from spark_ide.modelserver.script import (
    CustomCall,
    FunctionCall,
    PatchCall,
    Round,
    Say,
    Script,
    ScriptError,
    ScriptSource,
    Step,
    parse_script,
)
from spark_ide.modelserver.wire import new_id

MAX_TOKEN_CHARS = 4
DEFAULT_TEXT = (
    "Hello! I am the scripted engine of the Spark IDE model server. I play fixed text at a"
    " steady rate, so tests and demos can rely on every token."
)

_SAY = re.compile(r"\[say\](.*?)\[/say\]", re.DOTALL)
_SCRIPT = re.compile(r"\[script:([^\]]*)\]")
_RATE = re.compile(r"\[rate:([^\]]*)\]")
_TTFT = re.compile(r"\[ttft:([^\]]*)\]")
_WORDS = re.compile(r"\s*\S+|\s+")

SCRIPT_NOT_FOUND = "script_not_found"
SCRIPT_EXHAUSTED = "script_exhausted"
INVALID_SCRIPT = "invalid_script"
INVALID_DIRECTIVE = "invalid_directive"


def split_tokens(text: str) -> list[str]:
    """Cut text into tokens of at most 4 characters; each word keeps its leading space."""
    tokens: list[str] = []
    for word in _WORDS.findall(text):
        tokens.extend(word[i : i + MAX_TOKEN_CHARS] for i in range(0, len(word), MAX_TOKEN_CHARS))
    return tokens


def load_scripts(path: Path) -> dict[str, ScriptSource]:
    """Read a script file: a JSON object mapping names to scripts (a text, or rounds)."""
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(name, str) for name in data):
        raise ValueError(f"{path}: a script file must be a JSON object of name -> script")
    for name, source in data.items():
        parse_script(source, f"{path}: script {name!r}")
    return data


@dataclass(frozen=True)
class Plan:
    steps: Round
    tokens_per_s: float
    ttft_s: float


class ScriptedEngine:
    def __init__(
        self,
        scripts: Mapping[str, ScriptSource] | None = None,
        tokens_per_s: float = 1000.0,
        ttft_s: float = 0.02,
        default_text: str = DEFAULT_TEXT,
    ) -> None:
        if not 0 < tokens_per_s < math.inf:
            raise ValueError("tokens_per_s must be positive and finite")
        if ttft_s < 0:
            raise ValueError("ttft_s must not be negative")
        for name, source in (scripts or {}).items():
            parse_script(source, f"script {name!r}")  # refuse a bad script now, not mid-test
        # Kept as given (tests may add or replace a script later); parsed when played.
        self.scripts: dict[str, ScriptSource] = dict(scripts or {})
        self.tokens_per_s = tokens_per_s
        self.ttft_s = ttft_s
        self.default_text = default_text

    async def load(self) -> None:
        """Nothing to load."""

    async def close(self) -> None:
        """Nothing to release."""

    async def prepare(self, job: Job, tally: Tally) -> None:
        tally.input_tokens = count_prompt_tokens(job)

    def plan(self, job: Job) -> Plan:
        """What the last user message asks for (this round's steps, rate, time to first token)."""
        request, since = self._directing(job)
        # Directives inside a [say] block are part of the literal text, not settings.
        outside = _SAY.sub("", request)
        rate = _number(_RATE, outside, "rate", self.tokens_per_s)
        ttft_ms = _number(_TTFT, outside, "ttft", self.ttft_s * 1000.0)
        if not (0 < rate < math.inf and 0 <= ttft_ms < math.inf):
            raise EngineError(INVALID_DIRECTIVE, "[rate:N] must be > 0 and [ttft:MS] >= 0.")
        name, script = self._script(request)
        answered = job.answers_after(since)
        if answered >= len(script):
            raise EngineError(
                SCRIPT_EXHAUSTED,
                f"{name} has {len(script)} round(s); this request would be round {answered + 1}.",
            )
        return Plan(script[answered], rate, ttft_ms / 1000.0)

    def _directing(self, job: Job) -> tuple[str, int]:
        """The user message whose directives this request plays, and its index: the last one;
        or, when it has none, the last one before it with a script or a [say] block whose
        play the model has begun (answered at least once) and not finished."""
        users = [(index, message.content) for index, message in enumerate(job.messages) if message.role == "user"]
        if not users:
            return "", -1
        last_index, last = users[-1]
        if _SAY.search(last) or _SCRIPT.search(last):
            return last, last_index
        for index, text in reversed(users[:-1]):
            if _SAY.search(text) or _SCRIPT.search(text):
                answered = job.answers_after(index)
                if 0 < answered < len(self._script(text)[1]):
                    return text, index
                break
        return last, last_index

    def _script(self, request: str) -> tuple[str, Script]:
        """The last ``[say]`` block or ``[script:NAME]``, whichever comes last (and its name)."""
        said = list(_SAY.finditer(request))
        blocks = [match.span() for match in said]
        named = [
            match
            for match in _SCRIPT.finditer(request)
            if not any(start <= match.start() < end for start, end in blocks)
        ]
        if not said and not named:
            return "The default text", parse_script(self.default_text)
        last = max(said + named, key=lambda match: match.start())
        if last.re is _SAY:
            return "A [say] block", parse_script(last.group(1))
        name = last.group(1)
        if name not in self.scripts:
            raise EngineError(SCRIPT_NOT_FOUND, f"No script named {name!r} is loaded.")
        try:
            return f"Script {name!r}", parse_script(self.scripts[name], f"script {name!r}")
        except ScriptError as exc:
            raise EngineError(INVALID_SCRIPT, str(exc)) from None

    def timetable(self, job: Job, tally: Tally, begun: float) -> Timetable | None:
        """The answer to ``job`` on its schedule, its time to first token counted from
        ``begun`` (:mod:`spark_ide.modelserver.pacing`); raises ``EngineError`` as ``generate``
        does. None for a subclass that overrides ``generate`` (to watch or change what it
        yields): it is served through its ``generate``."""
        if type(self).generate is not ScriptedEngine.generate:
            return None
        return self._timetable(job, tally, begun)

    def _timetable(self, job: Job, tally: Tally, begun: float) -> Timetable:
        plan = self.plan(job)
        tally.input_tokens = count_prompt_tokens(job)
        items = _limited([_item(step) for step in plan.steps], job.max_output_tokens, tally)
        return Timetable(items, begun, plan.ttft_s, plan.tokens_per_s, tally)

    async def generate(
        self, job: Job, tally: Tally, cancel: CancelToken
    ) -> AsyncGenerator[Output, None]:
        loop = asyncio.get_running_loop()
        # The time to first token counts from here, as a model's counts from when it takes the
        # request up: reading the prompt (the plan, the token count) is part of it.
        timetable = self._timetable(job, tally, loop.time())
        if await cancel.wait_until(timetable.first_at):
            return
        timetable.begin(loop.time())
        while (marker := timetable.next_item()) is not None:
            yield marker
            while not timetable.item_done:
                due = timetable.due(loop.time())
                if due > 0:
                    yield Piece(timetable.take(due), due)
                    # Behind schedule nothing below would suspend: yield to the event loop
                    # anyway, so other sockets (and this socket's cancel) are served.
                    if timetable.next_due() <= loop.time():
                        await asyncio.sleep(0)
                    if cancel.is_set():
                        return
                elif await cancel.wait_until(timetable.next_due()):
                    return


def _item(step: Step) -> Item:
    """The marker that opens a step's output item, and the tokens of its text."""
    if isinstance(step, Say):
        return MessageStart(), split_tokens(step.text)
    call_id = step.call_id or new_id("call")
    if isinstance(step, CustomCall):
        return ToolCall("custom", call_id, step.name, streamed=step.stream), split_tokens(step.input)
    if isinstance(step, FunctionCall):
        return ToolCall("function", call_id, step.name, streamed=step.stream), split_tokens(step.arguments)
    assert isinstance(step, PatchCall)
    call = ToolCall("apply_patch", call_id, operation=step.operation, path=step.path, streamed=step.stream)
    return call, split_tokens(step.diff)


def _limited(items: list[Item], limit: int | None, tally: Tally) -> list[Item]:
    """The items cut at ``limit`` tokens (counting every item); notes a cut in ``tally``."""
    if limit is None or sum(len(tokens) for _, tokens in items) <= limit:
        return items
    tally.hit_token_limit = True
    kept: list[Item] = []
    for marker, tokens in items:
        if limit <= 0:
            break
        kept.append((marker, tokens[:limit]))
        limit -= len(tokens)
    return kept


def count_tokens(text: str) -> int:
    """``len(split_tokens(text))`` without making the tokens: a word of n characters is
    ceil(n / 4) of them."""
    return sum((len(word) + MAX_TOKEN_CHARS - 1) // MAX_TOKEN_CHARS for word in _WORDS.findall(text))


def count_prompt_tokens(job: Job) -> int:
    return sum(count_tokens(message.content) for message in job.messages)


def _number(pattern: re.Pattern[str], text: str, name: str, default: float) -> float:
    found = pattern.findall(text)
    if not found:
        return default
    try:
        return float(found[-1])
    except ValueError:
        raise EngineError(INVALID_DIRECTIVE, f"[{name}:{found[-1]}] is not a number.") from None
