"""A course's AI policy enforced in the room (issue 14), through the session socket with the
scripted model server: the store's ``ai_policy`` is set per test."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest
from channels.db import database_sync_to_async

from spark_ide.accounts.services import api_token_create
from spark_ide.live import policy_gate, prompting, turn_maker
from spark_ide.live.context import Packing
from spark_ide.live.policy import AiMode, AiPolicy
from spark_ide.live.prompting import EXPLAIN_ONLY, PromptStyle, TurnInput
from spark_ide.modelserver.config import ServerConfig
from spark_ide.modelserver.engine import CancelToken, Job, Output, Piece, Tally
from spark_ide.modelserver.server import ModelServer
from spark_ide.pairing.adapter import ROOMS, DatabaseRoomStore
from spark_ide.upstream import TurnRequest
from tests.pairing.conftest import FILES, Live, connect, point_the_ide_at, say
from tests.support.recording_engine import RecordingEngine

pytestmark = [pytest.mark.django_db(transaction=True)]

EDIT = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\n</new_text>\n</edit>\n'
LONG = "".join(f"word{i} " for i in range(600)) + "\n"


class JobEngine(RecordingEngine):
    """The recording engine that also keeps each generation's job (effort, instructions)."""

    def __init__(self) -> None:
        super().__init__(tokens_per_s=2000.0, ttft_s=0.005)
        self.jobs: list[Job] = []

    async def generate(self, job: Job, tally: Tally, cancel: CancelToken) -> AsyncGenerator[Output, None]:
        self.jobs.append(job)
        async for piece in super().generate(job, tally, cancel):
            yield piece


class Course:
    """What the store answers for the workspace's policy; tests change it as a teacher would.
    ``requests``: every request the Pilot built (the local provider does not send the effort
    on, so the request is where the cap shows)."""

    def __init__(self) -> None:
        self.policy = AiPolicy.OPEN
        self.reads = 0
        self.requests: list[TurnRequest] = []


@pytest.fixture
async def engine(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[JobEngine]:
    engine = JobEngine()
    async with ModelServer(engine, ServerConfig(port=0)) as server:
        point_the_ide_at(server, monkeypatch)
        yield engine


@pytest.fixture
def course(monkeypatch: pytest.MonkeyPatch) -> Course:
    course = Course()

    async def ai_policy(self: DatabaseRoomStore) -> AiPolicy:
        course.reads += 1
        return course.policy

    def build_request(turn: TurnInput, style: PromptStyle) -> TurnRequest:
        request = prompting.build_request(turn, style)
        course.requests.append(request)
        return request

    def request_showing(turn: TurnInput, style: PromptStyle) -> tuple[TurnRequest, Packing]:
        request, shown = prompting.request_showing(turn, style)
        course.requests.append(request)
        return request, shown

    monkeypatch.setattr(DatabaseRoomStore, "ai_policy", ai_policy)
    monkeypatch.setattr(turn_maker, "build_request", build_request)  # a small model's next round
    monkeypatch.setattr(turn_maker, "request_showing", request_showing)  # a turn's request
    monkeypatch.setattr(policy_gate, "POLICY_FRESH_S", 0.0)  # every command reads it again
    return course


async def test_off_refuses_the_prompt_and_starts_no_turn(
    live: Live, engine: JobEngine, course: Course, rooms: None
) -> None:
    course.policy = AiPolicy(mode=AiMode.OFF)
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(EDIT)})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["code"] == "ai_disabled"
    assert error["message"] == "the AI is turned off for this course"
    policy = await client.until(lambda e: e["type"] == "policy")
    assert policy["mode"] == "off" and policy["label"] == "AI: off"
    await client.send({"type": "steer", "text": say(EDIT)})  # a steer with nothing running starts a turn: refused too
    await client.until(lambda e: e["type"] == "error" and e is not error)
    await client.pump(0.3)
    assert not client.of("turn.started")
    assert [e["code"] for e in client.of("error")] == ["ai_disabled", "ai_disabled"]
    assert engine.jobs == []
    assert client.text("util.py") == FILES["util.py"]
    await client.close()


