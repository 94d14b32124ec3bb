"""Courses and enrollments: plain typed functions; the views and the live core call these.

What the rest of the project asks of a student's copy (its course's AI rules, the line its
student sees where they type) is answered in ``copies``."""

from __future__ import annotations

import functools
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import Group, Permission, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef

from spark_ide.accounts.services import guest_create, sha256_hex
from spark_ide.api_errors import ApiCode
from spark_ide.editing.paths import beside_path
from spark_ide.guard import GuardMode
from spark_ide.live.events import EFFORTS
from spark_ide.live.policy import AiMode, AiRuns
from spark_ide.pairing.models import Participant, Role, Session, Turn
from spark_ide.pairing.services import session_for_workspace
from spark_ide.workspaces import ports as workspace_ports
from spark_ide.workspaces.catalogue import catalogue
from spark_ide.workspaces.documents import live_texts
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import (
    WorkspaceError,
    checked_path,
    file_text,
    file_write,
    workspace_create,
    workspace_import,
    zip_entries,
)

from .models import Course, Enrollment

TEACHERS_GROUP = "teachers"
TEACHER_PERMISSION = "classroom.add_course"
# Join codes: no 0/O or 1/I/L to misread; 10 characters of 31 is about 2^49.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 10


class ClassroomError(Exception):
    """A refused course operation; ``code`` is stable (pages and tests name it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- teachers ----------------------------------------------------------------------------------


def teachers_group() -> Group:
    """The group whose members may create courses (made with its permission on first use)."""
    group, _ = Group.objects.get_or_create(name=TEACHERS_GROUP)
    app, codename = TEACHER_PERMISSION.split(".")
    permission = Permission.objects.get(content_type__app_label=app, codename=codename)
    group.permissions.add(permission)
    return group


def teacher_grant(user: User) -> None:
    user.groups.add(teachers_group())


def is_teacher(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.has_perm(TEACHER_PERMISSION))


def takes_a_course(user: Any) -> bool:
    """Whether the user is a student: enrolled in at least one course."""
    return bool(getattr(user, "is_authenticated", False) and Enrollment.objects.filter(student=user).exists())


# -- courses ---------------------------------------------------------------------------------


def _new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def code_clean(raw: str) -> str:
    """A join code as typed: spaces and dashes dropped, upper case."""
    return "".join(raw.split()).replace("-", "").upper()[:32]


def _name_clean(raw: str) -> str:
    name = " ".join(raw.split())
    if not name or len(name) > 200:
        raise ClassroomError("bad_name", "A course name is 1 to 200 characters.")
    return name


def course_create(*, teacher: User, name: str, template: Workspace) -> Course:
    """A new course on one of the teacher's workspaces, with a fresh join code."""
    if not is_teacher(teacher):
        raise ClassroomError("not_teacher", "Only teachers create courses.")
    if template.owner_id != teacher.pk:
        raise ClassroomError("bad_template", "The template must be one of your workspaces.")
    clean = _name_clean(name)
    for _ in range(5):  # a clash of random codes is rare; five in a row is something else
        code = _new_code()
        if Course.objects.filter(code=code).exists():
            continue
        try:
            with transaction.atomic():
                return Course.objects.create(name=clean, teacher=teacher, code=code, template=template)
        except IntegrityError:
            continue
    raise ClassroomError("no_code", "Could not pick a free join code: try again.")


def course_create_from_zip(*, teacher: User, name: str, data: bytes) -> tuple[Course, list[tuple[str, str]]]:
    """A course whose template is imported from a zip archive; returns it and the files the
    import skipped (path, reason)."""
    clean = _name_clean(name)
    if not is_teacher(teacher):
        raise ClassroomError("not_teacher", "Only teachers create courses.")
    try:
        with transaction.atomic():
            report = workspace_import(owner=teacher, name=f"{clean} (template)", entries=zip_entries(data))
            course = course_create(teacher=teacher, name=clean, template=report.workspace)
    except WorkspaceError as exc:
        raise ClassroomError(exc.code, exc.message) from None
    return course, report.skipped


