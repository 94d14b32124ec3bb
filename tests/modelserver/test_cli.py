from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from spark_ide.modelserver.cli import UsageError, build_parser, config_from, engine_from, main
from spark_ide.modelserver.engines.scripted import ScriptedEngine

from .protocol_client import WAIT_S, Client, text_of


def test_it_builds_the_server_config_from_flags() -> None:
    args = build_parser().parse_args(
        [
            "--host",
            "0.0.0.0",
            "--port",
            "9001",
            "--api-key",
            "k",
            "--lifetime",
            "60",
            "--max-frame-bytes",
            "2048",
            "--no-cancel-extension",
            "--steer-extension",
            "--model-name",
            "smollm2",
            "--model-name",
            "local",
        ]
    )
    config = config_from(args)
    assert (config.host, config.port, config.api_key) == ("0.0.0.0", 9001, "k")
    assert (config.lifetime_s, config.max_frame_bytes) == (60.0, 2048)
    assert (config.cancel_extension, config.steer_extension) == (False, True)
    assert config.accepted_models == ("smollm2", "local")


def test_it_reads_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_MODELSERVER_KEY", "from-env")
    assert config_from(build_parser().parse_args([])).api_key == "from-env"


def test_the_llama_engine_is_the_default() -> None:
    assert build_parser().parse_args([]).engine == "llama"


def test_it_loads_a_script_file_for_the_scripted_engine(tmp_path: Path) -> None:
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps({"hi": "Hello."}))
    args = build_parser().parse_args(
        ["--engine", "scripted", "--script-file", str(path), "--tokens-per-s", "5000"]
    )
    engine = engine_from(args)
    assert isinstance(engine, ScriptedEngine)
    assert (engine.scripts, engine.tokens_per_s) == ({"hi": "Hello."}, 5000.0)


def test_a_script_file_may_hold_rounds_with_tool_calls(tmp_path: Path) -> None:
    rounds = [[{"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch"}], "Done."]
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps({"fix": rounds}))
    engine = engine_from(build_parser().parse_args(["--engine", "scripted", "--script-file", str(path)]))
    assert isinstance(engine, ScriptedEngine) and engine.scripts == {"fix": rounds}
    path.write_text(json.dumps({"fix": [[{"type": "custom_tool_call", "name": "apply_patch"}]]}))
    with pytest.raises(UsageError, match="script 'fix', round 1, step 1: input must be a string"):
        engine_from(build_parser().parse_args(["--engine", "scripted", "--script-file", str(path)]))


@pytest.mark.parametrize(
    "argv",
    [
        ["--engine", "scripted", "--port", "70000"],
        ["--engine", "scripted", "--lifetime", "0"],
        ["--engine", "scripted", "--script-file", "/nonexistent/scripts.json"],
        ["--engine", "scripted", "--tokens-per-s", "0"],
        ["--model-path", "/nonexistent/model.gguf"],
    ],
)
def test_it_exits_with_status_2_on_bad_flags(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("modelserver: ")


async def test_python_m_serves_until_terminated() -> None:
    from websockets.asyncio.client import connect

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "spark_ide.modelserver",
        "--engine",
        "scripted",
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), WAIT_S)).decode()
        assert line.startswith("listening on ws://127.0.0.1:")
        async with connect(line.split()[-1], open_timeout=WAIT_S) as socket:
            events = await Client(socket).run("[say]from the CLI[/say]")
        assert text_of(events) == "from the CLI"
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), WAIT_S) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
