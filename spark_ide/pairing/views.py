"""Pages of a live session: the IDE itself (a workspace opens here), its turn history, joining
by an invite link (as a guest when not signed in), and the owner's people and invite links."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from spark_ide.accounts.guests import guests_allowed
from spark_ide.accounts.models import GUEST_NAME_MAX
from spark_ide.accounts.services import AccountError, is_guest, signed_in_user
from spark_ide.live.events import DEFAULT_EFFORT, DRIVER_ROLES, EFFORTS
from spark_ide.live.policy import AiPolicy
from spark_ide.workspaces.catalogue import choices_for, entry_for
from spark_ide.workspaces.services import WorkspaceError, auto_test_effective, last_changed_path, workspace_for
from spark_ide.workspaces.views import tree_nodes, tree_partial

from . import ports, services
from .adapter import expel_everywhere
from .api import session_links
from .checkpoints import checkpoint_list, checkpoint_storage
from .models import Role, Session
from .ports import CourseCopy
from .usage import usage_of

DIFF_FORMATTER = HtmlFormatter(nowrap=False, cssclass="diff")


class NoAccess(Exception):
    """A guest without a role here: removed by the owner, or its invite link was replaced."""


def no_access_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer ``NoAccess`` with a page that says so (a guest may have been in), as a 404: a
    guest gets the same answer for a session that does not exist, so it learns nothing of
    sessions it has no role in."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NoAccess:
            return render(request, "pairing/no_access.html", status=404)

    return wrapper


def _session_and_role(request: HttpRequest, session_id: str) -> tuple[Session, str]:
    user = signed_in_user(request)
    try:
        session = services.session_get(session_id)
    except services.SessionError:
        if is_guest(user):
            raise NoAccess from None
        raise Http404("no such session") from None
    role = services.role_for(session=session, user=user)
    if role is None:
        if is_guest(user):
            raise NoAccess
        raise Http404("no such session")
    return session, role


def _owned_session(request: HttpRequest, session_id: str) -> Session:
    """The session, for its owner only (anyone else: not found)."""
    session, role = _session_and_role(request, session_id)
    if role != Role.OWNER:
        raise Http404("no such session")
    return session


def _role_shown(user: Any, role: str, copy: CourseCopy | None) -> tuple[str, str]:
    """The role the page's badge says, and its title. In a student's copy of a course the
    student is its owner and the teacher a viewer, but each is told what they are there."""
    if copy is not None:
        read_only = " It is read-only: the course is archived." if copy.archived else ""
        if copy.student_id == user.pk:
            watched = "your teacher can watch it and read your prompts"
            return "student", f"Your copy of “{copy.course}”: {watched}.{read_only}"
        if copy.teacher_id == user.pk:
            return "teacher", f"You are watching {copy.student_name}'s copy of “{copy.course}”.{read_only}"
    return role, "Your role in this session"


def _live_page(request: HttpRequest, session: Session, role: str) -> HttpResponse:
    """The IDE: the workspace's live (Yjs) editor, tree, prompt box, transcript and history."""
    workspace = session.workspace
    can_edit = role in DRIVER_ROLES
    owner = role == Role.OWNER
    copy = ports.classroom().copy_of(workspace.id)  # a student's copy of a course, or None
    role_label, role_title = _role_shown(request.user, role, copy)
    context: dict[str, Any] = {
        "session": session,
        "efforts": EFFORTS,
        "default_effort": DEFAULT_EFFORT,
        "workspace": workspace,
        "role": role,
        "role_label": role_label,
        "role_title": role_title,
        # A student's copy has no public page: the course's work is shared with the teacher.
        "publishable": owner and copy is None,
        "can_edit": can_edit,
        "can_drive": can_edit,
        "ws_path": f"/ws/sessions/{session.id}/",
        "tree": tree_nodes(workspace),
        "tree_url": reverse("session-tree", args=[session.id]),
        "invites": session_links(request, session)["invite"] if owner else None,
        "invites_url": reverse("session-invites", args=[session.id]) if owner else None,
        "members_url": reverse("session-members", args=[session.id]) if owner else None,
        "history_url": reverse("session-history", args=[session.id]),
        "course_notice": copy.notice if copy is not None else None,  # classroom: rules and who reads prompts
        "last_file": last_changed_path(workspace),  # where a newcomer lands when nobody is at work
        "session_usage": usage_of(session.turns.all()),  # the status bar's session totals until a turn ends
        **_test_rounds(workspace.id, workspace.auto_test, copy),
        # The room's model (docs/models.md): the owner picks it, a course's copy among its models.
        "model_current": entry_for(workspace.id).name,
        "model_entries": choices_for(workspace.id),
        "can_pick_model": owner and not (copy is not None and copy.archived),
    }
    return render(request, "pairing/session.html", context)


