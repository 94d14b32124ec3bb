"""Who may do what (issue 16), as two generated matrices: every HTTP endpoint of the URL
configuration and every session-socket message type of the registry (``live.messages``),
for seven people: anonymous, another user, a guest (joined through the collaborator link),
a viewer, a collaborator, the owner, and a participant the owner removed.

The expected answers come from the tables below and nowhere else. A URL pattern or a
message type without a row fails the test, so a new endpoint or message needs its rule
written down here before it can ship. Someone else's workspace or session is 404 (its
existence is not revealed), never 403; a guest's 403 (``GuestMiddleware``) is the same
for every id, so it reveals nothing either.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from spark_ide.classroom.services import course_create, course_join, teacher_grant
from spark_ide.live.messages import MESSAGES
from spark_ide.pairing.models import Participant, Role, Turn
from spark_ide.pairing.services import participant_remove, session_create, session_join_as_guest
from spark_ide.workspaces.services import workspace_create

PEOPLE = ("anonymous", "other", "guest", "viewer", "collaborator", "owner", "removed")

# -- HTTP -----------------------------------------------------------------------------------
# Per URL name (or route for unnamed ones): per method, the status each person gets, in the
# order of PEOPLE. 302: sent to sign in (or on, after a form). The object in every URL is the
# owner's (workspace, session, course); "other" owns nothing of it.
HTTP: dict[str, dict[str, str]] = {
    #                                     anonymous other guest viewer collaborator owner removed
    "api-workspaces": {
        "GET": "401 200 403 200 200 200 200",
        "POST": "401 400 403 400 400 400 400",
        "PUT": "405 405 403 405 405 405 405",
        "DELETE": "405 405 403 405 405 405 405",
    },
    "api-workspace": {
        "GET": "401 404 403 404 404 200 404",
        "POST": "405 405 405 405 405 405 405",
        "PUT": "405 405 405 405 405 405 405",
        # PATCH (the auto_test switch; an empty body here: 400 where it may be sent): the
        # workspace's owner and its sessions' collaborators, a guest collaborator included.
        "PATCH": "401 404 400 403 400 400 404",
        "DELETE": "401 404 403 404 404 204 404",
    },
    "api-file": {
        "GET": "401 404 403 404 404 200 404",
        "POST": "405 405 403 405 405 405 405",
        "PUT": "401 404 403 404 404 200 404",
        "DELETE": "401 404 403 404 404 204 404",
    },
    "api-sessions": {
        "GET": "405 405 403 405 405 405 405",
        "POST": "401 404 403 404 404 200 404",
        "PUT": "405 405 403 405 405 405 405",
        "DELETE": "405 405 403 405 405 405 405",
    },
    # The sessions API answers every participant of the session (guests included).
    "api-turns": {
        "GET": "401 404 200 200 200 200 404",
        "POST": "405 405 405 405 405 405 405",
        "PUT": "405 405 405 405 405 405 405",
        "DELETE": "405 405 405 405 405 405 405",
    },
    "^api/": {"GET": "404 404 403 404 404 404 404", "POST": "404 404 403 404 404 404 404"},
    # Prometheus: staff or the bearer token only.
    "metrics": {"GET": "401 403 403 403 403 403 403", "POST": "405 405 403 405 405 405 405"},
    "favicon.ico": {"GET": "301 301 301 301 301 301 301", "POST": "301 301 301 301 301 301 301"},
    "login": {"GET": "200 302 302 302 302 302 302", "POST": "200 302 302 302 302 302 302"},
    "logout": {"GET": "405 405 405 405 405 405 405", "POST": "302 302 302 302 302 302 302"},
    "tokens": {"GET": "302 200 403 200 200 200 200", "POST": "302 200 403 200 200 200 200"},
    # One's own provider keys (an empty POST: the page says what is missing); guests have none.
    "keys": {"GET": "302 200 403 200 200 200 200", "POST": "302 200 403 200 200 200 200"},
    # A person's own use only (issue 34): nothing in the URL names anyone else.
    "usage": {"GET": "302 200 403 200 200 200 200", "POST": "302 405 403 405 405 405 405"},
    "workspace-list": {"GET": "302 200 302 200 200 200 200", "POST": "302 405 302 405 405 405 405"},
    "workspace-new": {"GET": "302 405 403 405 405 405 405", "POST": "302 302 403 302 302 302 302"},
    "workspace-import": {"GET": "302 405 403 405 405 405 405", "POST": "302 302 403 302 302 302 302"},
    # Open to guests (a guest student owns their copy of a course); anyone else's: not found.
    "workspace-export": {"GET": "302 404 404 404 404 200 404", "POST": "302 405 405 405 405 405 405"},
    "workspace-public-toggle": {"GET": "302 405 403 405 405 405 405", "POST": "302 404 403 404 404 400 404"},
    "workspace-guard-setting": {"GET": "302 404 404 404 404 200 404", "POST": "302 404 404 404 404 400 404"},
    "workspace-public-css": {"GET": "200 200 200 200 200 200 200", "POST": "405 405 405 405 405 405 405"},
    "workspace-public": {"GET": "404 404 404 404 404 404 404", "POST": "405 405 405 405 405 405 405"},
    "workspace-public-file": {"GET": "404 404 404 404 404 404 404", "POST": "405 405 405 405 405 405 405"},
    "workspace": {"GET": "302 404 403 404 404 200 404", "POST": "302 405 403 405 405 405 405"},
    "guest-home": {"GET": "302 302 302 302 302 302 302", "POST": "302 405 405 405 405 405 405"},
    # A guest without a role would see the no-access page (404, as for no such session); ours holds one.
    "session": {"GET": "302 404 200 200 200 200 404", "POST": "302 405 405 405 405 405 405"},
    "session-history": {"GET": "302 404 200 200 200 200 404", "POST": "302 405 405 405 405 405 405"},
    "session-turn-diff": {"GET": "302 404 200 200 200 200 404", "POST": "302 405 405 405 405 405 405"},
    # A viewer reads the tree; changing files (POST) is for owner and collaborators.
    "session-tree": {"GET": "302 404 200 200 200 200 404", "POST": "302 404 200 403 200 200 404"},
    "session-members": {"GET": "302 404 404 404 404 200 404", "POST": "302 404 404 404 404 200 404"},
    "session-invites": {"GET": "302 405 405 405 405 405 405", "POST": "302 404 404 404 404 200 404"},
    # An invite link (the collaborator's): a GET changes nothing. Signed in, it asks (200) unless
    # the link gives nothing more (guest and collaborator hold it, the owner more: 302 to the
    # session); the POST joins. A removed participant who kept the link is refused (404 with
    # the reason): the links of the moment of the removal no longer let them in. Not signed in,
    # a name makes a guest (POST).
    "session-join": {"GET": "200 200 302 200 302 302 404", "POST": "400 302 302 302 302 302 404"},
    "session-replay": {"GET": "302 404 200 200 200 200 404", "POST": "302 405 405 405 405 405 405"},
    "session-replay-data": {"GET": "404 404 200 200 200 200 404", "POST": "405 405 405 405 405 405 405"},
    "teacher-signup": {"GET": "404 404 403 404 404 404 404", "POST": "404 404 403 404 404 404 404"},
    # The classroom's home answers everyone signed in (the courses they take, a code to join
    # one; a teacher's own courses too). The rest is for teachers (the owner here): 403 for
    # everyone else, whatever the id.
    "course-list": {"GET": "302 200 200 200 200 200 200", "POST": "302 405 405 405 405 405 405"},
    "course-new": {"GET": "302 403 403 403 403 405 403", "POST": "302 403 403 403 403 400 403"},
    "course": {"GET": "302 403 403 403 403 200 403", "POST": "302 403 403 403 403 405 403"},
    "course-policy": {"GET": "302 403 403 403 403 405 403", "POST": "302 403 403 403 403 400 403"},
    "course-push": {"GET": "302 403 403 403 403 405 403", "POST": "302 403 403 403 403 400 403"},
    "course-archive": {"GET": "302 403 403 403 403 405 403", "POST": "302 403 403 403 403 302 403"},
    "course-delete": {"GET": "302 403 403 403 403 200 403", "POST": "302 403 403 403 403 400 403"},
    "course-students": {"GET": "302 403 403 403 403 200 403", "POST": "302 403 403 403 403 405 403"},
    "course-watch": {"GET": "302 403 403 403 403 405 403", "POST": "302 403 403 403 403 302 403"},
    "course-prompts": {"GET": "302 403 403 403 403 200 403", "POST": "302 403 403 403 403 405 403"},
    "join": {"GET": "200 200 200 200 200 200 200", "POST": "200 200 200 200 200 200 200"},
    # A course link: a GET asks (200), only the POST enrols; the teacher cannot join their own.
    "course-join": {"GET": "200 200 200 200 200 403 200", "POST": "400 302 302 302 302 403 302"},
}
QUERIES = {"session-turn-diff": "?path=app.py"}  # the file whose diff is asked for


@dataclass
class World:
    owner: Any
    workspace: Any
    session: Any
    turn: Any
    course: Any
    enrollment: Any
    people: dict[str, Any]

    def kwargs(self) -> dict[str, str]:
        return {
            "workspace_id": str(self.workspace.id), "session_id": str(self.session.id), "path": "app.py",
            "turn_id": self.turn.id, "key": self.session.collaborator_key, "course_id": str(self.course.id),
            "enrollment_id": str(self.enrollment.id), "what": "students", "code": self.course.code,
        }


def build_world(django_user_model: Any) -> World:
    make = django_user_model.objects.create_user
    owner = make(username="ada")
    teacher_grant(owner)
    workspace = workspace_create(owner=owner, name="live", files={"app.py": "print(1)\n"})
    session = session_create(workspace=workspace, by=owner)
    turn = Turn.objects.create(id="t" * 32, session=session, prompt="p", diff={"app.py": "-a\n+b\n"})
    template = workspace_create(owner=owner, name="course", files={"task.py": "x = 1\n"})
    course = course_create(teacher=owner, name="Course", template=template)
    enrollment, _ = course_join(course=course, user=make(username="stu"))
    people: dict[str, Any] = {"anonymous": None, "owner": owner, "other": make(username="eve")}
    people["guest"] = session_join_as_guest(session=session, key=session.collaborator_key, name="Gus")
    for name, role in (("viewer", Role.VIEWER), ("collaborator", Role.COLLABORATOR), ("removed", Role.COLLABORATOR)):
        people[name] = make(username=name)
        Participant.objects.create(session=session, user=people[name], role=role)
    participant_remove(session=session, user_id=people["removed"].pk)
    return World(owner, workspace, session, turn, course, enrollment, people)


def url_patterns() -> Iterator[tuple[str, URLPattern]]:
    """Every pattern of the URL configuration, with its route from the root."""

    def walk(patterns: list[Any], prefix: str) -> Iterator[tuple[str, URLPattern]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), pattern

    yield from walk(get_resolver().url_patterns, "")


def url_for(route: str, pattern: URLPattern, world: World) -> str:
    if pattern.name is None:
        return "/" + route.lstrip("^").replace("$", "") + ("unknown" if route.startswith("^api/") else "")
    wanted = pattern.pattern.converters if hasattr(pattern.pattern, "converters") else {}
    url = reverse(pattern.name, kwargs={name: value for name, value in world.kwargs().items() if name in wanted})
    return url + QUERIES.get(pattern.name, "")


def ask(client: Client, method: str, url: str, user: Any) -> int:
    """One request whose changes are undone after (a DELETE must not spoil the next row); a
    sign-out is undone too."""
    cookie = client.cookies.get("sessionid")
    with transaction.atomic():
        if method == "PUT":
            response = client.generic(method, url, "x = 2\n", content_type="text/plain")
        else:
            response = getattr(client, method.lower())(url)
        transaction.set_rollback(True)
    if user is not None and client.cookies.get("sessionid") != cookie:
        client.force_login(user)
    return int(response.status_code)


@pytest.mark.django_db
@pytest.mark.parametrize("person", PEOPLE)
def test_every_http_endpoint_answers_each_person_as_the_table_says(person: str, django_user_model: Any) -> None:
    world = build_world(django_user_model)
    client = Client()
    if world.people[person] is not None:
        client.force_login(world.people[person])
    column = PEOPLE.index(person)
    wrong, missing = [], []
    for route, pattern in url_patterns():
        key = pattern.name or route
        if key not in HTTP:
            missing.append(key)
            continue
        url = url_for(route, pattern, world)
        for method, statuses in HTTP[key].items():
            expected = int(statuses.split()[column])
            got = ask(client, method, url, world.people[person])
            if got != expected:
                wrong.append(f"{method} {url} ({key}): {got}, expected {expected}")
    assert not missing, f"URL patterns without a rule in HTTP: {missing}"
    assert not wrong, "\n".join(wrong)


# -- the session socket ---------------------------------------------------------------------
# Per message type (live.messages.MESSAGES): what each person's socket gets, in the order of
# PEOPLE. "refused": the upgrade itself is refused (no role in the session); "no": error
# forbidden; "yes": the role may send it (the probe then fails only on its fields, or runs).
SOCKET: dict[str, str] = {
    "prompt": "refused refused yes no yes yes refused",
    "steer": "refused refused yes no yes yes refused",
    "context.preview": "refused refused yes no yes yes refused",
    "symbols": "refused refused yes no yes yes refused",
    "stop": "refused refused yes no yes yes refused",
    "edit_steer.commit": "refused refused yes no yes yes refused",
    "edit_steer.cancel": "refused refused yes no yes yes refused",
    "edit_steer.switch": "refused refused yes no yes yes refused",
    "queue.edit": "refused refused yes no yes yes refused",
    "queue.delete": "refused refused yes no yes yes refused",
    "queue.move": "refused refused yes no yes yes refused",
    "queue.steer": "refused refused yes no yes yes refused",
    "queue.merge": "refused refused yes no yes yes refused",
    "revert": "refused refused yes no yes yes refused",
    "restore": "refused refused yes no yes yes refused",
    "hunk.keep": "refused refused yes no yes yes refused",
    "hunk.undo": "refused refused yes no yes yes refused",
    "checkpoint.create": "refused refused yes no yes yes refused",
    "checkpoint.restore": "refused refused yes no yes yes refused",
    "run": "refused refused yes no yes yes refused",
    "run.input": "refused refused yes no yes yes refused",
    "run.stop": "refused refused yes no yes yes refused",
    "resume": "refused refused yes yes yes yes refused",
    "ping": "refused refused yes yes yes yes refused",
    "document.adopted": "refused refused yes yes yes yes refused",
}


async def answers_to(comm: WebsocketCommunicator, frame: dict[str, Any], tag: int) -> list[dict[str, Any]]:
    """The text events the socket sends in answer to ``frame``, up to the pong of a ping sent
    after it (answers come in order). Paced: the probes (two messages each) stay within the
    socket's rate of text messages (20 a second past a burst of 40)."""
    await asyncio.sleep(0.015)
    await comm.send_to(text_data=json.dumps(frame))
    await comm.send_to(text_data=json.dumps({"type": "ping", "id": f"probe-{tag}"}))
    events: list[dict[str, Any]] = []
    while True:
        output = await comm.receive_output(timeout=5)
        assert output["type"] != "websocket.close", f"closed: {output}"
        if output.get("text") is None:
            continue
        event = json.loads(output["text"])
        if event["type"] == "pong" and event["id"] == f"probe-{tag}":
            return events
        events.append(event)


