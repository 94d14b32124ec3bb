"""What the apps built on this one tell it (DESIGN.md §3: ``workspaces`` imports none of them).

A student's copy in an archived course is read-only and a course's watchdog mode wins over
its copies' (the classroom app knows courses); compacting a document keeps its history for
replay (the replay app keeps it); who else holds a role in a workspace is known to the
pairing app (its sessions' participants), which also tells the pages open on a workspace that
its settings changed (its rooms). Each app hands its part over once at startup, in
its ``AppConfig.ready`` (``use_courses``, ``use_history``, ``use_members``, ``use_rooms``), the way ``live``
is handed its store; a server without that app gets the plain answer: no course, no history
kept, nobody but the owner.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from pycrdt import Doc


class Courses(Protocol):
    def archived(self, workspace_id: uuid.UUID) -> bool:
        """Whether the workspace is a student's copy in an archived course (read-only for everyone)."""

    def guard_mode(self, workspace_id: uuid.UUID) -> str | None:
        """The watchdog mode of the course whose student's copy the workspace is; None: not a copy."""


class Members(Protocol):
    def role(self, workspace_id: uuid.UUID, user_id: int) -> str | None:
        """The role (``live.events.Role``) someone other than the owner holds in the workspace's
        live session; None: none."""


class Rooms(Protocol):
    def settings_changed(self, workspace_id: uuid.UUID, changed: Mapping[str, Any], *, by: str) -> None:
        """``by`` changed the workspace's settings (``changed``: each field with its new value):
        every page open on it is told, on whichever process serves it."""


class History(Protocol):
    """Kept inside the document's own transactions (written with it, or not at all)."""

    def begin(self, workspace_id: uuid.UUID, doc: Doc[Any], *, through: int) -> None:
        """``doc``, holding every update up to ``through``, is where the history starts (unless it started)."""

    def keep(self, workspace_id: uuid.UUID, *, through_id: int, state: bytes) -> None:
        """The updates up to ``through_id`` are about to be compacted into ``state``: keep them."""


class NoCourses:
    def archived(self, workspace_id: uuid.UUID) -> bool:
        return False

    def guard_mode(self, workspace_id: uuid.UUID) -> str | None:
        return None


class NoMembers:
    def role(self, workspace_id: uuid.UUID, user_id: int) -> str | None:
        return None


class NoRooms:
    def settings_changed(self, workspace_id: uuid.UUID, changed: Mapping[str, Any], *, by: str) -> None:
        return None


class NoHistory:
    def begin(self, workspace_id: uuid.UUID, doc: Doc[Any], *, through: int) -> None:
        return None

    def keep(self, workspace_id: uuid.UUID, *, through_id: int, state: bytes) -> None:
        return None


class _Ports:
    courses: Courses = NoCourses()
    history: History = NoHistory()
    members: Members = NoMembers()
    rooms: Rooms = NoRooms()


def use_courses(courses: Courses) -> None:
    _Ports.courses = courses


def use_members(members: Members) -> None:
    _Ports.members = members


def use_rooms(rooms: Rooms) -> None:
    _Ports.rooms = rooms


def use_history(history: History) -> None:
    _Ports.history = history


def courses() -> Courses:
    return _Ports.courses


def history() -> History:
    return _Ports.history


def members() -> Members:
    return _Ports.members


def rooms() -> Rooms:
    return _Ports.rooms