async def test_explain_only_shows_the_edit_block_and_applies_nothing(
    live: Live, engine: JobEngine, course: Course, rooms: None
) -> None:
    course.policy = AiPolicy(mode=AiMode.EXPLAIN)
    client = await connect(live)
    answer = "Change X like this:\n" + EDIT + "Then run it.\n"
    await client.send({"type": "prompt", "text": say(answer)})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert (finished["status"], finished["reason"]) == ("completed", "explain_only")
    await client.pump(0.3)
    turn = finished["turn"]
    assert "".join(e["text"] for e in client.of("turn.prose", turn)) == answer  # the block, as text
    assert not client.of("edit.status")
    assert client.text("util.py") == FILES["util.py"]
    room = ROOMS.owned(live.workspace_id)
    assert room is not None and room.texts()["util.py"] == FILES["util.py"]  # the server's document too
    (job,) = engine.jobs
    assert job.messages[0].role == "system" and EXPLAIN_ONLY in job.messages[0].content
    policy = await client.until(lambda e: e["type"] == "policy")
    assert policy["label"] == "AI: explain-only"
    # A plain answer in explain-only mode is just answered.
    await client.send({"type": "prompt", "text": say("X is one.\n")})
    second = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] != turn)
    assert second["reason"] == "no_changes"
    await client.close()


async def test_the_effort_is_capped_and_the_turn_says_so(
    live: Live, engine: JobEngine, course: Course, rooms: None
) -> None:
    course.policy = AiPolicy(max_effort="low")
    client = await connect(live)
    await client.send({"type": "prompt", "text": say("ok\n"), "effort": "high"})
    started = await client.until(lambda e: e["type"] == "turn.started")
    assert started["effort"] == "low"
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    prose = "".join(e["text"] for e in client.of("turn.prose", finished["turn"]))
    assert prose.startswith("(This course caps the AI's effort at low: asked for high, this turn runs at low.)")
    await client.send({"type": "prompt", "text": say("fine\n"), "effort": "low"})  # at the cap: no note
    done = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] != finished["turn"])
    assert "caps" not in "".join(e["text"] for e in client.of("turn.prose", done["turn"]))
    assert [request.effort for request in course.requests] == ["low", "low"]  # what the model is asked
    await client.close()


async def test_an_exhausted_quota_refuses_the_prompt(
    live: Live, engine: JobEngine, course: Course, rooms: None
) -> None:
    course.policy = AiPolicy(token_quota=20_000, tokens_used=20_000)
    client = await connect(live)
    await client.send({"type": "prompt", "text": say("hi\n")})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["code"] == "ai_quota"
    assert error["message"] == "you have used your 20,000 AI tokens for this course"
    policy = await client.until(lambda e: e["type"] == "policy")
    assert policy["tokens_left"] == 0 and policy["token_quota"] == 20_000
    await client.pump(0.2)
    assert not client.of("turn.started") and engine.jobs == []
    # The teacher raises the quota: the next prompt runs, and what it used is told.
    course.policy = AiPolicy(token_quota=30_000, tokens_used=20_000)
    await client.send({"type": "prompt", "text": say("hello there\n")})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert finished["status"] == "completed"
    told = client.events.index(finished)  # the policy told after the turn (one came on joining too)
    await client.until_true(lambda: any(e["type"] == "policy" for e in client.events[told:]))
    after = next(e for e in client.events[told:] if e["type"] == "policy")
    assert after["tokens_left"] == 10_000 - finished["metrics"]["tokens"]
    assert after["label"] == f"AI: on · {after['tokens_left']:,} tokens left"
    await client.close()


