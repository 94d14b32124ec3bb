"""What the classroom app, built on this one, tells it (DESIGN.md §3: ``pairing`` imports no
app above it): a course's AI rules for the room, and who is who in a student's copy for the
session's pages. The classroom app hands it over once at startup (``use_classroom`` in its
``AppConfig.ready``); without it, no workspace is a course's copy and the AI is open.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class CourseCopy:
    """A workspace that is a student's copy of a course, as the session's pages show it."""

    course: str  # the course's name
    archived: bool  # then the copy is read-only for everyone
    student_id: int
    student_name: str  # the name the student goes by in the course
    teacher_id: int
    notice: str  # what the page says where the student types: the rules, who reads the prompts


class Classroom(Protocol):
    def ai_policy(self, workspace_id: uuid.UUID) -> Mapping[str, object] | None:
        """The AI rules of the course whose copy the workspace is, for ``live.policy.AiPolicy.from_mapping``;
        None: not a copy (everything allowed)."""

    def copy_of(self, workspace_id: uuid.UUID) -> CourseCopy | None:
        """The workspace as a student's copy of a course; None for any other."""


class NoClassroom:
    def ai_policy(self, workspace_id: uuid.UUID) -> Mapping[str, object] | None:
        return None

    def copy_of(self, workspace_id: uuid.UUID) -> CourseCopy | None:
        return None


class _Ports:
    classroom: Classroom = NoClassroom()


def use_classroom(classroom: Classroom) -> None:
    _Ports.classroom = classroom


def classroom() -> Classroom:
    return _Ports.classroom