def _test_rounds(workspace_id: uuid.UUID, choice: bool | None, copy: CourseCopy | None) -> dict[str, Any]:
    """The test-rounds switch (``pairing/_auto_test.html``): the workspace's own choice (None:
    none), the server's default, whether they run here, and whether the course lets the AI
    run anything at all (``live.policy.AiPolicy.model_runs``)."""
    allowed = copy is None or AiPolicy.from_mapping(ports.classroom().ai_policy(workspace_id)).model_runs
    return {
        "auto_test": choice, "auto_test_default": bool(settings.SPARK_AUTO_TEST),
        "auto_test_on": auto_test_effective(choice), "test_rounds_allowed": allowed,
    }


@login_required
@require_GET
def workspace_page(request: HttpRequest, workspace_id: str) -> HttpResponse:
    """Opening a workspace opens its live session (made on first use), at the workspace's URL."""
    user = signed_in_user(request)
    try:
        workspace = workspace_for(user=user, workspace_id=workspace_id)
    except WorkspaceError:
        raise Http404("no such workspace") from None
    session, _ = services.session_for_workspace(workspace=workspace, by=user)
    # The owner's own page; a viewer's in an archived course's copy (read-only there).
    return _live_page(request, session, Role(services.role_for(session=session, user=user) or Role.OWNER))


@guests_allowed
@login_required
@require_GET
@no_access_page
def session_page(request: HttpRequest, session_id: str) -> HttpResponse:
    session, role = _session_and_role(request, session_id)
    return _live_page(request, session, role)


@guests_allowed
@login_required
@require_GET
def guest_home(request: HttpRequest) -> HttpResponse:
    """Where a guest's sign-in lands instead of the workspace list: the session it joined last."""
    session = services.latest_joined(signed_in_user(request))
    if session is not None:
        return redirect("session", session_id=session.id)
    if is_guest(request.user):
        return render(request, "pairing/no_access.html", status=404)
    return redirect("workspace-list")


HISTORY_SHOWN = 30  # turns the history panel shows until "show all" is asked for


def diff_html(diff: str) -> str:
    return str(highlight(diff, DiffLexer(), DIFF_FORMATTER))


@guests_allowed
@login_required
@require_GET
@no_access_page
def session_history(request: HttpRequest, session_id: str) -> HttpResponse:
    """The turn history panel: the newest turns (``?all=1``: up to the history limit), each
    with the paths it changed. A diff is rendered only when its file is opened
    (``session_turn_diff``): the panel is redrawn after every turn, and drawing every turn's
    highlighted diff each time made that a long task on the page."""
    session, role = _session_and_role(request, session_id)
    # "Show all" / "Show fewer" is remembered for the browser session: the panel is redrawn
    # after every turn, and would otherwise fold up again at the next one.
    key = f"history-all-{session.id}"
    if "all" in request.GET:
        request.session[key] = request.GET["all"] == "1"
    everything = bool(request.session.get(key, False))
    latest = services.room_turns(session)
    shown = latest if everything else latest[-HISTORY_SHOWN:]
    newest = latest[-1].created_at if latest else None
    turns = [
        {
            "id": turn.id, "prompt": turn.prompt, "status": turn.status, "reason": turn.reason,
            "steered_from": turn.steered_from_id, "metrics": turn.metrics, "reverted": turn.reverted,
            # A revert can be undone until the next turn starts (the room says so if it cannot).
            "restorable": turn.reverted and turn.reverted_at is not None and newest is not None
            and turn.reverted_at > newest,
            "created_at": turn.created_at, "error": turn.error,
            "paths": list(turn.diff),
        }
        for turn in reversed(shown)
    ]
    runs = [
        {
            "id": run.id, "path": run.path, "tests": run.tests, "command": run.shown_command, "by_model": run.by_model,
            "by": run.author.get_username() if run.author else "",
            "status": run.status, "exit_code": run.exit_code, "duration_ms": run.duration_ms, "output": run.output,
            "message": run.message, "created_at": run.created_at,
        }
        for run in services.room_runs(session, HISTORY_SHOWN)
    ]
    context = {
        "turns": turns, "runs": runs, "can_drive": role in DRIVER_ROLES, "session": session,
        "checkpoints": checkpoint_list(session.workspace_id),
        "checkpoint_storage": checkpoint_storage(session.workspace_id),
        "hidden": len(latest) - len(shown), "shown_limit": HISTORY_SHOWN,
        "everything": everything and len(latest) > HISTORY_SHOWN,
        "history_url": reverse("session-history", args=[session.id]),
    }
    return render(request, "pairing/_history.html", context)


