"""Pages of a live session: the IDE itself (a workspace opens here), its turn history, invite links."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from spark_ide.accounts.services import signed_in_user
from spark_ide.live.events import DEFAULT_EFFORT, DRIVER_ROLES, EFFORTS
from spark_ide.workspaces.services import WorkspaceError, workspace_for
from spark_ide.workspaces.views import tree_nodes, tree_partial

from . import services
from .api import session_links
from .models import Role, Session

DIFF_FORMATTER = HtmlFormatter(nowrap=False, cssclass="diff")


def _session_and_role(request: HttpRequest, session_id: str) -> tuple[Session, str]:
    try:
        session = services.session_get(session_id)
    except services.SessionError:
        raise Http404("no such session") from None
    role = services.role_for(session=session, user=signed_in_user(request))
    if role is None:
        raise Http404("no such session")
    return session, role


def _live_page(request: HttpRequest, session: Session, role: str) -> HttpResponse:
    """The IDE: the workspace's live (Yjs) editor, tree, prompt box, transcript and history."""
    workspace = session.workspace
    can_edit = role in DRIVER_ROLES
    context: dict[str, Any] = {
        "session": session,
        "efforts": EFFORTS,
        "default_effort": DEFAULT_EFFORT,
        "workspace": workspace,
        "role": role,
        "can_edit": can_edit,
        "can_drive": can_edit,
        "ws_path": f"/ws/sessions/{session.id}/",
        "tree": tree_nodes(workspace),
        "tree_url": reverse("session-tree", args=[session.id]),
        "invites": session_links(request, session)["invite"] if role == Role.OWNER else None,
        "history_url": reverse("session-history", args=[session.id]),
    }
    return render(request, "pairing/session.html", context)


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
    return _live_page(request, session, Role.OWNER)


@login_required
@require_GET
def session_page(request: HttpRequest, session_id: str) -> HttpResponse:
    session, role = _session_and_role(request, session_id)
    return _live_page(request, session, role)


def diff_html(diff: str) -> str:
    return str(highlight(diff, DiffLexer(), DIFF_FORMATTER))


@login_required
@require_GET
def session_history(request: HttpRequest, session_id: str) -> HttpResponse:
    session, role = _session_and_role(request, session_id)
    turns = [
        {
            "id": turn.id, "prompt": turn.prompt, "status": turn.status, "steered_from": turn.steered_from_id,
            "metrics": turn.metrics, "reverted": turn.reverted, "created_at": turn.created_at, "error": turn.error,
            "files": [{"path": path, "diff_html": mark_safe(diff_html(diff))} for path, diff in turn.diff.items()],  # noqa: S308 - Pygments escapes
        }
        for turn in reversed(services.room_turns(session))
    ]
    context = {"turns": turns, "can_drive": role in DRIVER_ROLES, "session": session}
    return render(request, "pairing/_history.html", context)


@login_required
def session_tree(request: HttpRequest, session_id: str) -> HttpResponse:
    """The file tree for everyone in the session; only owner and collaborators change files."""
    session, role = _session_and_role(request, session_id)
    can_edit = role in DRIVER_ROLES
    tree_url = reverse("session-tree", args=[session.id])
    return tree_partial(request, session.workspace, tree_url=tree_url, can_edit=can_edit)


@login_required
@require_GET
def session_join(request: HttpRequest, session_id: str, key: str) -> HttpResponse:
    try:
        session = services.session_get(session_id)
        role = services.session_join(session=session, user=signed_in_user(request), key=key)
    except services.SessionError as exc:
        messages.error(request, escape(exc.message))
        return redirect("workspace-list")
    messages.success(request, f"You joined the session as {role}.")
    return redirect("session", session_id=session.id)
