"""``manage.py spark_models`` (issue 34): one line per model of the catalogue, each checked for
real against a model server (reached, its key accepted: a refused key, an unset key variable
and a server that is not there each fail with a line saying so); exit status 1 when one fails."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from spark_ide.modelserver.config import ServerConfig
from tests.support.catalogue import entry, use_catalogue
from tests.support.recording_engine import RecordingEngine, RecordingServer

KEY = "sk-test-the-right-key"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[RecordingServer, RecordingServer]]:
    async with (
        RecordingServer(RecordingEngine(), ServerConfig(port=0, model="fast-id")) as local,
        RecordingServer(RecordingEngine(), ServerConfig(port=0, api_key=KEY, model="gpt-id")) as hosted,
    ):
        yield local, hosted


def openai(name: str, port: int, key_env: str) -> str:
    return (f'[[models]]\nname = "{name}"\nprovider = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            f'model = "gpt-id"\nkey_env = "{key_env}"\n\n')


async def spark_models() -> tuple[str, str]:
    """Its output, and its error (empty: exit status 0)."""
    out = io.StringIO()
    try:
        await asyncio.to_thread(call_command, "spark_models", stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), ""


async def test_each_model_gets_a_line_and_a_failure_makes_the_exit_status(
    servers: tuple[RecordingServer, RecordingServer], settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    local, hosted = servers
    monkeypatch.setenv("GOOD_KEY", KEY)
    monkeypatch.setenv("WRONG_KEY", "sk-test-not-it")
    monkeypatch.delenv("UNSET_KEY", raising=False)
    path = use_catalogue(settings, tmp_path, entry("fast", port=local.port) + openai("gpt", hosted.port, "GOOD_KEY"))
    out, error = await spark_models()
    assert error == ""
    assert out.splitlines() == [
        f"models from {path}; the default is fast",
        f"ok    fast  (local fast-id at http://127.0.0.1:{local.port}/v1): reached",
        f"ok    gpt  (openai gpt-id at http://127.0.0.1:{hosted.port}/v1): reached, the key in GOOD_KEY accepted",
    ]

    gone = local.port
    await local.stop()
    use_catalogue(settings, tmp_path, entry("fast", port=gone) + openai("gpt", hosted.port, "GOOD_KEY")
                  + openai("wrong", hosted.port, "WRONG_KEY") + openai("unset", hosted.port, "UNSET_KEY"))
    out, error = await spark_models()
    lines = {line.split()[1]: line for line in out.splitlines()[1:]}
    assert lines["gpt"].startswith("ok    gpt")
    assert lines["fast"].startswith("FAIL  fast") and "provider_unavailable" in lines["fast"]
    assert lines["wrong"].startswith("FAIL  wrong") and lines["wrong"].endswith("(the key in WRONG_KEY was refused)")
    assert "authentication_failed" in lines["wrong"] and "sk-test-not-it" not in out
    assert lines["unset"].endswith("'unset' needs an API key and the environment variable UNSET_KEY holds none")
    assert error == "3 of 4 models failed their check"