async def test_a_turn_passing_the_quota_is_stopped_and_the_next_refused(
    live: Live, engine: JobEngine, course: Course, rooms: None
) -> None:
    course.policy = AiPolicy(token_quota=1_030, tokens_used=1_000)
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(LONG, rate=800)})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.send({"type": "prompt", "text": say("queued\n")})  # waits behind it
    await client.until(lambda e: e["type"] == "turn.queued")
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)
    assert (finished["status"], finished["reason"]) == ("cancelled", "quota")
    assert finished["error"] == "you have used your 1,030 AI tokens for this course"
    assert 30 <= finished["metrics"]["tokens"] <= 31  # stopped at the quota (a delta may carry two tokens' text)
    error = await client.until(lambda e: e["type"] == "error")  # the queued prompt may not start
    assert error["code"] == "ai_quota"
    await client.pump(0.3)
    assert len(client.of("turn.started")) == 1
    shown = "".join(e["text"] for e in client.of("turn.delta", turn))  # the outbox may merge deltas
    assert LONG.startswith(shown) and 0 < len(shown) < len(LONG) // 10
    assert client.of("policy")[-1]["tokens_left"] == 0
    await client.until_true(lambda: engine.generations[0].end == "stopped")  # stopped upstream too
    assert len(engine.jobs) == 1
    await client.close()


