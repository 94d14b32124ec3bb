"""One room served by two Daphne processes on loopback, sharing Redis and PostgreSQL, as
behind a load balancer: a driver on A, viewers spread over A and B, a collaborator on B who
steers and types; then A is killed (SIGKILL) while the driver types, and B takes the room
over with nothing lost that A had acknowledged; a hostile run through the room is contained.

It runs once, in the SQLite pass of ``make test`` (its processes use a PostgreSQL database
of their own), and not again in the services pass (marker ``processes``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import string
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from benchmarks.pairing.stack import Stack, fresh_postgres_database
from tests.conftest import port_open, require
from tests.support.nginx import compose_site_in_front, nginx_binary
from tests.support.peer import Peer, say

pytestmark = pytest.mark.processes

REDIS = "redis://127.0.0.1:6379/4"
VIEWERS = 20
# A hostile program: it tries the network (a server listening on the host's loopback, and
# the outside), then forks without end.
HOSTILE = """import os, socket
for host, port in (("127.0.0.1", {port}), ("1.1.1.1", 53)):
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("network: reached", host, flush=True)
    except OSError as exc:
        print("network: no", host, type(exc).__name__, flush=True)
while True:
    os.fork()
"""
FILES = {"app.py": "def add(a, b):\n    return a + b\n", "util.py": "X = 1\n"}
KEYS = string.ascii_letters + string.digits
WINDOW_S = 0.1  # keystrokes sent this long before the kill that A acknowledged must survive it
BLOCK = '<edit path="util.py">\n<old_text>\nX = 1\n</old_text>\n<new_text>\nX = 2\nY = 3\n</new_text>\n</edit>\n'
_MAKE_PEOPLE = """
from django.contrib.auth import get_user_model
from spark_ide.accounts.services import api_token_create
from spark_ide.pairing.models import Participant
User = get_user_model()
for name, role in (("vic", "viewer"), ("cole", "collaborator")):
    user = User.objects.create_user(name)
    Participant.objects.create(session_id="{session}", user=user, role=role)
    print("TOKEN", name, api_token_create(user=user))
"""


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    require(port_open("127.0.0.1", 5432), "PostgreSQL is not running on 127.0.0.1:5432")
    require(port_open("127.0.0.1", 6379), "Redis is not running on 127.0.0.1:6379")
    database = fresh_postgres_database("spark_two_processes")
    limits = {"SPARK_SANDBOX_WALL_S": "5", "SPARK_SANDBOX_PROCESSES": "16"}  # a bomb is over soon
    async with Stack({}, daphnes=2, database_url=database, redis_url=REDIS, relay=False, worker=limits) as running:
        yield running


@pytest.fixture
def front(stack: Stack, tmp_path: Path) -> Iterator[str | None]:
    """nginx in front of both processes with the compose site (round-robin), when installed:
    the viewers come through it, as behind a real load balancer."""
    if nginx_binary() is None:
        yield None
        return
    ports = [int(url.rsplit(":", 1)[1]) for url in stack.ide_urls]
    with compose_site_in_front(tmp_path, ports) as port:
        yield f"http://127.0.0.1:{port}"


def _sockets(presence: dict[str, Any]) -> int:
    return sum(int(person.get("connections", 1)) for person in presence["participants"])


def _ws(http_url: str, path: str) -> str:
    return http_url.replace("http://", "ws://") + path


def _typed(peer: Peer) -> int:
    """How many of the driver's keystrokes (the line ``#>...`` atop app.py) ``peer`` holds."""
    first = (peer.text("app.py") or "").split("\n", 1)[0]
    return len(first) - 2 if first.startswith("#>") else 0


async def _type_until_killed(driver: Peer, witness: Peer, daphne: int) -> tuple[int, list[float], float]:
    """The driver types into app.py on A, one key a message, and A is killed (SIGKILL) as soon as
    a keystroke sent within ``WINDOW_S`` came back to the witness, a viewer on A: A had stored it
    (it hands out only updates it stored). Returns (how many keystrokes A acknowledged, when each
    was sent, when A was killed)."""
    await driver.type_text("app.py", 0, "#>\n")
    sent: list[float] = []
    deadline = time.monotonic() + 20  # a machine too loaded to answer within the window for long
    while True:
        await driver.type_text("app.py", 2 + len(sent), KEYS[len(sent) % len(KEYS)])
        sent.append(time.monotonic())
        await asyncio.sleep(0.005)
        acked = _typed(witness)
        if len(sent) >= 20 and acked and sent[acked - 1] > time.monotonic() - WINDOW_S * 0.8:
            break
        assert time.monotonic() < deadline, f"A acknowledged {acked} of {len(sent)} keystrokes, none recent"
    acked = _typed(witness)  # the last look before the kill: no await between the two
    os.killpg(daphne, signal.SIGKILL)
    return acked, sent, time.monotonic()


