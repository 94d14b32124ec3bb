"""The model runs code (issue 30), in the Pilot without Django: a ``run`` call is a room run
in the real sandbox (``SandboxRunner``: the sandbox core without Celery), seen by everyone and
recorded, whose report answers the call in the next round; a command outside the grammar is
refused unrun; a steer stops a run; the IDE's test rounds run the tests after the model's
changes and ask it to fix a failure. The model is the fake."""

from __future__ import annotations

import shutil
import textwrap
from types import SimpleNamespace
from typing import cast

import pytest

from spark_ide.guard import GuardMode
from spark_ide.live.events import RunFinished, RunStarted, TurnRound
from spark_ide.live.policy import AiPolicy, AiRuns
from spark_ide.live.prompting import PromptStyle
from spark_ide.live.transport import Connection
from spark_ide.sandbox.core import Limits, Sandbox
from spark_ide.sandbox.core.uids import processes_of
from spark_ide.upstream import Message, ToolCall, ToolOutput, TurnRequest, Usage
from spark_ide.upstream.dialects import RUN, EditStyle
from tests.conftest import require
from tests.support.fake_model import play_tool_call
from tests.support.pilot_rig import PilotRig, pilot_rig, prompt_of
from tests.support.sandbox_runner import SandboxRunner
from tests.support.waits import eventually

TOOLS = PromptStyle(edit_style=EditStyle.APPLY_PATCH)
APP = (
    "import sys\n\n\ndef add(a, b):\n    return a - b\n\n\n"
    "if __name__ == '__main__':\n    print(add(*map(int, sys.argv[1:])))\n"
)
TESTS = (
    "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
FILES = {"app.py": APP, "tests/test_app.py": TESTS}
FIX = (
    "*** Begin Patch\n*** Update File: app.py\n@@ def add(a, b):\n-    return a - b\n+    return a + b\n"
    "*** End Patch\n"
)
SMALL = Limits(cpu_seconds=5, wall_seconds=8, processes=16)


@pytest.fixture
def runner() -> SandboxRunner:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (make sandbox-runtime installs it)")
    return SandboxRunner(Sandbox(limits=SMALL))


def run_call(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id=call_id, name=RUN, kind="custom", input=command)


def patch_call(call_id: str, patch: str) -> ToolCall:
    return ToolCall(call_id=call_id, name="apply_patch", kind="custom", input=patch)


def outputs_of(request: TurnRequest) -> list[ToolOutput]:
    return [item for item in request.input if isinstance(item, ToolOutput)]


def runs_of(rig: PilotRig) -> list[RunStarted]:
    return rig.announced.of(RunStarted)


async def run_ended(rig: PilotRig, run: str) -> RunFinished:
    return await rig.announced.until(RunFinished, lambda event: event.run == run)


async def test_a_run_call_is_a_room_run_whose_report_answers_the_call(runner: SandboxRunner) -> None:
    async with pilot_rig(FILES, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("does add work?")
        stream = await rig.model.next_stream()
        first = rig.model.requests[0]
        assert first.runs and "run tool" in first.instructions  # offered, and told how
        stream.delta("Let me try it.\n")
        play_tool_call(stream, run_call("call_1", "python app.py 2 3"), ["python app", ".py 2 3"])
        stream.complete(Usage(input_tokens=40, output_tokens=12))

        await rig.model.next_stream(timeout=20)
        [started] = runs_of(rig)
        assert (started.model, started.turn, started.by, started.command) == (True, turn, "ada", "python app.py 2 3")
        ended = await run_ended(rig, started.run)
        assert (ended.status, ended.exit_code) == ("ok", 0)
        [answer] = outputs_of(rig.model.requests[1])
        assert answer.call.call_id == "call_1" and answer.status == "completed"
        assert "$ python app.py 2 3" in answer.output and "exit code: 0" in answer.output
        assert answer.output.rstrip().endswith("-1"), answer.output  # what the program printed
        stored = rig.store.runs[started.run]
        assert (stored.record.by_model, stored.record.turn, stored.record.command) == (True, turn, "python app.py 2 3")
        await eventually(lambda: stored.outcome is not None)
        assert stored.outcome is not None and stored.outcome.output.strip() == "-1"
        rig.stop()
        await rig.finished(turn)


async def test_a_command_outside_the_grammar_is_refused_unrun(runner: SandboxRunner) -> None:
    async with pilot_rig(FILES, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("clean up")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "python app.py; rm -rf /"))
        play_tool_call(stream, run_call("call_2", "python missing.py"))
        stream.complete(None)
        await rig.model.next_stream()
        refused, missing = outputs_of(rig.model.requests[1])
        assert refused.status == "failed" and "no shell here: ';'" in refused.output
        assert "pytest [paths...]" in refused.output  # the grammar, for the model to try again
        assert missing.status == "failed" and "no file 'missing.py'" in missing.output
        assert runs_of(rig) == []
        rig.stop()
        await rig.finished(turn)


async def test_hostile_code_run_by_the_model_is_contained_like_a_persons(runner: SandboxRunner) -> None:
    hostile = textwrap.dedent("""\
        import os, socket, time
        try:
            print("secret:", open("/etc/shadow").read()[:20])
        except OSError as e:
            print("no shadow:", type(e).__name__)
        try:
            socket.create_connection(("1.1.1.1", 80), timeout=2)
            print("network: open")
        except OSError as e:
            print("no network:", type(e).__name__)
        kids = 0
        try:
            for _ in range(200):
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                kids += 1
        except OSError:
            print("forks refused after", kids, flush=True)
        """)
    async with pilot_rig({"bomb.py": hostile}, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("run bomb.py")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "python bomb.py"))
        stream.complete(None)
        await rig.model.next_stream(timeout=30)
        [answer] = outputs_of(rig.model.requests[1])
        assert "no shadow:" in answer.output and "secret:" not in answer.output, answer.output
        assert "no network:" in answer.output, answer.output
        assert "forks refused after" in answer.output, answer.output
        [started] = runs_of(rig)
        uid = runner.uids[started.run]
        if uid != 0:  # as root every run has a uid of its own: nothing of it is left
            await eventually(lambda: not processes_of(uid), 10)
        rig.stop()
        await rig.finished(turn)