async def test_a_delta_carrying_many_tokens_stops_at_the_quota(
    live: Live, engine: JobEngine, course: Course, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider that fell behind hands many tokens over in one delta: what passes the quota
    is not taken, however large the piece."""

    async def whole(self: JobEngine, job: Job, tally: Tally, cancel: CancelToken) -> AsyncGenerator[Output, None]:
        self.jobs.append(job)
        yield Piece(LONG, tokens=600)  # the whole answer in one delta

    monkeypatch.setattr(JobEngine, "generate", whole)
    course.policy = AiPolicy(token_quota=1_030, tokens_used=1_000)
    client = await connect(live)
    await client.send({"type": "prompt", "text": "anything"})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert (finished["status"], finished["reason"]) == ("cancelled", "quota")
    assert finished["metrics"]["tokens"] <= 31
    shown = "".join(e["text"] for e in client.of("turn.delta", finished["turn"]))
    assert LONG.startswith(shown) and len(shown) <= 31 * prompting.CHARS_PER_TOKEN
    await client.close()


async def test_a_quota_lowered_mid_turn_stops_it(
    live: Live, engine: JobEngine, course: Course, rooms: None
) -> None:
    course.policy = AiPolicy(token_quota=1_000_000)
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(LONG, rate=300)})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "turn.delta")
    course.policy = AiPolicy(token_quota=5_000, tokens_used=5_000)  # the teacher lowers it below what was used
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == turn)
    assert (finished["status"], finished["reason"]) == ("cancelled", "quota")
    assert finished["metrics"]["tokens"] < 600
    await client.close()


async def test_a_steer_obeys_the_policy(live: Live, engine: JobEngine, course: Course, rooms: None) -> None:
    client = await connect(live)
    await client.send({"type": "prompt", "text": say(LONG, rate=300)})
    turn = (await client.until(lambda e: e["type"] == "turn.started"))["turn"]
    await client.until(lambda e: e["type"] == "turn.delta")
    course.policy = AiPolicy(mode=AiMode.OFF)  # the teacher turns the AI off mid-turn
    await client.send({"type": "steer", "text": say(EDIT)})
    error = await client.until(lambda e: e["type"] == "error")
    assert error["code"] == "ai_disabled"
    course.policy = AiPolicy(mode=AiMode.EXPLAIN, max_effort="low")  # ...then to explain-only
    await client.send({"type": "steer", "text": say(EDIT)})
    new = await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != turn)
    assert new["steered_from"] == turn and new["effort"] == "low"
    finished = await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] == new["turn"])
    assert finished["reason"] == "explain_only"
    await client.pump(0.3)
    assert client.text("util.py") == FILES["util.py"]
    assert course.requests[-1].effort == "low" and EXPLAIN_ONLY in engine.jobs[-1].messages[0].content
    await client.close()


async def test_the_policy_read_serves_a_moment(
    live: Live, engine: JobEngine, course: Course, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(policy_gate, "POLICY_FRESH_S", 60.0)
    client = await connect(live)
    await client.send({"type": "prompt", "text": say("one\n")})
    await client.until(lambda e: e["type"] == "turn.finished")
    await client.send({"type": "prompt", "text": say("two\n")})
    await client.until(lambda e: e["type"] == "turn.finished" and len(client.of("turn.finished")) == 2)
    assert course.reads == 1  # the second prompt came within the moment the first read serves
    await client.close()


async def test_pages_joining_at_once_share_one_policy_read(
    live: Live, course: Course, rooms: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reconnect storm: every joining page needs the policy, and a stale one is read once for
    all who ask while it is being read (each read waits on the rooms' database thread)."""
    client = await connect(live)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    read_before = course.reads
    course.policy = AiPolicy(mode=AiMode.OFF)
    slow = DatabaseRoomStore.ai_policy

    async def slow_read(self: DatabaseRoomStore) -> AiPolicy:
        await asyncio.sleep(0.2)
        return await slow(self)

    monkeypatch.setattr(DatabaseRoomStore, "ai_policy", slow_read)
    shown = await asyncio.gather(*(room.pilot.current_policy() for _ in range(50)))
    assert course.reads == read_before + 1
    assert all(event is not None and event.mode == "off" for event in shown)
    shown = await asyncio.gather(*(room.pilot.current_policy() for _ in range(3)))  # stale again (0 s): a new read
    assert course.reads == read_before + 2
    await client.close()


async def test_a_workspace_outside_a_course_is_open(live: Live) -> None:
    store = DatabaseRoomStore(uuid.UUID(live.workspace_id))
    assert await store.ai_policy() == AiPolicy.OPEN


async def test_a_joining_page_can_be_told_the_policy(
    live: Live, engine: JobEngine, course: Course, rooms: None
) -> None:
    client = await connect(live)
    room = ROOMS.owned(live.workspace_id)
    assert room is not None
    assert await room.pilot.current_policy() is None  # outside a course: nothing to show
    course.policy = AiPolicy(mode=AiMode.EXPLAIN, token_quota=20_000, tokens_used=7_600)
    policy = await room.pilot.current_policy()
    assert policy is not None and policy.label == "AI: explain-only · 12,400 tokens left"
    assert policy.payload() == {
        "type": "policy", "mode": "explain", "max_effort": None, "token_quota": 20_000, "tokens_left": 12_400,
        "label": "AI: explain-only · 12,400 tokens left", "edit_steer": True,
    }
    await client.close()


async def test_a_students_copy_follows_its_course_rules_for_real(
    live: Live, django_user_model: Any, model_server: object, rooms: None
) -> None:
    """No fake store: the classroom app's course (explain-only, a quota) and a student's copy."""
    from spark_ide.classroom import services as classroom
    from spark_ide.workspaces.models import Workspace

    def enrol() -> Live:
        teacher = live.owner
        classroom.teacher_grant(teacher)
        course = classroom.course_create(
            teacher=teacher, name="Python 1", template=Workspace.objects.get(id=live.workspace_id),
        )
        classroom.policy_set(course=course, ai_mode="explain", max_effort="", token_quota=20_000)
        student = django_user_model.objects.create_user(username="bea", password="pw-bea-123")
        enrollment, _ = classroom.course_join(course=course, user=student)
        session = classroom.student_session(enrollment)
        return Live(str(session.id), str(enrollment.workspace_id), api_token_create(user=student), student)

    student = await database_sync_to_async(enrol)()
    client = await connect(student)
    joined = await client.until(lambda e: e["type"] == "policy")  # told on joining, before any turn
    assert joined["mode"] == "explain" and joined["tokens_left"] == 20_000
    await client.send({"type": "prompt", "text": say("Like this:\n" + EDIT)})
    finished = await client.until(lambda e: e["type"] == "turn.finished")
    assert finished["reason"] == "explain_only"
    told = client.events.index(finished)
    await client.until_true(lambda: any(e["type"] == "policy" for e in client.events[told:]))
    policy = next(e for e in client.events[told:] if e["type"] == "policy")
    assert policy["mode"] == "explain" and policy["tokens_left"] == 20_000 - finished["metrics"]["tokens"]
    await client.pump(0.3)
    assert client.text("util.py") == FILES["util.py"]
    await client.close()
