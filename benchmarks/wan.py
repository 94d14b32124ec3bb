"""WAN benchmark (``spark_bench wan``): the seeds' headline at an emulated round-trip time.

OpenAI's launch of the Responses WebSocket (UPSTREAM.md) reported -50 % time to first token
and -80 % per-round-trip overhead against its HTTP path. This scenario measures the same
figures for our transports, on loopback behind the in-process delay proxy of
``benchmarks.upstream`` (``benchmarks.loopproxy``: ``--delay-ms`` each way, 25 ms = 50 ms
RTT, a new connection's TCP handshake round trip emulated, no TLS):

* ``ws_warm``: our upstream client (``spark_ide.upstream.ws_client``) on its warm persistent
  socket, one turn after another;
* ``ws_new``: a new WebSocket connection per turn (opened, one turn, closed);
* ``sse_keepalive``: Chat Completions over HTTP/SSE (``spark_ide.upstream.sse``) against
  ``spark_ide.modelserver.http_sse``, a new streamed POST per turn over one keep-alive
  connection, as Chat Completions servers are used;
* ``sse_new``: the same with a new HTTP connection per turn (no keep-alive).

Every transport serves the same scripted engine: each turn is ``--tokens`` tokens at
``--rate`` tokens/s with no engine TTFT, so generation takes exactly (tokens - 1) / rate (the
engine's schedule: token i is due at i / rate). Per turn: TTFT = the client starts the turn
(for ``*_new`` before it connects) -> first text delta; wall = the same start -> the
turn's terminal event; per-turn overhead = wall - generation time. Transports alternate turn
by turn, so drifting load hits all alike; medians over ``--reps`` turns each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass, replace
from typing import Any

from benchmarks import report
from benchmarks.loopproxy import LoopProxy
from benchmarks.upstream import KEY, MODEL, _bench_server, _client_config, _no_stop, _turn
from spark_ide.modelserver.engines.scripted import ScriptedEngine, split_tokens
from spark_ide.modelserver.http_sse import SseModelServer
from spark_ide.upstream.config import ProviderConfig
from spark_ide.upstream.connection import ResponsesConnection
from spark_ide.upstream.events import Completed
from spark_ide.upstream.request import responses_create
from spark_ide.upstream.sse import ChatCompletionsClient
from spark_ide.upstream.stream import TurnStream
from spark_ide.upstream.ws_client import ResponsesClient

SCENARIO = "wan"
QUICK = ["--reps", "15"]
TRANSPORTS = ("ws_warm", "ws_new", "sse_keepalive", "sse_new")
LABELS = {
    "ws_warm": "WebSocket, warm persistent", "ws_new": "WebSocket, new connection per turn",
    "sse_keepalive": "HTTP/SSE, keep-alive", "sse_new": "HTTP/SSE, new connection per turn",
}
# UPSTREAM.md: "OpenAI reported -80 % per-roundtrip overhead, -30 % per-token overhead, -50 %
# TTFT for the Codex-Spark launch".
PUBLISHED_TTFT_REDUCTION = 0.5
PUBLISHED_OVERHEAD_REDUCTION = 0.8


@dataclass(frozen=True)
class Sample:
    ttft_s: float
    wall_s: float


async def _timed(began: float, stream: TurnStream) -> Sample:
    """Read the turn to its end; TTFT and wall time from ``began``."""
    async with asyncio.timeout(30):
        terminal = None
        async for event in stream:
            terminal = event
    ended = time.monotonic()
    if not isinstance(terminal, Completed) or stream.first_token_at is None:
        raise RuntimeError(f"the turn did not complete: {terminal!r}")
    return Sample(stream.first_token_at - began, ended - began)


class WarmSocket:
    """Our upstream client, connected once; every turn on its warm socket."""

    def __init__(self, config: ProviderConfig) -> None:
        self.client = ResponsesClient(config)

    async def open(self) -> None:
        await self.client.connect()

    async def turn(self, text: str) -> Sample:
        began = time.monotonic()
        return await _timed(began, await self.client.start(_turn(text)))

    async def close(self) -> None:
        await self.client.close()


class NewSocket:
    """A WebSocket connection opened for the turn and closed after it."""

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config

    async def open(self) -> None:
        """Nothing is kept between turns."""

    async def turn(self, text: str) -> Sample:
        began = time.monotonic()
        connection = await ResponsesConnection.open(self.config, lambda _: None)
        try:
            stream = TurnStream(_turn(text), stopper=_no_stop, resender=None, first_byte_timeout_s=30,
                                idle_timeout_s=30)
            body = responses_create(stream.request, model=self.config.model, profile=self.config.profile,
                                    store=False, chain=False)
            await connection.submit(body, stream)
            return await _timed(began, stream)
        finally:
            await connection.close()

    async def close(self) -> None:
        """Nothing is kept between turns."""


class Sse:
    """Our Chat Completions client: one pooled keep-alive connection, or (``keep_alive``
    False) a new client and connection per turn."""

    def __init__(self, config: ProviderConfig, *, keep_alive: bool) -> None:
        self.config = config
        self.keep_alive = keep_alive
        self.client: ChatCompletionsClient | None = None

    async def open(self) -> None:
        if self.keep_alive:
            self.client = ChatCompletionsClient(self.config)
            await self.client.connect()  # the pool's connection is open before the first turn

    async def turn(self, text: str) -> Sample:
        began = time.monotonic()
        if self.client is not None:
            return await _timed(began, await self.client.start(_turn(text)))
        client = ChatCompletionsClient(self.config)
        try:
            return await _timed(began, await client.start(_turn(text)))
        finally:
            await client.close()

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


def summary_ms(values: list[float]) -> dict[str, float | int]:
    return report.summary([v * 1000.0 for v in values])


async def measure(reps: int, delay_ms: float, tokens: int, rate: float, warmup: int = 2) -> dict[str, Any]:
    delay_s = delay_ms / 1000.0
    text_tokens = " ".join(f"{i % 1000:03d}" for i in range(tokens))  # one token per word: "000", " 001" ...
    if len(split_tokens(text_tokens)) != tokens:
        raise AssertionError("the answer must hold exactly --tokens tokens")
    turn_text = f"[say]{text_tokens}[/say][rate:{rate:g}][ttft:0]"
    generation_s = (tokens - 1) / rate
    engine = ScriptedEngine(tokens_per_s=rate, ttft_s=0.0)
    samples: dict[str, list[Sample]] = {name: [] for name in TRANSPORTS}
    connections = dict.fromkeys(TRANSPORTS, 0)  # new connections the measured turns opened
    async with _bench_server(openai_like=True, delay_s=delay_s) as ws_proxy, \
            SseModelServer(engine, model=MODEL, api_key=KEY) as sse_server:
        sse_proxy = await LoopProxy("127.0.0.1", sse_server.port, delay_s=delay_s, emulate_tcp_handshake=True,
                                    websocket=False).start()
        try:
            ws_config = _client_config(ws_proxy, openai_like=True)
            sse_config = replace(ws_config, provider="openai-compatible", base_url=sse_proxy.base_url())
            transports: dict[str, Any] = {
                "ws_warm": WarmSocket(ws_config), "ws_new": NewSocket(ws_config),
                "sse_keepalive": Sse(sse_config, keep_alive=True), "sse_new": Sse(sse_config, keep_alive=False),
            }
            for transport in transports.values():
                await transport.open()
            try:
                for rep in range(warmup + reps):
                    for name, transport in transports.items():
                        proxy = sse_proxy if name.startswith("sse") else ws_proxy
                        before = proxy.connections
                        sample = await transport.turn(turn_text)
                        if rep >= warmup:
                            samples[name].append(sample)
                            connections[name] += proxy.connections - before
            finally:
                for transport in transports.values():
                    await transport.close()
        finally:
            await sse_proxy.stop()
    figures: dict[str, Any] = {}
    for name, taken in samples.items():
        overhead = [s.wall_s - generation_s for s in taken]
        figures[name] = {
            "label": LABELS[name], "ttft_ms": summary_ms([s.ttft_s for s in taken]),
            "wall_ms": summary_ms([s.wall_s for s in taken]), "overhead_ms": summary_ms(overhead),
            "overhead_in_rtts": round(statistics.median(overhead) * 1000.0 / (2 * delay_ms), 2) if delay_ms else None,
        }
    return {
        "network": {"method": "in-process asyncio TCP delay proxy (benchmarks.loopproxy)", "one_way_delay_ms": delay_ms,
                    "added_rtt_ms": 2 * delay_ms, "tcp_handshake_rtt_emulated": True, "tls": False},
        "turn": {"tokens": tokens, "rate": rate, "engine_ttft_ms": 0, "generation_ms": round(generation_s * 1000, 3)},
        "repetitions": reps, "new_connections_per_transport": connections, "transports": figures,
        "samples_ms": {name: {"ttft": [round(s.ttft_s * 1000, 3) for s in taken],
                              "overhead": [round((s.wall_s - generation_s) * 1000, 3) for s in taken]}
                       for name, taken in samples.items()},
    }


def _reduction(ours: float, theirs: float) -> float:
    return round(1.0 - ours / theirs, 3) if theirs else 0.0


def rows(figures: dict[str, Any]) -> list[report.Row]:
    t = figures["transports"]
    warm_ttft, warm_over = t["ws_warm"]["ttft_ms"]["p50"], t["ws_warm"]["overhead_ms"]["p50"]
    out = []
    rtt = figures["network"]["added_rtt_ms"]
    reps = figures["repetitions"]
    for base in ("ws_new", "sse_keepalive", "sse_new"):
        ttft, over = t[base]["ttft_ms"]["p50"], t[base]["overhead_ms"]["p50"]
        opened = figures["new_connections_per_transport"][base]
        # The keep-alive baseline is only that if its turns reused the pooled connection.
        lost = ""
        if base == "sse_keepalive" and opened:
            lost = f"; keep-alive lost: {opened} new connections in {reps} turns"
        out.append(report.row(
            f"wan ({rtt:g} ms RTT): TTFT p50, warm WebSocket vs {t[base]['label']}", warm_ttft, unit="ms",
            baseline=ttft, target="OpenAI published: -50 % TTFT (ratio <= 0.5)",
            met=report.at_most(warm_ttft / ttft if ttft else None, 1 - PUBLISHED_TTFT_REDUCTION),
            note=f"{_reduction(warm_ttft, ttft) * 100:.0f} % lower{lost}"))
        out.append(report.row(
            f"wan ({rtt:g} ms RTT): per-turn overhead p50 (wall - generation), warm WebSocket vs {t[base]['label']}",
            warm_over, unit="ms", baseline=over, target="OpenAI published: -80 % per round trip (ratio <= 0.2)",
            met=report.at_most(warm_over / over if over else None, 1 - PUBLISHED_OVERHEAD_REDUCTION),
            note=f"{_reduction(warm_over, over) * 100:.0f} % lower{lost}"))
    return out


def charts(figures: dict[str, Any]) -> dict[str, report.Chart]:
    t, samples = figures["transports"], figures["samples_ms"]
    rtt = figures["network"]["added_rtt_ms"]
    return {
        "wan_ttft_cdf": report.chart(
            f"WAN ({rtt:g} ms RTT): time to first token per transport", "TTFT (ms)", "share of turns",
            {t[name]["label"]: samples[name]["ttft"] for name in TRANSPORTS}, kind="cdf"),
        "wan_overhead": report.chart(
            f"WAN ({rtt:g} ms RTT): per-turn overhead (wall - generation), p50", "transport", "ms",
            {t[name]["label"]: [(i, t[name]["overhead_ms"]["p50"])] for i, name in enumerate(TRANSPORTS)},
            kind="bar", hline=rtt),
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_bench wan", description="TTFT and per-turn overhead per transport.")
    parser.add_argument("--reps", type=int, default=40, help="turns per transport (after 2 warm-up turns)")
    parser.add_argument("--delay-ms", type=float, default=25.0, help="one-way added delay (25 = 50 ms RTT)")
    parser.add_argument("--tokens", type=int, default=100, help="tokens per answer")
    parser.add_argument("--rate", type=float, default=1000.0, help="engine tokens/s")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.delay_ms < 0 or args.tokens < 1 or args.rate <= 0:
        parser.error("--reps and --tokens must be >= 1, --delay-ms >= 0, --rate > 0")
    return args


def main(argv: list[str]) -> dict[str, Any]:
    args = parse(argv)
    setup = report.Setup()
    figures = asyncio.run(measure(args.reps, args.delay_ms, args.tokens, args.rate))
    return {"rows": rows(figures), "charts": charts(figures),
            "setup": setup.finish(reps=args.reps, delay_ms=args.delay_ms, tokens=args.tokens, rate=args.rate),
            **figures}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(main(sys.argv[1:]), indent=1))