async def test_a_steer_during_a_run_stops_it_and_the_reprompt_says_so(runner: SandboxRunner) -> None:
    files = {**FILES, "forever.py": "import time\nwhile True:\n    time.sleep(0.1)\n"}
    async with pilot_rig(files, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("run forever.py")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "python forever.py"))
        stream.complete(None)
        started = await rig.announced.until(RunStarted)
        rig.steer("no, just explain it")
        ended = await run_ended(rig, started.run)
        assert ended.status == "killed"
        assert (await rig.finished(turn)).status == "steered"
        await rig.model.next_stream()
        again = prompt_of(rig.model.requests[1])
        assert "python forever.py" in again and "stopped by the user" in again, again
        uid = runner.uids[started.run]
        if uid != 0:
            await eventually(lambda: not processes_of(uid), 10)


async def test_failing_tests_start_round_two_which_fixes_them(runner: SandboxRunner) -> None:
    async with pilot_rig(FILES, style=TOOLS, runner=runner, auto_test=True) as rig:
        turn = rig.prompt("make the tests pass")
        first = await rig.model.next_stream()
        first.delta("Touching app.py.\n")
        touch = "*** Begin Patch\n*** Update File: app.py\n@@\n-import sys\n+import sys  # args\n*** End Patch\n"
        play_tool_call(first, patch_call("call_1", touch))
        first.complete(None)
        second = await rig.model.next_stream()  # round 2: the patch's outcome
        second.delta("Done.")
        second.complete(None)  # no calls: the IDE runs the tests

        third = await rig.model.next_stream(timeout=30)
        [test_round] = [event for event in rig.published.of(TurnRound, turn) if event.verdict]
        assert (test_round.round, test_round.verdict) == (3, "1 failed, 1 passed")
        asked = rig.model.requests[2]
        assert asked.previous_response_id == second.response_id  # chained on the conversation
        [message] = asked.input
        assert isinstance(message, Message) and message.role == "user"
        assert "tests/test_app.py::test_add" in message.text and "assert" in message.text, message.text
        tests_run = [run for run in runs_of(rig) if run.tests]
        assert tests_run and tests_run[0].model and tests_run[0].command == "pytest"

        play_tool_call(third, patch_call("call_2", FIX))
        third.complete(None)
        fourth = await rig.model.next_stream()
        fourth.delta("Fixed add.")
        fourth.complete(None)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("completed", "tests_passed")
        assert len([run for run in runs_of(rig) if run.tests]) == 2