async def test_two_processes_serve_one_room_and_survive_losing_one(stack: Stack, front: str | None) -> None:
    b_port = int(stack.ide_urls[1].rsplit(":", 1)[1])
    workspace_id, ws_url = await stack.session({**FILES, "hostile.py": HOSTILE.format(port=b_port)})
    path = "/" + ws_url.split("/", 3)[3]
    a_url, b_url = (_ws(url, path) for url in stack.ide_urls)
    lb_url = None if front is None else _ws(front, path)
    session_id = path.rstrip("/").rsplit("/", 1)[1]
    made = await stack.manage("shell", "-c", _MAKE_PEOPLE.format(session=session_id))
    people = {line.split()[1]: line.split()[2] for line in made.splitlines() if line.startswith("TOKEN ")}

    driver = Peer("driver", stack.token)
    await driver.open(a_url)  # A opens the room first: it owns it
    viewers = [Peer(f"viewer{i}", people["vic"]) for i in range(VIEWERS)]
    # Through nginx (round-robin) when it is there, else half on each process directly.
    await asyncio.gather(*(v.open(lb_url or (a_url if i % 2 == 0 else b_url)) for i, v in enumerate(viewers)))
    cole = Peer("cole", people["cole"])
    await cole.open(b_url)
    everyone = [driver, cole, *viewers]
    for peer in everyone:
        await peer.until(lambda e: e["type"] == "presence" and _sockets(e) == VIEWERS + 2)

    # The driver prompts; the collaborator on B steers; the driver types meanwhile.
    await driver.send({"type": "prompt", "text": say(" ".join(f"w{i}" for i in range(400)), rate=400)})
    await cole.until(lambda e: e["type"] == "turn.delta")
    await driver.type_text("app.py", 0, "# by the driver\n")
    await cole.send({"type": "steer", "text": say("Steered.\n" + BLOCK)})
    for peer in everyone:
        await peer.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed")
        await peer.until_true(lambda p=peer: p.text("util.py") == "X = 2\nY = 3\n"
                              and (p.text("app.py") or "").startswith("# by the driver\n"))
    reference = driver.sequence()
    assert [s for s, _ in reference] == sorted(s for s, _ in reference)
    for peer in everyone:
        assert peer.sequence() == reference, f"{peer.name} saw another sequence"
        assert peer.joined("turn.delta") == driver.joined("turn.delta"), f"{peer.name} lost or doubled text"
    assert next(e for e in driver.events if e["type"] == "turn.finished")["status"] == "steered"

    # A dies in the middle of a turn. B takes the room over; everyone comes back to B.
    await driver.send({"type": "prompt", "text": say(" ".join(f"long{i}" for i in range(2000)), rate=200)})
    await cole.until(lambda e: e["type"] == "turn.started" and "long0" in e.get("prompt", ""))
    await cole.type_text("util.py", 0, "# typed on B\n")
    await driver.until_true(lambda: (driver.text("util.py") or "").startswith("# typed on B\n"))
    witness = Peer("witness", people["vic"])
    await witness.open(a_url)
    await witness.until_true(lambda: (witness.text("util.py") or "").startswith("# typed on B\n"))
    acked, sent, killed_at = await _type_until_killed(driver, witness, stack.daphne_processes[0].pid)
    in_window = [at for at in sent[:acked] if at >= killed_at - WINDOW_S]
    assert in_window, "no keystroke of the last 100 ms before the kill was acknowledged"
    print(f"A acknowledged {acked} of {len(sent)} keystrokes, {len(in_window)} of them in the last 100 ms")
    await asyncio.sleep(0.1)

    async def back(peer: Peer) -> None:
        while peer.closed_with is None:
            await asyncio.sleep(0.02)
        for _ in range(100):  # a real page retries too: the room may still be changing hands
            try:
                await peer.open(lb_url if peer in viewers and lb_url else b_url)
                return
            except (OSError, ConnectionClosed, AssertionError):
                await asyncio.sleep(0.1)
        raise AssertionError(f"{peer.name} could not reconnect")

    # Those who cannot write come back first, and a fresh page reads the document as B has it:
    # the driver and the collaborator, who hold the keystrokes, would give them back to B
    # (Yjs sync) when they reconnect, which would hide a loss.
    await asyncio.gather(*(back(peer) for peer in [*viewers, witness]))
    probe = Peer("probe", people["vic"])
    await probe.open(b_url)
    typed = "#>" + "".join(KEYS[i % len(KEYS)] for i in range(acked))
    with contextlib.suppress(AssertionError):
        await probe.until_true(lambda: _typed(probe) >= acked, timeout=10)
    assert (probe.text("app.py") or "").startswith(typed), (
        f"B has {_typed(probe)} of the {acked} keystrokes A acknowledged before it died")
    await asyncio.gather(back(driver), back(cole))
    took = time.monotonic() - killed_at
    everyone.append(witness)
    for peer in everyone:
        lost = await peer.until(lambda e: e["type"] == "turn.finished" and e.get("reason") == "owner_lost")
        assert lost["status"] == "failed"
        await peer.until_true(lambda p=peer: (p.text("util.py") or "").startswith("# typed on B\n"))
    print(f"the room came back on B {took:.1f} s after A was killed")  # its figure: spark_bench fanout

    # A hostile run through the room, on B: no network (not even a server on the host's
    # loopback), and the fork bomb ends at its process limit; the room goes on.
    await cole.send({"type": "run", "path": "hostile.py"})
    for peer in everyone:
        ended = await peer.until(lambda e: e["type"] == "run.finished", timeout=30)
        assert (ended["status"], ended["sandboxed"]) == ("failed", True), ended
        assert "at most 16 processes" in ended["message"], ended
    said = "".join(e["text"] for e in cole.events if e["type"] == "run.output" and e["stream"] == "stdout")
    assert "network: no 127.0.0.1" in said and "network: no 1.1.1.1" in said, said
    assert "reached" not in said, said

    # Work goes on on B: a new turn reaches everyone.
    await cole.send({"type": "prompt", "text": say("After the move.\nDone.\n")})
    for peer in everyone:
        await peer.until(lambda e: e["type"] == "turn.finished" and e["status"] == "completed"
                         and e["seq"] >> 32 >= 2)
    stack.ide_url = stack.ide_urls[1]  # the HTTP API of the process that is left
    final = "# typed on B\nX = 2\nY = 3\n"
    assert await stack.file_text(workspace_id, "util.py", final) == final
    app = driver.text("app.py") or ""
    assert app.startswith(typed) and await stack.file_text(workspace_id, "app.py", app) == app  # and stored
    await asyncio.gather(*(peer.close() for peer in [*everyone, probe]))