def course_for_teacher(*, teacher: User, course_id: int | str) -> Course:
    """The teacher's course; anyone else's is missing, not forbidden."""
    try:
        return Course.objects.select_related("template").get(pk=int(course_id), teacher=teacher)
    except (ValueError, Course.DoesNotExist):
        raise ClassroomError("not_found", f"no course {course_id}") from None


def course_by_code(raw: str) -> Course:
    code = code_clean(raw)
    found = Course.objects.filter(code=code).first() if code else None
    if found is None:
        raise ClassroomError("bad_code", "No course has this code: check it with your teacher.")
    return found


def policy_set(
    *, course: Course, ai_mode: str, max_effort: str, token_quota: str | int | None, guard_mode: str | None = None,
    ai_runs: str | None = None, ai_edit_steer: str | None = None, budget_usd: str | None = None,
    ai_models: Sequence[str] | None = None,
) -> None:
    """The course's AI rules (what the model may run, whether students steer it by editing
    (``on``/``off``), the security watchdog's mode, the money budget per student and the
    catalogue's models the students may use, when given: None keeps them; an empty budget is
    none); a bad value is refused whole."""
    if not AiMode.known(ai_mode):
        raise ClassroomError("bad_mode", f"AI mode is one of {', '.join(AiMode)}.")
    if max_effort and max_effort not in EFFORTS:
        raise ClassroomError("bad_effort", f"The effort cap is one of {', '.join(EFFORTS)}, or none.")
    quota: int | None
    if token_quota in (None, ""):
        quota = None
    else:
        try:
            quota = int(str(token_quota).strip())
        except ValueError:
            raise ClassroomError("bad_quota", "The token quota is a whole number, or empty for none.") from None
        if quota < 0 or quota > 10**9:
            raise ClassroomError("bad_quota", "The token quota is between 0 and 1,000,000,000.")
    if guard_mode is not None and not GuardMode.known(guard_mode):
        raise ClassroomError("bad_guard_mode", f"The watchdog's mode is one of {', '.join(GuardMode)}.")
    if ai_runs is not None and not AiRuns.known(ai_runs):
        choices = ", ".join(f"{runs.value} ({runs.word})" for runs in AiRuns)
        raise ClassroomError("bad_ai_runs", f"What the AI may run is one of {choices}.")
    budget = course.budget_usd if budget_usd is None else _budget(budget_usd)
    if ai_edit_steer is not None and ai_edit_steer not in ("on", "off"):
        raise ClassroomError("bad_ai_edit_steer", "Steering by editing is on or off.")
    models = None if ai_models is None else _models_checked(ai_models)
    course.ai_mode, course.max_effort, course.token_quota, course.budget_usd = ai_mode, max_effort, quota, budget
    if ai_edit_steer is not None:
        course.ai_edit_steer = ai_edit_steer == "on"
    if guard_mode is not None:
        course.guard_mode = guard_mode
    if ai_runs is not None:
        course.ai_runs = ai_runs
    models_changed = models is not None and models != course.ai_models
    if models is not None:
        course.ai_models = models
    course.save(update_fields=[
        "ai_mode", "max_effort", "token_quota", "guard_mode", "ai_runs", "ai_edit_steer", "budget_usd", "ai_models",
    ])
    if models_changed:  # the copies' rooms run their next turn on an allowed model, warmed now
        for workspace_id in course.enrollments.values_list("workspace_id", flat=True):
            transaction.on_commit(functools.partial(workspace_ports.rooms().model_changed, workspace_id))


def _models_checked(names: Sequence[str]) -> list[str]:
    """The catalogue's models, in the catalogue's order; a name it does not have is refused."""
    known = catalogue().names
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ClassroomError("unknown_model", f"No model {unknown[0][:80]!r} here: the models are {', '.join(known)}.")
    return [name for name in known if name in names]


MAX_BUDGET_USD = Decimal(1_000_000)