@guests_allowed
@login_required
@require_GET
@no_access_page
def session_turn_diff(request: HttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    """One file's highlighted diff of one turn of the session's workspace (``?path=``)."""
    session, _ = _session_and_role(request, session_id)
    turn = services.room_turn(session, turn_id)
    path = request.GET.get("path", "")
    if turn is None or path not in turn.diff:
        return HttpResponse("No such change in this workspace's history.", status=404, content_type="text/plain")
    return HttpResponse(diff_html(turn.diff[path]))


@guests_allowed
@login_required
@no_access_page
def session_tree(request: HttpRequest, session_id: str) -> HttpResponse:
    """The file tree for everyone in the session; only owner and collaborators change files."""
    session, role = _session_and_role(request, session_id)
    can_edit = role in DRIVER_ROLES
    tree_url = reverse("session-tree", args=[session.id])
    return tree_partial(request, session.workspace, tree_url=tree_url, can_edit=can_edit)


@guests_allowed
@require_http_methods(["GET", "POST"])
def session_join(request: HttpRequest, session_id: str, key: str) -> HttpResponse:
    """An invite link. Signed in: a page to confirm the join (POST), or straight to the session
    when the link gives nothing more than the role held (a GET never changes anything: a link
    preview or a prefetch must not make anyone join). Not signed in: a name makes a guest (POST)."""
    try:
        session = services.session_get(session_id)
        role = services.invite_role(session=session, key=key)
    except services.SessionError as exc:
        return render(request, "pairing/invite_invalid.html", {"message": exc.message}, status=404)
    if request.user.is_authenticated:
        user = signed_in_user(request)
        try:
            if request.method == "POST":
                joined = services.session_join(session=session, user=user, key=key)
                messages.success(request, f"You joined the session as {joined}.")
                return redirect("session", session_id=session.id)
            current, granted = services.join_grants(session=session, user=user, key=key)
        except services.SessionError as exc:  # removed by the owner while this link was the session's
            return render(request, "pairing/invite_invalid.html", {"message": exc.message}, status=404)
        if granted is None:
            return redirect("session", session_id=session.id)
        context = {"workspace": session.workspace, "role": granted, "current": current, "signed_in": user}
        return render(request, "pairing/join.html", context)
    name, error = request.POST.get("name", ""), None
    if request.method == "POST":
        try:
            guest = services.session_join_as_guest(session=session, key=key, name=name)
        except AccountError as exc:
            error = exc
        else:
            login(request, guest, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome, {guest.first_name}: you joined as a guest {role}.")
            return redirect("session", session_id=session.id)
    context = {"workspace": session.workspace, "role": role, "name": name, "error": error, "name_max": GUEST_NAME_MAX}
    return render(request, "pairing/join.html", context, status=400 if error else 200)


def _expel(session: Session, user_ids: Iterable[int]) -> None:
    """Hang up on the users' live connections, on every process."""
    expel_everywhere(session.workspace_id, list(user_ids))


def _members_partial(
    request: HttpRequest, session: Session, copy: CourseCopy | None, error: services.SessionError | None = None
) -> HttpResponse:
    teacher_id = copy.teacher_id if copy is not None else None
    context = {
        "members": services.members(session, teacher_id), "removed": services.removed_members(session),
        "error": error, "members_url": reverse("session-members", args=[session.id]), "student_copy": copy is not None,
    }
    return render(request, "pairing/_participants.html", context)


@guests_allowed  # a student who joined a course by its link (a guest) owns their copy
@login_required
@require_http_methods(["GET", "POST"])
def session_members(request: HttpRequest, session_id: str) -> HttpResponse:
    """The owner's list of who holds a role; POST ``remove=<user id>`` takes one away and cuts
    their live connections at once (the invite links of the moment stop working for them),
    ``allow=<user id>`` lets a removed person back in through those links. A refusal is shown
    in the partial (htmx swaps 200s only). In a student's copy of a course, the teacher is
    listed as such and cannot be removed (they watch every copy of their course)."""
    session = _owned_session(request, session_id)
    copy = ports.classroom().copy_of(session.workspace_id)
    if request.method == "GET":
        return _members_partial(request, session, copy)
    lift = "allow" in request.POST
    try:
        user_id = int(request.POST.get("allow" if lift else "remove", ""))
    except ValueError:
        unsaid = services.SessionError("bad_member", "say whom to remove or let back in")
        return _members_partial(request, session, copy, unsaid)
    if not lift and copy is not None and user_id == copy.teacher_id:
        kept = services.SessionError("not_removable", "your teacher watches every copy of the course: they stay")
        return _members_partial(request, session, copy, kept)
    try:
        if lift:
            services.removal_lift(session=session, user_id=user_id)
        else:
            services.participant_remove(session=session, user_id=user_id)
    except services.SessionError as exc:
        return _members_partial(request, session, copy, exc)
    if not lift:
        _expel(session, [user_id])
    return _members_partial(request, session, copy)


@guests_allowed  # a student who joined a course by its link (a guest) owns their copy
@login_required
@require_POST
def session_invites(request: HttpRequest, session_id: str) -> HttpResponse:
    """POST ``role``: a new invite link for it; guests who came through the old one lose access."""
    session = _owned_session(request, session_id)
    error, removed = None, []
    try:
        removed = services.invite_rotate(session=session, role=request.POST.get("role", ""))
    except services.SessionError as exc:
        error = exc
    _expel(session, removed)
    context = {
        "invites": session_links(request, session)["invite"], "error": error,
        "invites_url": reverse("session-invites", args=[session.id]),
    }
    response = render(request, "pairing/_invites.html", context)
    return trigger_client_event(response, "spark:members-changed", {"removed": removed})
