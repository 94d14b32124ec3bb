"""Upstream benchmark (``manage.py spark_bench upstream``).

Against our model server in its OpenAI-like mode on loopback with 50 ms added round-trip
time, it measures:

* time to first token of a turn on the warm persistent socket vs on a fresh connection
  opened for the turn (the baseline);
* cancel-to-new-request-sent when steering with the hot spare vs by reconnecting (and with
  native cancel against the local mode, for comparison), plus steer-to-new-first-token.

The delay comes from an in-process asyncio TCP proxy (25 ms each way, TCP handshake round
trip emulated). A network namespace pair with ``tc netem`` is preferred where the kernel
has netem; the probe's outcome is reported, and the proxy is what this code uses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from benchmarks.loopproxy import LoopProxy
from benchmarks.report import Setup, row
from spark_ide.modelserver.engines.scripted import ScriptedEngine
from spark_ide.modelserver.server import ModelServer, ServerConfig
from spark_ide.upstream.backoff import RetryPolicy
from spark_ide.upstream.config import ProviderConfig
from spark_ide.upstream.connection import ResponsesConnection
from spark_ide.upstream.events import TextDelta
from spark_ide.upstream.profiles import CancelStrategy
from spark_ide.upstream.request import Message, TurnRequest, responses_create
from spark_ide.upstream.stream import TurnStream
from spark_ide.upstream.ws_client import ResponsesClient

KEY = "sk-bench-not-a-real-key"
MODEL = "smollm2"
LONG = " ".join(f"t{i:03d}" for i in range(2000))
SHORT_TURN = "[say]def add(a, b):\n    return a + b[/say][ttft:0]"
LONG_TURN = "[script:long][rate:400][ttft:0]"
QUICK = ["--reps", "8", "--no-netem-probe"]


def _turn(text: str) -> TurnRequest:
    return TurnRequest(instructions="bench", input=(Message("user", text),))


def _summary(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000.0 for s in samples_s)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return {"median": round(statistics.median(ms), 3), "p99": round(p99, 3),
            "min": round(ms[0], 3), "n": len(ms)}


async def _drain(stream: TurnStream, *, until_first_token: bool = False) -> None:
    async with asyncio.timeout(30):
        async for event in stream:
            if until_first_token and isinstance(event, TextDelta):
                return


@asynccontextmanager
async def _bench_server(*, openai_like: bool, delay_s: float) -> AsyncIterator[LoopProxy]:
    config = ServerConfig(host="127.0.0.1", port=0, api_key=KEY if openai_like else None,
                          cancel_extension=not openai_like, steer_extension=False, model=MODEL)
    engine = ScriptedEngine(scripts={"long": LONG}, tokens_per_s=1000.0, ttft_s=0.0)
    async with ModelServer(engine, config) as server:
        proxy = await LoopProxy("127.0.0.1", server.port, delay_s=delay_s,
                                emulate_tcp_handshake=True).start()
        try:
            yield proxy
        finally:
            await proxy.stop()


def _client_config(proxy: LoopProxy, *, openai_like: bool, **overrides: object) -> ProviderConfig:
    config = ProviderConfig(provider="openai" if openai_like else "local",
                            base_url=proxy.base_url(), model=MODEL,
                            api_key=KEY if openai_like else None,
                            retry=RetryPolicy(initial_s=0.05, max_s=0.5))
    return replace(config, **overrides)  # type: ignore[arg-type]


async def _ttft_warm(config: ProviderConfig, reps: int) -> list[float]:
    client = ResponsesClient(config)
    await client.connect()
    try:
        samples = []
        for _ in range(reps):
            stream = await client.start(_turn(SHORT_TURN))
            await _drain(stream)
            marks = stream.marks
            assert marks.first_token_at is not None
            samples.append(marks.first_token_at - marks.sent_at)
        return samples
    finally:
        await client.close()


async def _ttft_fresh(config: ProviderConfig, reps: int) -> list[float]:
    """Baseline: open a socket for the turn, send, read; TTFT counts from before the open."""
    samples = []
    for _ in range(reps):
        started = time.monotonic()
        connection = await ResponsesConnection.open(config, lambda _: None)
        stream = TurnStream(_turn(SHORT_TURN), stopper=_no_stop, resender=None,
                            first_byte_timeout_s=30, idle_timeout_s=30)
        body = responses_create(stream.request, model=config.model, profile=config.profile,
                                store=False, chain=False)
        await connection.submit(body, stream)
        await _drain(stream)
        assert stream.first_token_at is not None
        samples.append(stream.first_token_at - started)
        await connection.close()
    return samples


async def _no_stop(stream: TurnStream, abandon: bool) -> None:
    """The baseline never cancels."""


async def _spare_ready(client: ResponsesClient) -> None:
    """Wait until the client holds a warm spare, so a steer measures the hot-spare path."""
    async with asyncio.timeout(10):
        while not client.spare_ready:
            await asyncio.sleep(0.005)


async def _steer_latency(config: ProviderConfig, reps: int) -> tuple[list[float], list[float]]:
    """(cancel-to-new-request-sent, steer-to-new-first-token) for the config's strategy."""
    client = ResponsesClient(config)
    await client.connect()
    to_sent, to_token = [], []
    try:
        for _ in range(reps):
            if client.profile.keeps_spare:
                await _spare_ready(client)
            old = await client.start(_turn(LONG_TURN))
            await _drain(old, until_first_token=True)
            began = time.monotonic()
            new = await client.steer(old, _turn(SHORT_TURN))
            assert new.sent_at is not None
            to_sent.append(new.sent_at - began)
            await _drain(new)
            assert new.first_token_at is not None
            to_token.append(new.first_token_at - began)
        return to_sent, to_token
    finally:
        await client.close()