async def test_a_small_model_is_asked_again_in_a_plain_request_until_the_round_limit(runner: SandboxRunner) -> None:
    style = PromptStyle.small_model(context_tokens=4000, max_output_tokens=None)
    style = PromptStyle(**{**style.__dict__, "max_rounds": 2})
    async with pilot_rig(FILES, style=style, runner=runner, auto_test=True) as rig:
        turn = rig.prompt("make the tests pass", path="app.py")
        first = await rig.model.next_stream()
        first.delta("```python\n" + APP.replace("a - b", "a * b") + "```\n")
        first.complete(None)
        second = await rig.model.next_stream(timeout=30)
        asked = rig.model.requests[1]
        assert asked.previous_response_id is None and not asked.runs  # a plain request, afresh
        text = prompt_of(asked)
        assert "return a * b" in text and "test_add" in text and "make the tests pass" in text
        second.delta("```python\n" + APP.replace("a - b", "a / b") + "```\n")
        second.complete(None)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("completed", "tests_failed")
        assert "2 rounds" in finished.error
        assert [event.verdict for event in rig.published.of(TurnRound, turn)] == ["1 failed, 1 passed"]


async def test_no_test_round_when_switched_off_without_tests_or_under_ai_runs_never(runner: SandboxRunner) -> None:
    cases = [
        (False, FILES, AiPolicy.OPEN),
        (True, {"app.py": APP}, AiPolicy.OPEN),
        (True, FILES, AiPolicy(runs=AiRuns.NEVER)),
    ]
    for auto_test, files, policy in cases:
        async with pilot_rig(files, style=TOOLS, runner=runner, policy=policy, auto_test=auto_test) as rig:
            turn = rig.prompt("fix add")
            stream = await rig.model.next_stream()
            assert rig.model.requests[0].runs is (policy.runs is not AiRuns.NEVER)
            play_tool_call(stream, patch_call("call_1", FIX))
            stream.complete(None)
            (await rig.model.next_stream()).complete(None)
            finished = await rig.finished(turn)
            assert finished.reason == "answered", (auto_test, files.keys(), policy)
            assert runs_of(rig) == []


async def test_a_course_that_allows_tests_only_refuses_programs(runner: SandboxRunner) -> None:
    async with pilot_rig(FILES, style=TOOLS, runner=runner, policy=AiPolicy(runs=AiRuns.TESTS)) as rig:
        turn = rig.prompt("try it")
        stream = await rig.model.next_stream()
        assert "run the tests only" in rig.model.requests[0].instructions
        play_tool_call(stream, run_call("call_1", "python app.py 1 2"))
        play_tool_call(stream, run_call("call_2", "pytest -q -k zero"))
        stream.complete(None)
        await rig.model.next_stream(timeout=30)
        program, tests = outputs_of(rig.model.requests[1])
        assert program.status == "failed" and "tests only" in program.output
        assert tests.status == "completed" and "1 passed" in tests.output, tests.output
        assert [run.command for run in runs_of(rig)] == ["pytest -q -k zero"]
        rig.stop()
        await rig.finished(turn)


async def test_a_revert_after_three_rounds_restores_the_files(runner: SandboxRunner) -> None:
    async with pilot_rig(FILES, style=TOOLS, runner=runner, auto_test=True) as rig:
        turn = rig.prompt("fix it")
        first = await rig.model.next_stream()
        play_tool_call(first, patch_call("call_1", FIX.replace("a + b", "a * b")))
        first.complete(None)
        second = await rig.model.next_stream()
        play_tool_call(second, run_call("call_2", "pytest -x"))
        second.complete(None)
        third = await rig.model.next_stream(timeout=30)
        [answer] = outputs_of(rig.model.requests[2])
        assert answer.status == "failed" and "1 failed" in answer.output
        play_tool_call(third, patch_call("call_3", "*** Begin Patch\n*** Update File: app.py\n@@\n-    return a * b\n"
                                                   "+    return a + b\n*** End Patch\n"))
        third.complete(None)
        (await rig.model.next_stream()).complete(None)
        assert (await rig.finished(turn)).reason == "tests_passed"
        assert "return a + b" in rig.texts()["app.py"]
        rig.revert(turn)
        await eventually(lambda: rig.texts() == FILES)


async def test_one_run_at_a_time_between_people_and_the_model(runner: SandboxRunner) -> None:
    slow = {**FILES, "slow.py": "import time\ntime.sleep(1.5)\nprint('slept')\n"}
    person = cast(Connection, SimpleNamespace(username="bob", session="s1", user_id=8))
    async with pilot_rig(slow, style=TOOLS, runner=runner, run_wait_s=0.3) as rig:
        assert rig.runs is not None
        assert rig.runs.run(person, path="slow.py", tests=False) is None  # a person's run goes on
        turn = rig.prompt("run it")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "python app.py 1 1"))
        stream.complete(None)
        await rig.model.next_stream(timeout=10)
        [busy] = outputs_of(rig.model.requests[1])
        assert busy.status == "failed" and busy.output.startswith("Failed: busy."), busy.output
        assert [run.command for run in runs_of(rig)] == ["python slow.py"]  # the model's never started
        rig.stop()
        await rig.finished(turn)
        await rig.announced.until(RunFinished)

        turn = rig.prompt("run slow.py")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_2", "python slow.py"))
        stream.complete(None)
        started = await rig.announced.until(RunStarted, lambda event: event.model)
        refused = rig.runs.run(person, path="app.py", tests=False)
        assert refused is not None and refused.code == "run_busy"
        assert "the model is running `python slow.py`" in refused.message
        await rig.model.next_stream(timeout=10)
        [ran] = outputs_of(rig.model.requests[-1])
        assert ran.status == "completed" and "slept" in ran.output
        assert (await run_ended(rig, started.run)).status == "ok"
        rig.stop()
        await rig.finished(turn)