def _budget(text: str) -> Decimal | None:
    """A course's money budget per student as typed (``2.50``, ``$2.50``); empty: none."""
    text = text.strip().removeprefix("$").strip()
    if not text:
        return None
    try:
        amount = Decimal(text)
    except InvalidOperation:
        amount = Decimal("NaN")
    if not amount.is_finite() or amount < 0 or amount > MAX_BUDGET_USD:
        raise ClassroomError("bad_budget", "The budget is an amount of US dollars from 0 to 1,000,000 (e.g. 2.50), "
                             "or empty for none.")
    if amount != amount.quantize(Decimal("0.0001")):
        raise ClassroomError("bad_budget", "The budget has at most 4 decimal places (e.g. 0.0125).")
    return amount


def course_archive(*, course: Course, archived: bool = True) -> None:
    """Archived: no new students (``course_join``), and every copy read-only for everyone
    (``pairing.services.role_for`` answers viewer there) until the course is reopened."""
    course.archived = archived
    course.save(update_fields=["archived"])


def student_data_delete(*, course: Course) -> int:
    """Delete every enrollment of the course and the students' copies (their sessions, turns
    and runs go with them), and the guest accounts the course made (a display name, maybe a
    password) that are left with nothing: no other course, workspace or session. Accounts
    of their own stay. Returns how many students were removed."""
    with transaction.atomic():
        rows = list(course.enrollments.values_list("workspace_id", "student_id"))
        Workspace.objects.filter(pk__in=[workspace for workspace, _ in rows]).delete()  # enrollments cascade
        left = User.objects.filter(pk__in=[student for _, student in rows], guest__isnull=False)
        in_use = Participant.objects.filter(user=OuterRef("pk"))
        left.exclude(Exists(in_use)).filter(enrollments__isnull=True, workspaces__isnull=True).delete()
    return len(rows)


def course_delete(*, course: Course) -> None:
    """The course and its student data; the template stays one of the teacher's workspaces."""
    with transaction.atomic():
        student_data_delete(course=course)
        course.delete()


# -- joining ---------------------------------------------------------------------------------



def current_texts(workspace: Workspace) -> dict[str, str]:
    """Every file's text now: from the live document when held, else the stored rows."""
    live = live_texts(workspace.id)
    if live is not None:
        return live
    return dict(workspace.files.values_list("path", "text"))


def enrollment_of(*, course: Course, user: User) -> Enrollment | None:
    """The user's enrollment in the course, if they joined it."""
    return Enrollment.objects.select_related("workspace").filter(course=course, student=user).first()


def join_refusal(*, course: Course, user: User) -> ClassroomError | None:
    """Why the user cannot join the course now (None: they can)."""
    if course.archived:
        return ClassroomError("archived", f"“{course.name}” is archived: it takes no new students.")
    if course.template.owner_id == user.pk:
        return ClassroomError("own_course", "This is your course: teachers do not join their own courses.")
    return None


def course_join(*, course: Course, user: User, display_name: str = "") -> tuple[Enrollment, bool]:
    """The user's enrollment (and copy of the template), made on the first join; joining again
    returns the same one. Returns ``(enrollment, created)``."""
    existing = enrollment_of(course=course, user=user)
    if existing is not None:
        return existing, False
    refusal = join_refusal(course=course, user=user)
    if refusal is not None:
        raise refusal
    texts = current_texts(course.template)
    name = " ".join(display_name.split()) or user.first_name or user.get_username()
    with transaction.atomic():
        try:
            copy = workspace_create(owner=user, name=course.name, files=texts)
        except WorkspaceError as exc:  # the student's own limits (how many workspaces they hold)
            raise ClassroomError(exc.code, f"Your copy of the course could not be made: {exc.message}") from None
        enrollment = Enrollment.objects.create(
            course=course, student=user, display_name=name[:100], workspace=copy,
            template_hashes={path: sha256_hex(text) for path, text in texts.items()},
        )
        session_for_workspace(workspace=copy, by=user)
    return enrollment, True


def course_join_as_guest(*, course: Course, name: str, password: str = "") -> tuple[User, Enrollment]:
    """A new guest named ``name`` (``accounts.services.guest_create``, as invite links make
    them) enrolled in the course. With a ``password`` (optional, checked by the project's
    password validators) the student can sign in again from another machine, as the guest's
    username, and open the course link to reach their copy."""
    if course.archived:
        raise ClassroomError("archived", f"“{course.name}” is archived: it takes no new students.")
    with transaction.atomic():
        user = guest_create(name)
        if password:
            try:
                validate_password(password, user)
            except ValidationError as exc:
                raise ClassroomError("weak_password", " ".join(exc.messages)) from None
            user.set_password(password)
            user.save(update_fields=["password"])
        enrollment, _ = course_join(course=course, user=user, display_name=user.first_name)
    return user, enrollment