def probe_netem() -> str:
    """Whether ``ip netns`` + ``tc netem`` work here (the preferred way to add delay)."""
    ip, tc = shutil.which("ip"), shutil.which("tc")
    if os.geteuid() != 0 or ip is None or tc is None:
        return "unavailable: needs root with ip and tc"
    name = f"spark-bench-probe-{os.getpid()}"
    add = subprocess.run([ip, "netns", "add", name], capture_output=True, text=True)  # noqa: S603
    if add.returncode != 0:
        return f"unavailable: ip netns add failed ({add.stderr.strip()})"
    try:
        netem = subprocess.run(  # noqa: S603
            [ip, "netns", "exec", name, tc, "qdisc", "add", "dev", "lo", "root", "netem",
             "delay", "1ms"], capture_output=True, text=True)
    finally:
        subprocess.run([ip, "netns", "del", name], capture_output=True)  # noqa: S603
    if netem.returncode != 0:
        return f"unavailable: ip netns works but tc netem fails ({netem.stderr.strip()})"
    return "available (not used: this benchmark always uses the delay proxy)"


async def run(reps: int, delay_ms: float, *, probe: bool = True) -> dict[str, object]:
    setup = Setup()
    delay_s = delay_ms / 1000.0
    rtt_ms = 2 * delay_ms
    async with _bench_server(openai_like=True, delay_s=delay_s) as proxy:
        openai = _client_config(proxy, openai_like=True)
        warm = await _ttft_warm(openai, reps)
        fresh = await _ttft_fresh(openai, reps)
        spare_sent, spare_token = await _steer_latency(openai, reps)
        reconnect = replace(openai, cancel_strategy=CancelStrategy.RECONNECT)
        again_sent, again_token = await _steer_latency(reconnect, reps)
    async with _bench_server(openai_like=False, delay_s=delay_s) as proxy:
        native_sent, native_token = await _steer_latency(
            _client_config(proxy, openai_like=False), reps)
    ttft = {"warm_socket": _summary(warm), "fresh_connection": _summary(fresh)}
    warm_ms, fresh_ms = ttft["warm_socket"]["median"], ttft["fresh_connection"]["median"]
    sent = {"hot_spare": _summary(spare_sent), "reconnect": _summary(again_sent),
            "native_cancel_local": _summary(native_sent)}
    spare_ms, reconnect_ms = sent["hot_spare"]["median"], sent["reconnect"]["median"]
    return {
        "network": {
            "method": "in-process asyncio TCP delay proxy (benchmarks.loopproxy)",
            "one_way_delay_ms": delay_ms, "added_rtt_ms": rtt_ms,
            "tcp_handshake_rtt_emulated": True, "tls": False,
            "netns_netem": probe_netem() if probe else "not probed",
        },
        "server": "spark_ide.modelserver, scripted engine, OpenAI-like mode, ttft 0",
        "repetitions": reps,
        "ttft_ms": {
            **ttft,
            "reduction": round(1.0 - warm_ms / fresh_ms, 3),
            "fresh_over_warm": round(fresh_ms / warm_ms, 2),
            "target_reduction": 0.5,
            "target_met": warm_ms <= 0.5 * fresh_ms,
        },
        "cancel_to_new_request_sent_ms": {
            **sent,
            "reconnect_over_hot_spare": round(reconnect_ms / max(spare_ms, 1e-3), 1),
            "hot_spare_under_5ms": spare_ms < 5.0,
            "reconnect_at_least_1_rtt": reconnect_ms >= rtt_ms,
        },
        "steer_to_new_first_token_ms": {
            "hot_spare": _summary(spare_token), "reconnect": _summary(again_token),
            "native_cancel_local": _summary(native_token),
        },
        "rows": [
            row(
                f"TTFT on the warm persistent socket, {rtt_ms:g} ms RTT, median", warm_ms, unit="ms",
                baseline=fresh_ms, target="<= 0.5x a fresh connection", met=warm_ms <= 0.5 * fresh_ms,
                note="baseline: a new connection opened for the turn",
            ),
            row(
                "steer: cancel -> new request sent, hot spare, median", spare_ms, unit="ms", baseline=reconnect_ms,
                target="< 5 ms, reconnect >= 1 RTT", met=spare_ms < 5.0 and reconnect_ms >= rtt_ms,
                note="baseline: reconnecting to cancel",
            ),
        ],
        "setup": setup.finish(reps=reps, one_way_delay_ms=delay_ms),
    }


def main(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="spark_bench upstream")
    parser.add_argument("--reps", type=int, default=20, help="repetitions per measurement")
    parser.add_argument("--delay-ms", type=float, default=25.0, help="one-way added delay")
    parser.add_argument("--no-netem-probe", action="store_true",
                        help="do not try ip netns / tc netem (no system changes at all)")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.delay_ms < 0:
        parser.error("--reps must be >= 1 and --delay-ms >= 0")
    return asyncio.run(run(args.reps, args.delay_ms, probe=not args.no_netem_probe))

