"""Pages of the classroom: teacher sign-up, courses (create, policy, push, archive, delete),
the live dashboard and the prompts page, and students joining by code."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from spark_ide.accounts.guests import guests_allowed
from spark_ide.accounts.models import GUEST_NAME_MAX
from spark_ide.accounts.services import AccountError, signed_in_user
from spark_ide.live.events import EFFORTS
from spark_ide.pairing.adapter import rejoin_everywhere
from spark_ide.workspaces.catalogue import catalogue
from spark_ide.workspaces.models import GUARD_MODE_CHOICES, Workspace
from spark_ide.workspaces.services import WorkspaceError, bounded_read, decoded_text

from . import services
from .dashboard import dashboard
from .models import AI_MODE_CHOICES, AI_RUNS_CHOICES, Course, Enrollment
from .services import ClassroomError

BACKEND = "django.contrib.auth.backends.ModelBackend"


def teacher_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed in and a teacher (the ``classroom.add_course`` permission), else 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not services.is_teacher(request.user):
            raise PermissionDenied("only teachers manage courses")
        return view(request, *args, **kwargs)

    return login_required(wrapper)


def _course(request: HttpRequest, course_id: str) -> Course:
    try:
        return services.course_for_teacher(teacher=signed_in_user(request), course_id=course_id)
    except ClassroomError:
        raise Http404("no such course") from None


def _enrollment(course: Course, enrollment_id: str) -> Enrollment:
    try:
        return course.enrollments.select_related("workspace", "student").get(pk=int(enrollment_id))
    except (ValueError, Enrollment.DoesNotExist):
        raise Http404("no such student") from None


# -- teachers ----------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def teacher_signup(request: HttpRequest) -> HttpResponse:
    """A teacher account (name + password); only while ``SPARK_TEACHER_SIGNUP`` is on."""
    if not settings.SPARK_TEACHER_SIGNUP:
        raise Http404("teacher sign-up is off")
    form: UserCreationForm[User] = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        services.teacher_grant(user)
        login(request, user, backend=BACKEND)
        messages.success(request, "Your teacher account is ready: create a course.")
        return redirect("course-list")
    return render(request, "classroom/signup.html", {"form": form}, status=400 if form.errors else 200)


def _list_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    user = signed_in_user(request)
    context: dict[str, Any] = {"taking": services.student_courses(user), "teacher": services.is_teacher(user)}
    if context["teacher"]:
        enrolled = Enrollment.objects.values_list("workspace_id", flat=True)
        context["courses"] = Course.objects.filter(teacher=user).select_related("template")
        context["workspaces"] = Workspace.objects.filter(owner=user).exclude(pk__in=enrolled).order_by("name")
    return {**context, **extra}


@guests_allowed
@login_required
@require_GET
def course_list(request: HttpRequest) -> HttpResponse:
    """The classroom's home, where the header's Classroom link goes: the courses the person
    takes (each opens their copy) and a code to join another; for a teacher, also their own
    courses and a new one. A guest made by a course link is a student here like any other."""
    return render(request, "classroom/list.html", _list_context(request))


@teacher_required
@require_POST
def course_new(request: HttpRequest) -> HttpResponse:
    """POST name + ``template`` (one of the teacher's workspaces) or ``archive`` (a zip)."""
    teacher = signed_in_user(request)
    name = request.POST.get("name", "")
    upload = request.FILES.get("archive")
    try:
        if upload is not None:
            if upload.size is not None and upload.size > settings.SPARK_MAX_IMPORT_BYTES:
                raise ClassroomError("import_too_large", "The archive is larger than the import limit.")
            course, skipped = services.course_create_from_zip(teacher=teacher, name=name, data=upload.read())
            for path, why in skipped:
                messages.warning(request, f"Skipped {path}: {why}")
        else:
            template_id = _uuid_or_none(request.POST.get("template"))
            template = Workspace.objects.filter(owner=teacher, pk=template_id).first() if template_id else None
            if template is None:
                raise ClassroomError("bad_template", "Choose one of your workspaces or upload a zip as the template.")
            course = services.course_create(teacher=teacher, name=name, template=template)
    except ClassroomError as exc:
        return render(request, "classroom/list.html", _list_context(request, error=exc, name=name), status=400)
    return redirect("course", course_id=course.pk)


def _uuid_or_none(raw: str | None) -> str | None:
    try:
        return str(uuid.UUID(raw or ""))
    except ValueError:
        return None


def _course_page(request: HttpRequest, course: Course, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        "course": course,
        "join_url": request.build_absolute_uri(reverse("course-join", args=[course.code])),
        "modes": AI_MODE_CHOICES,
        "runs_choices": AI_RUNS_CHOICES,
        "model_names": catalogue().names,  # the catalogue's models a course may allow (docs/models.md)
        "guard_modes": GUARD_MODE_CHOICES,
        "efforts": EFFORTS,
        "students": course.enrollments.count(),
        "rows": dashboard(course),
        **extra,
    }
    return render(request, "classroom/course.html", context, status=status)


@teacher_required
@require_GET
def course_page(request: HttpRequest, course_id: str) -> HttpResponse:
    return _course_page(request, _course(request, course_id))


@teacher_required
@require_POST
def course_policy(request: HttpRequest, course_id: str) -> HttpResponse:
    course = _course(request, course_id)
    try:
        services.policy_set(
            course=course, ai_mode=request.POST.get("ai_mode", ""), max_effort=request.POST.get("max_effort", ""),
            token_quota=request.POST.get("token_quota", ""), guard_mode=request.POST.get("guard_mode"),
            ai_runs=request.POST.get("ai_runs"), ai_edit_steer=request.POST.get("ai_edit_steer"),
            budget_usd=request.POST.get("budget_usd"),
            # The form's model boxes: none ticked is any model (a form without them keeps the course's).
            ai_models=request.POST.getlist("ai_models") if "ai_models_shown" in request.POST else None,
        )
    except ClassroomError as exc:
        course.refresh_from_db()
        return _course_page(request, course, status=400, policy_error=exc)
    messages.success(request, "The AI rules are saved; they apply from the next prompt.")
    return redirect("course", course_id=course.pk)


@teacher_required
@require_POST
def course_push(request: HttpRequest, course_id: str) -> HttpResponse:
    """POST ``path`` and ``text`` (or an uploaded ``file``): write it to the template and every copy."""
    course = _course(request, course_id)
    path = request.POST.get("path", "")
    upload = request.FILES.get("file")
    try:
        if upload is not None:
            path = path or (upload.name or "")
            text = decoded_text(bounded_read(upload), path=path)
        else:
            text = request.POST.get("text", "")
        report = services.file_push(course=course, path=path, text=text)
    except WorkspaceError as exc:
        return _course_page(request, course, status=400, push_error=exc, push_path=path)
    return _course_page(request, course, push_report=report)


@teacher_required
@require_POST
def course_archive(request: HttpRequest, course_id: str) -> HttpResponse:
    course = _course(request, course_id)
    archived = request.POST.get("archived", "1") == "1"
    services.course_archive(course=course, archived=archived)
    for workspace in course.enrollments.values_list("workspace_id", flat=True):
        rejoin_everywhere(workspace)  # pages open on a copy reconnect, with the role it has now
    messages.success(request, "The course is archived: it takes no new students, and their copies are read-only."
                     if archived else "The course is open again: new students can join and copies can be edited.")
    return redirect("course", course_id=course.pk)


@teacher_required
@require_http_methods(["GET", "POST"])
def course_delete(request: HttpRequest, course_id: str, what: str) -> HttpResponse:
    """``what`` is ``students`` (their enrollments and copies) or ``course`` (that and the
    course). GET asks; POST with ``confirm`` = the course's name does it."""
    course = _course(request, course_id)
    if what not in ("students", "course"):
        raise Http404("nothing to delete there")
    error = None
    if request.method == "POST":
        if request.POST.get("confirm", "").strip() == course.name:
            if what == "course":
                services.course_delete(course=course)
                messages.success(request, f"“{course.name}” and its students' work are deleted.")
                return redirect("course-list")
            removed = services.student_data_delete(course=course)
            messages.success(request, f"Deleted the work of {removed} student(s).")
            return redirect("course", course_id=course.pk)
        error = "Type the course's name exactly to confirm."
    context = {"course": course, "what": what, "error": error, "students": course.enrollments.count()}
    return render(request, "classroom/delete.html", context, status=400 if error else 200)


@teacher_required
@require_GET
def course_students(request: HttpRequest, course_id: str) -> HttpResponse:
    """The dashboard partial (polled every few seconds by the course page)."""
    course = _course(request, course_id)
    return render(request, "classroom/_students.html", {"course": course, "rows": dashboard(course)})


@teacher_required
@require_POST
def course_watch(request: HttpRequest, course_id: str, enrollment_id: str) -> HttpResponse:
    """Open a student's session as a live viewer."""
    course = _course(request, course_id)
    session = services.teacher_watch(enrollment=_enrollment(course, enrollment_id), teacher=signed_in_user(request))
    return redirect("session", session_id=session.id)


@teacher_required
@require_GET
def course_prompts(request: HttpRequest, course_id: str) -> HttpResponse:
    course = _course(request, course_id)
    context = {"course": course, "students": services.prompts_by_student(course)}
    return render(request, "classroom/prompts.html", context)


# -- students ----------------------------------------------------------------------------------


@guests_allowed
@require_http_methods(["GET", "POST"])
def join_form(request: HttpRequest) -> HttpResponse:
    """Where a student types the course code (``?code=``) and goes on to the course's join page."""
    code = services.code_clean(request.GET.get("code", "") or request.POST.get("code", ""))
    if code:
        return redirect("course-join", code=code)
    return render(request, "classroom/join_code.html", {})


@guests_allowed
@require_http_methods(["GET", "POST"])
def course_join(request: HttpRequest, code: str) -> HttpResponse:
    """Signed in: the copy of someone enrolled already; else a page to confirm the join, which
    enrols (POST: a GET never does, so a link preview or a prefetch enrols nobody). Not signed
    in: a display name makes a guest (POST), as an invite link does."""
    try:
        course = services.course_by_code(code)
    except ClassroomError as exc:
        return render(request, "classroom/join_refused.html", {"message": exc.message}, status=404)
    if request.user.is_authenticated:
        user = signed_in_user(request)
        enrollment = services.enrollment_of(course=course, user=user)
        if enrollment is None:
            refusal = services.join_refusal(course=course, user=user)
            if refusal is not None:
                return render(request, "classroom/join_refused.html", {"message": refusal.message}, status=403)
            if request.method != "POST":
                context = {"course": course, "signed_in": user, "name": user.first_name or user.get_username(),
                           "name_max": GUEST_NAME_MAX}
                return render(request, "classroom/join.html", context)
            name = request.POST.get("name", "")
            try:
                enrollment, _ = services.course_join(course=course, user=user, display_name=name)
            except ClassroomError as exc:  # the student's own limits (how many workspaces they hold)
                return render(request, "classroom/join_refused.html", {"message": exc.message}, status=403)
            messages.success(request, f"You joined “{course.name}”: this copy is yours.")
        return redirect("session", session_id=services.student_session(enrollment).id)
    if course.archived:
        message = f"“{course.name}” is archived: it takes no new students."
        return render(request, "classroom/join_refused.html", {"message": message}, status=403)
    name, error = request.POST.get("name", ""), None
    if request.method == "POST":
        try:
            password = request.POST.get("password", "")
            guest, enrollment = services.course_join_as_guest(course=course, name=name, password=password)
        except (AccountError, ClassroomError) as exc:
            error = exc
        else:
            login(request, guest, backend=BACKEND)
            messages.success(request, f"Welcome, {guest.first_name}: you joined “{course.name}”.")
            if password:
                messages.info(request, f"To come back from another computer, sign in as “{guest.get_username()}” "
                              "with your password and open the course link again.")
            return redirect("session", session_id=services.student_session(enrollment).id)
    context = {"course": course, "name": name, "error": error, "name_max": GUEST_NAME_MAX}
    return render(request, "classroom/join.html", context, status=400 if error else 200)
