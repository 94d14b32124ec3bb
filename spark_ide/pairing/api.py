"""JSON API for live sessions and their turns (docs/protocol.md §1)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse

from spark_ide.accounts.guests import guests_allowed
from spark_ide.accounts.services import signed_in_user
from spark_ide.api import api_view
from spark_ide.api_errors import ApiCode, ApiError
from spark_ide.workspaces.api import as_api_error
from spark_ide.workspaces.services import WorkspaceError, workspace_for

from . import services
from .models import Session


def session_links(request: HttpRequest, session: Session) -> dict[str, object]:
    scheme = "wss" if request.is_secure() else "ws"
    join = "session-join"
    return {
        "id": str(session.id),
        "ws_url": f"{scheme}://{request.get_host()}/ws/sessions/{session.id}/",
        "url": request.build_absolute_uri(reverse("session", args=[session.id])),
        "invite": {
            "viewer": request.build_absolute_uri(reverse(join, args=[session.id, session.viewer_key])),
            "collaborator": request.build_absolute_uri(reverse(join, args=[session.id, session.collaborator_key])),
        },
    }


@api_view({"POST"})
def sessions(request: HttpRequest, workspace_id: str) -> HttpResponse:
    user = signed_in_user(request)
    try:
        workspace = workspace_for(user=user, workspace_id=workspace_id)
    except WorkspaceError as exc:
        raise as_api_error(exc) from None
    session, created = services.session_for_workspace(workspace=workspace, by=user)
    return JsonResponse(session_links(request, session), status=201 if created else 200)


@guests_allowed
@api_view({"GET"})
def turns(request: HttpRequest, session_id: str) -> HttpResponse:
    user = signed_in_user(request)
    try:
        session = services.session_get(session_id)
    except services.SessionError as exc:
        raise ApiError(ApiCode.NOT_FOUND, exc.message) from None
    if services.role_for(session=session, user=user) is None:
        raise ApiError(ApiCode.NOT_FOUND, f"no session {session_id}")
    return JsonResponse(services.turns_for(session), safe=False)