def student_session(enrollment: Enrollment) -> Session:
    """The live session of the student's copy (the one its invites point at)."""
    session, _ = session_for_workspace(workspace=enrollment.workspace, by=enrollment.student)
    return session


def teacher_watch(*, enrollment: Enrollment, teacher: User) -> Session:
    """The student's session with the teacher in it as a viewer (kept if already more)."""
    session = student_session(enrollment)
    Participant.objects.get_or_create(session=session, user=teacher, defaults={"role": Role.VIEWER})
    return session


# -- pushing a file to every copy --------------------------------------------------------------


@dataclass
class PushReport:
    path: str
    replaced: list[str] = field(default_factory=list)  # display names
    beside: list[str] = field(default_factory=list)  # the student changed it: teacher's copy beside
    failed: list[tuple[str, str]] = field(default_factory=list)  # (display name, why)


def _text_or_none(workspace: Workspace, path: str) -> str | None:
    try:
        return file_text(workspace=workspace, path=path)
    except WorkspaceError:
        return None


def _write_if(workspace: Workspace, path: str, text: str, expected: str | None) -> bool:
    """``file_write`` of ``text`` if the file holds ``expected``; False (nothing written) if not."""
    try:
        file_write(workspace=workspace, path=path, data=text, expected=expected)
    except WorkspaceError as exc:
        if exc.code is not ApiCode.CHANGED:
            raise
        return False
    return True


def file_push(*, course: Course, path: str, text: str) -> PushReport:
    """Write ``path`` in the template and in every student's copy. A copy whose file still
    holds the template's text as copied (or has no such file, never having had it) gets it
    replaced; a copy whose student changed or deleted it keeps theirs, and the teacher's text
    lands at ``beside_path(path, "teacher")``. Writes go through ``file_write``, so an open room sees them."""
    clean = checked_path(path)
    file_write(workspace=course.template, path=clean, data=text)  # refuses too large / not UTF-8
    report = PushReport(path=clean)
    new_hash = sha256_hex(text)
    for enrollment in course.enrollments.select_related("workspace"):
        current = _text_or_none(enrollment.workspace, clean)
        copied = enrollment.template_hashes.get(clean)
        unchanged = (current is None and copied is None) or (current is not None and sha256_hex(current) == copied)
        try:
            # Replaced only if the file still holds what was read just now: a keystroke of the
            # student's between the read and the write sends the teacher's text beside it.
            if (unchanged or current == text) and _write_if(enrollment.workspace, clean, text, current):
                enrollment.template_hashes[clean] = new_hash
                enrollment.save(update_fields=["template_hashes"])
                report.replaced.append(enrollment.display_name)
            else:
                file_write(workspace=enrollment.workspace, path=beside_path(clean, "teacher"), data=text)
                report.beside.append(enrollment.display_name)
        except WorkspaceError as exc:
            report.failed.append((enrollment.display_name, exc.message))
    return report


# -- what the teacher sees ---------------------------------------------------------------------


def prompts_by_student(course: Course) -> list[tuple[Enrollment, list[Turn]]]:
    """Every student's prompts to the model, oldest first."""
    enrollments = list(course.enrollments.select_related("workspace"))
    turns: dict[uuid.UUID, list[Turn]] = {e.workspace_id: [] for e in enrollments}
    found = Turn.objects.filter(session__workspace_id__in=turns).select_related("session").order_by("created_at")
    for turn in found:
        turns[turn.session.workspace_id].append(turn)
    return [(e, turns[e.workspace_id]) for e in enrollments]


def student_courses(user: User) -> list[Enrollment]:
    """The courses the user takes (their enrollments, with each copy's session to open)."""
    return list(Enrollment.objects.filter(student=user).select_related("course", "workspace").order_by("-joined_at"))
