"""The room's runner (``pairing.runs.CeleryRunner``) carries a run's arguments to the sandbox
(eager Celery, the embedded default): the run tool's RunCommand runs as it was read."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from spark_ide.live.events import RunFinished, RunOutput
from spark_ide.live.run_command import parse_run_command
from spark_ide.live.store import RunMessage
from spark_ide.pairing.runs import CeleryRunner

pytestmark = pytest.mark.services  # the channel layer: Redis in the services pass

FILES = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\n"
                          "def test_sub():\n    assert add(1, -1) == 1\n",
}


@pytest.fixture(autouse=True)
def eager(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True


async def run_through(runner: CeleryRunner, text: str) -> tuple[str, RunFinished]:
    command = parse_run_command(text, files=FILES)
    messages: list[RunMessage] = []
    done = asyncio.Event()

    def on_message(message: RunMessage) -> None:
        messages.append(message)
        if isinstance(message, RunFinished):
            done.set()

    await runner.start(uuid.uuid4().hex, FILES, path=command.path, tests=command.tests, args=command.args,
                       on_message=on_message)
    await asyncio.wait_for(done.wait(), 60)
    output = "".join(m.text for m in messages if isinstance(m, RunOutput))
    end = messages[-1]
    assert isinstance(end, RunFinished)
    return output, end


async def test_a_model_command_runs_with_its_words() -> None:
    runner = CeleryRunner()
    output, end = await run_through(runner, "pytest -q -k add tests/test_calc.py")
    assert end.status == "ok", output
    assert "1 passed, 1 deselected" in output
    output, end = await run_through(runner, "pytest -x tests/test_calc.py::test_sub")
    assert (end.status, end.exit_code) == ("failed", 1) and "1 failed" in output