async def test_a_model_run_with_high_findings_is_refused_with_them(runner: SandboxRunner) -> None:
    risky = {**FILES, "tool.py": "import os\n\n\ndef clean(name):\n    os.system('rm ' + name)\n"}
    async with pilot_rig(risky, style=TOOLS, runner=runner, guard_mode=GuardMode.FLAG) as rig:
        turn = rig.prompt("run the tests")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "pytest"))
        stream.complete(None)
        await rig.model.next_stream(timeout=10)
        [refused] = outputs_of(rig.model.requests[1])
        assert refused.status == "failed" and "was not run" in refused.output
        assert "tool.py:5" in refused.output and "without a shell" in refused.output, refused.output
        assert runs_of(rig) == []
        rig.stop()
        await rig.finished(turn)


async def test_a_model_that_gives_up_on_failing_tests_ends_the_turn_tests_failed(runner: SandboxRunner) -> None:
    async with pilot_rig(FILES, style=TOOLS, runner=runner, auto_test=True) as rig:
        turn = rig.prompt("make the tests pass")
        first = await rig.model.next_stream()
        play_tool_call(first, patch_call("call_1", FIX.replace("a + b", "a * b")))
        first.complete(None)
        (await rig.model.next_stream()).complete(None)  # round 2: no calls, the IDE runs the tests
        third = await rig.model.next_stream(timeout=30)
        third.delta("I cannot see why it fails.")  # round 3 changes nothing
        third.complete(None)
        finished = await rig.finished(turn)
        assert (finished.status, finished.reason) == ("completed", "tests_failed")
        assert "1 failed" in finished.error and "changed nothing" in finished.error
        assert len([run for run in runs_of(rig) if run.tests]) == 1  # nothing changed: not run again


async def test_stop_during_a_run_stops_it_and_ends_the_turn(runner: SandboxRunner) -> None:
    files = {**FILES, "forever.py": "import time\nwhile True:\n    time.sleep(0.1)\n"}
    async with pilot_rig(files, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("run forever.py")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "python forever.py"))
        stream.complete(None)
        started = await rig.announced.until(RunStarted)
        rig.stop()
        assert (await rig.finished(turn)).reason == "stopped"
        assert (await run_ended(rig, started.run)).status == "killed"
        assert len(rig.model.requests) == 1  # nothing more was asked


async def test_a_rewrite_of_the_same_text_is_no_change_to_test_again(runner: SandboxRunner) -> None:
    style = PromptStyle.small_model(context_tokens=4000, max_output_tokens=None)
    wrong = "```python\n" + APP.replace("a - b", "a * b") + "```\n"
    async with pilot_rig(FILES, style=style, runner=runner, auto_test=True) as rig:
        turn = rig.prompt("make the tests pass", path="app.py")
        first = await rig.model.next_stream()
        first.delta(wrong)
        first.complete(None)
        second = await rig.model.next_stream(timeout=30)
        second.delta(wrong)  # the same file again: nothing changed
        second.complete(None)
        finished = await rig.finished(turn)
        assert (finished.reason, len(rig.model.requests)) == ("tests_failed", 2)
        assert "changed nothing" in finished.error
        assert len([run for run in runs_of(rig) if run.tests]) == 1


async def test_a_model_runs_end_is_recorded_even_when_the_room_closes_at_once(runner: SandboxRunner) -> None:
    async with pilot_rig(FILES, style=TOOLS, runner=runner) as rig:
        turn = rig.prompt("try it")
        stream = await rig.model.next_stream()
        play_tool_call(stream, run_call("call_1", "python app.py 1 2"))
        stream.complete(None)
        started = await rig.announced.until(RunStarted)
        await run_ended(rig, started.run)  # its record is written a little later: the room closes first
        rig.stop()
        await rig.finished(turn)
    outcome = rig.store.runs[started.run].outcome
    assert outcome is not None and outcome.status == "ok" and outcome.output.strip() == "-1"
