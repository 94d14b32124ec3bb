"""``/metrics``: real turns through the whole stack move the Prometheus metrics by what the
turns' own ``turn.finished`` figures say; who may read them; and N processes of a host
reported together by one scrape (prometheus_client's multiprocess mode).

The IDE processes of a host share one metrics directory, and other test runs may share it
with this one: the scrapes of the stack tests read a directory that links only this
process's files, so only this test's turns count.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from spark_ide.accounts.services import guest_create
from spark_ide.live.events import ErrorCode
from spark_ide.ops import multiproc
from spark_ide.ops.metrics import STEER_BUCKETS_S, TTFT_BUCKETS_S, exposition
from spark_ide.pairing import adapter
from spark_ide.upstream import UpstreamError
from spark_ide.workspaces import documents
from tests.pairing.conftest import Live, connect, say
from tests.support.fake_model import FakeModel

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "metrics-token-0123456789abcdef"
MODEL = "smollm2"  # the scripted model server's model, which the IDE asks for by default

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def bucket_for(seconds: float, buckets: tuple[float, ...]) -> str:
    """The ``le`` label of the smallest bucket holding ``seconds``."""
    return next((str(float(le)) for le in buckets if seconds <= le), "+Inf")


@pytest.fixture
def own_metrics(settings: Any, tmp_path: Path) -> Iterator[Any]:
    """Scrape ``/metrics`` as Prometheus would (bearer token), counting this process only."""
    shared = Path(django_settings.PROMETHEUS_MULTIPROC_DIR)
    settings.SPARK_METRICS_TOKEN = TOKEN
    scrapes = iter(range(1_000))

    async def scrape() -> Samples:
        own = tmp_path / f"own-{next(scrapes)}"
        own.mkdir()
        for path in shared.glob(f"*_{os.getpid()}.db"):
            (own / path.name).symlink_to(path)
        settings.PROMETHEUS_MULTIPROC_DIR = str(own)
        response = await AsyncClient().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200, response.content
        assert response["Content-Type"].startswith("text/plain; version=")
        return parse(response.content.decode())

    yield scrape


@pytest.mark.django_db(transaction=True)
async def test_a_turn_and_a_steer_move_the_metrics_by_their_own_figures(
    live: Live, model_server: object, rooms: None, own_metrics: Any
) -> None:
    before = await own_metrics()
    client = await connect(live)
    await client.send({"type": "prompt", "text": say("Hello there, this is a short answer.")})
    first = await client.until(lambda e: e["type"] == "turn.finished")
    assert first["metrics"]["model"] == MODEL
    # A slow answer, steered once it streams.
    await client.send({"type": "prompt", "text": say("slow words " * 300, rate=300)})
    old = (await client.until(lambda e: e["type"] == "turn.started" and e["turn"] != first["turn"]))["turn"]
    await client.until(lambda e: e["type"] == "turn.delta" and e["turn"] == old)
    await client.send({"type": "steer", "text": say("Steered answer.")})
    steered = await client.until(lambda e: e["type"] == "turn.steered")
    new = steered["turn"]
    ended = {first["turn"]: first}
    for turn in (old, new):
        ended[turn] = await client.until(lambda e, turn=turn: e["type"] == "turn.finished" and e["turn"] == turn)
    during = await own_metrics()

    outcomes = [(e["status"], e["reason"]) for e in ended.values()]
    assert outcomes == [("completed", "no_changes"), ("steered", "steered"), ("completed", "no_changes")]
    assert moved(before, during, "spark_turns_total", status="completed", reason="no_changes", model=MODEL) == 2
    assert moved(before, during, "spark_turns_total", status="steered", reason="steered", model=MODEL) == 1
    tokens = sum(e["metrics"]["tokens"] for e in ended.values())
    assert tokens > 0
    assert moved(before, during, "spark_tokens_total", model=MODEL, kind="output") == tokens
    ttfts = [e["metrics"]["ttft_ms"] / 1000 for e in ended.values()]
    assert moved(before, during, "spark_ttft_seconds_count", model=MODEL) == 3
    assert moved(before, during, "spark_ttft_seconds_sum", model=MODEL) == pytest.approx(sum(ttfts), abs=1e-6)
    for le in {bucket_for(ttft, TTFT_BUCKETS_S) for ttft in ttfts}:
        assert moved(before, during, "spark_ttft_seconds_bucket", model=MODEL, le=le) == sum(
            ttft <= float(le) for ttft in ttfts)
    steer_s = ended[new]["metrics"]["steer_ms"] / 1000
    assert steer_s == pytest.approx(steered["steer_ms"] / 1000, abs=1e-6)
    assert moved(before, during, "spark_steer_seconds_count", model=MODEL) == 1
    assert moved(before, during, "spark_steer_seconds_sum", model=MODEL) == pytest.approx(steer_s, abs=1e-9)
    le = bucket_for(steer_s, STEER_BUCKETS_S)
    assert moved(before, during, "spark_steer_seconds_bucket", model=MODEL, le=le) == 1
    # One room, one socket in it while connected; the socket gone when it leaves.
    assert value(during, "spark_rooms_active") == 1
    assert value(during, "spark_sockets_active") == 1
    assert moved(before, during, "spark_upstream_reconnects_total", kind="client") == 0
    assert moved(before, during, "spark_persist_failures_total", what="document") == 0
    await client.close()
    left = await until_scraped(own_metrics, lambda samples: value(samples, "spark_sockets_active") == 0)
    assert value(left, "spark_rooms_active") == 1  # the room stays open a while for whoever comes back


async def until_scraped(scrape: Any, done: Any, timeout: float = 5.0) -> Samples:
    """Scrape until ``done(samples)`` holds."""
    deadline = time.monotonic() + timeout
    samples: Samples
    while not done(samples := await scrape()):
        assert time.monotonic() < deadline, "the metrics did not reach the state in time"
        await asyncio.sleep(0.05)
    return samples


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModel]:
    model = FakeModel()
    monkeypatch.setattr(adapter, "connect_entry", model.connect_entry)
    yield model


@pytest.mark.django_db(transaction=True)
async def test_a_new_model_client_after_a_failed_one_counts_as_a_reconnect(
    live: Live, fake_model: FakeModel, rooms: None, own_metrics: Any
) -> None:
    before = await own_metrics()
    fake_model.refuse.append(UpstreamError("provider_unavailable", "connection refused"))
    client = await connect(live)
    await client.send({"type": "prompt", "text": "first"})
    end = await client.until(lambda e: e["type"] == "turn.finished")
    assert (end["status"], end["reason"], end["metrics"]["model"]) == ("failed", "model_unavailable", None)
    await client.send({"type": "prompt", "text": "second"})
    stream = await fake_model.next_stream()
    stream.delta("ok\n")
    stream.complete(None)
    await client.until(lambda e: e["type"] == "turn.finished" and e["turn"] != end["turn"])
    after = await own_metrics()
    assert fake_model.connects == 2
    assert moved(before, after, "spark_upstream_reconnects_total", kind="client") == 1
    # The fake client names no model: its turns count under model="".
    assert moved(before, after, "spark_turns_total", status="failed", reason="model_unavailable", model="") == 1
    assert moved(before, after, "spark_turns_total", status="completed", reason="no_changes", model="") == 1
    await client.close()


@pytest.mark.django_db(transaction=True)
async def test_each_document_write_that_fails_after_its_retries_counts_once(
    live: Live, rooms: None, own_metrics: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    before = await own_metrics()
    client = await connect(live)
    await client.until_true(lambda: client.text("util.py") == "X = 1\n")

    def broken(*args: object, **kwargs: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(documents, "document_append_many", broken)
    await client.type_text("util.py", 0, "# typed\n")
    error = await client.until(lambda e: e["type"] == "error" and e["code"] == ErrorCode.STORAGE_FAILED)
    assert "cannot be saved" in error["message"]

    def failures() -> int:
        return sum(r.getMessage().startswith("could not save a document update") for r in caplog.records)

    logged = failures()  # the writes keep being tried: one may fail again while we scrape
    after = await own_metrics()
    assert 1 <= logged <= moved(before, after, "spark_persist_failures_total", what="document") <= failures()
    monkeypatch.undo()
    await client.close()


# -- who may read them -------------------------------------------------------------------------


@pytest.fixture
def token_set(settings: Any) -> str:
    settings.SPARK_METRICS_TOKEN = TOKEN
    return TOKEN


@pytest.mark.django_db
def test_anonymous_gets_401_with_a_bearer_challenge(client: Any, token_set: str) -> None:
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"spark_" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("header", [f"Bearer {TOKEN}x", "Bearer ", f"Token {TOKEN}", TOKEN, f"Basic {TOKEN}"])
def test_a_wrong_token_gets_401(client: Any, token_set: str, header: str) -> None:
    response = client.get("/metrics", headers={"Authorization": header})
    assert response.status_code == 401
    assert "invalid_token" in response["WWW-Authenticate"]


@pytest.mark.django_db
def test_no_bearer_token_is_accepted_when_none_is_set(client: Any, settings: Any) -> None:
    settings.SPARK_METRICS_TOKEN = ""
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 401


@pytest.mark.django_db
def test_the_right_token_gets_the_metrics(client: Any, token_set: str) -> None:
    response = client.get("/metrics", headers={"Authorization": f"bearer {TOKEN}"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {"spark_rooms_active", "spark_sockets_active"} <= names
    assert client.post("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 405


@pytest.mark.django_db
def test_a_signed_in_user_who_is_not_staff_gets_403(client: Any, user: Any, token_set: str) -> None:
    client.force_login(user)
    response = client.get("/metrics")
    assert response.status_code == 403
    assert b"spark_" not in response.content


@pytest.mark.django_db
def test_a_guest_gets_403(client: Any, token_set: str) -> None:
    client.force_login(guest_create("Eve"))
    response = client.get("/metrics")
    assert response.status_code == 403
    assert b"spark_" not in response.content


@pytest.mark.django_db
def test_staff_get_the_metrics_with_their_session(client: Any, user: Any) -> None:
    user.is_staff = True
    user.save()
    client.force_login(user)
    response = client.get("/metrics")
    assert response.status_code == 200
    assert b"spark_rooms_active" in response.content


@pytest.mark.django_db
def test_a_bearer_header_is_judged_alone_even_for_staff(client: Any, user: Any, token_set: str) -> None:
    user.is_staff = True
    user.save()
    client.force_login(user)
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_a_short_metrics_token_is_refused_at_startup(tmp_path: Path) -> None:
    env = {**os.environ, "SPARK_METRICS_TOKEN": "short", "SPARK_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", "import spark_ide.settings"], cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert done.returncode != 0
    assert "SPARK_METRICS_TOKEN must be at least 16 characters" in done.stderr


# -- N processes, one scrape -------------------------------------------------------------------

WRITER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from spark_ide.ops import multiproc
    first = multiproc.take_part(Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]))
    from spark_ide.ops.metrics import METER
    tokens, sockets = int(sys.argv[1]), int(sys.argv[2])
    if tokens:
        METER.turn_finished("completed", "answered", model="m", tokens=tokens, ttft_ms=20.0, steer_ms=0.5)
        METER.room_opened("w"); METER.sockets("w", sockets)
    print("first" if first else "joined", flush=True)
    sys.stdin.read()  # lives until the test closes its stdin
""")