@pytest.mark.django_db(transaction=True)
async def test_every_socket_message_answers_each_person_as_the_table_says(
    django_user_model: Any, rooms: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each type is probed as ``{"type": T}``: the role is checked before any field, so a
    refusal is ``forbidden`` and anything else (``missing_field``, a pong, silence) means the
    role may send it, and nothing runs on the way."""
    from spark_ide.asgi import application
    from spark_ide.pairing.consumer import SessionConsumer

    # Two frames a type (the probe, a ping) go past a socket's burst: the rate is not tested here.
    monkeypatch.setattr(SessionConsumer, "text_rate", (1000.0, 1000.0))

    world = await database_sync_to_async(build_world)(django_user_model)
    assert set(SOCKET) == set(MESSAGES), f"message types without a rule in SOCKET: {set(MESSAGES) - set(SOCKET)}"
    wrong = []
    for column, person in enumerate(PEOPLE):
        user = world.people[person]
        headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
        if user is not None:  # the browser's way in (guests have no API tokens)
            browser = Client()
            await database_sync_to_async(browser.force_login)(user)
            headers.append((b"cookie", f"sessionid={browser.cookies['sessionid'].value}".encode()))
        comm = WebsocketCommunicator(application, f"/ws/sessions/{world.session.id}/", headers=headers)
        connected, _ = await comm.connect(timeout=10)
        for tag, kind in enumerate(sorted(MESSAGES)):
            expected = SOCKET[kind].split()[column]
            if not connected:
                got = "refused"
            else:
                answers = await answers_to(comm, {"type": kind}, tag)
                got = "no" if any(e["type"] == "error" and e["code"] == "forbidden" for e in answers) else "yes"
            if got != expected:
                wrong.append(f"{person} {kind}: {got}, expected {expected}")
        if connected:
            await comm.disconnect()
    assert not wrong, "\n".join(wrong)