class Writer:
    """An IDE-like process writing metrics into ``directory`` until told to end."""

    def __init__(self, directory: Path, tokens: int = 0, sockets: int = 0) -> None:
        env = {**os.environ, multiproc.ENV: str(directory)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tokens), str(sockets)], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        self.started = self.process.stdout.readline().strip()

    def end(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=10) == 0

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


def test_two_processes_are_summed_by_one_scrape_and_a_dead_ones_gauges_go(tmp_path: Path) -> None:
    a = Writer(tmp_path, tokens=7, sockets=2)
    b = Writer(tmp_path, tokens=5, sockets=3)
    try:
        assert (a.started, b.started) == ("first", "joined")
        both = parse(exposition(tmp_path).decode())
        assert value(both, "spark_turns_total", status="completed", reason="answered", model="m") == 2
        assert value(both, "spark_tokens_total", model="m", kind="output") == 12
        assert value(both, "spark_ttft_seconds_count", model="m") == 2
        assert value(both, "spark_ttft_seconds_sum", model="m") == pytest.approx(0.04)
        assert value(both, "spark_steer_seconds_bucket", model="m", le="0.0005") == 2
        assert value(both, "spark_rooms_active") == 2
        assert value(both, "spark_sockets_active") == 5
        b.kill()  # no clean exit: its live gauges stay on disk until a scrape finds it gone
        a.end()  # a clean exit takes its live gauges along
        gone = parse(exposition(tmp_path).decode())
        assert value(gone, "spark_rooms_active") == 0
        assert value(gone, "spark_sockets_active") == 0
        assert value(gone, "spark_tokens_total", model="m", kind="output") == 12  # what they counted stays counted
        assert not list(tmp_path.glob("gauge_live*.db"))
    finally:
        for writer in (a, b):
            if writer.process.poll() is None:
                writer.kill()
    # A new run: its first process clears what the last one left; the next one joins it.
    c = Writer(tmp_path)
    d = Writer(tmp_path)
    try:
        assert (c.started, d.started) == ("first", "joined")
        fresh = parse(exposition(tmp_path).decode())
        assert value(fresh, "spark_tokens_total", model="m", kind="output") == 0
        assert value(fresh, "spark_turns_total", status="completed", reason="answered", model="m") == 0
    finally:
        c.end()
        d.end()


def test_the_live_engine_imports_neither_django_nor_prometheus() -> None:
    code = (
        "import sys, spark_ide.live.room, spark_ide.live.rooms, spark_ide.live.meter; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'prometheus_client'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_metrics_directory_is_the_data_dirs_unless_one_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(multiproc.ENV, raising=False)
    assert multiproc.configure(tmp_path) == tmp_path / "prometheus"
    assert os.environ[multiproc.ENV] == str(tmp_path / "prometheus")  # where prometheus_client looks
    monkeypatch.setenv(multiproc.ENV, str(tmp_path / "elsewhere"))
    assert multiproc.configure(tmp_path) == tmp_path / "elsewhere"
