"""JSON API for workspaces and files (docs/protocol.md §1)."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse

from spark_ide.accounts.guests import GUEST_API_REFUSAL, guests_allowed
from spark_ide.accounts.services import is_guest, signed_in_user
from spark_ide.api import api_view, json_body
from spark_ide.api_errors import ApiCode, ApiError
from spark_ide.live.events import DRIVER_ROLES

from . import ports, services
from .models import Workspace
from .services import WorkspaceError


def as_api_error(exc: WorkspaceError) -> ApiError:
    return ApiError(exc.code, exc.message)


@api_view({"GET", "POST"})
def workspaces(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        rows = [
            {"id": str(w.id), "name": w.name, "updated_at": w.updated_at.isoformat()}
            for w in signed_in_user(request).workspaces.all()
        ]
        return JsonResponse(rows, safe=False)
    body = json_body(request)
    name, files = body.get("name"), body.get("files", {})
    if not isinstance(name, str):
        raise ApiError(ApiCode.BAD_NAME, "'name' must be a string")
    if not isinstance(files, dict):
        raise ApiError(ApiCode.BAD_FILE, "'files' must be an object mapping paths to text")
    try:
        workspace = services.workspace_create(owner=signed_in_user(request), name=name, files=files)
    except WorkspaceError as exc:
        raise as_api_error(exc) from None
    return JsonResponse(services.workspace_summary(workspace), status=201)


@guests_allowed  # PATCH only: a guest owner or collaborator switches test rounds from the live page
@api_view({"GET", "PATCH", "DELETE"})
def workspace(request: HttpRequest, workspace_id: str) -> HttpResponse:
    user = signed_in_user(request)
    if request.method == "PATCH":
        return _workspace_patch(user, workspace_id, request)
    if is_guest(user):
        raise ApiError(ApiCode.GUEST_FORBIDDEN, GUEST_API_REFUSAL)
    try:
        found = services.workspace_for(user=user, workspace_id=workspace_id)
    except WorkspaceError as exc:
        raise as_api_error(exc) from None
    if request.method == "DELETE":
        found.delete()
        return HttpResponse(status=204)
    return JsonResponse(services.workspace_summary(found))


# What a PATCH may change, and who: the owner and the collaborators of the workspace's session.
PATCH_FIELDS = ("auto_test",)


def _workspace_patch(user: User, workspace_id: str, request: HttpRequest) -> HttpResponse:
    """Change the workspace's settings (``auto_test``: true, false, or null for the server's
    default) for its owner or a collaborator; a viewer is refused (``forbidden``), anyone else
    told it does not exist, before the body is read. Nothing is changed unless every field is
    good."""
    try:
        found = Workspace.objects.get(pk=uuid.UUID(str(workspace_id)))
    except (ValueError, Workspace.DoesNotExist):
        raise ApiError(ApiCode.NOT_FOUND, f"no workspace {workspace_id}") from None
    if found.owner_id != user.pk:
        role = ports.members().role(found.pk, user.pk)
        if role is None:
            raise ApiError(ApiCode.NOT_FOUND, f"no workspace {workspace_id}")
        if role not in DRIVER_ROLES:
            raise ApiError(ApiCode.FORBIDDEN, "only the owner and collaborators change the workspace's settings")
    body = json_body(request)
    unknown = sorted(set(body) - set(PATCH_FIELDS))
    if unknown:
        changes = ", ".join(PATCH_FIELDS)
        raise ApiError(ApiCode.BAD_FIELD, f"cannot change {unknown[0][:40]!r}: a PATCH changes {changes}")
    changed: dict[str, object] = {}
    try:
        services.check_writable(found)
        if "auto_test" in body:
            changed["auto_test"] = services.auto_test_set(workspace=found, value=body["auto_test"])
    except WorkspaceError as exc:
        raise as_api_error(exc) from None
    if changed:  # every page open on the workspace follows (``workspace.settings``)
        ports.rooms().settings_changed(found.pk, changed, by=user.get_username())
    return JsonResponse(services.workspace_summary(found))


@api_view({"GET", "PUT", "DELETE"})
def file(request: HttpRequest, workspace_id: str, path: str) -> HttpResponse:
    try:
        found = services.workspace_for(user=signed_in_user(request), workspace_id=workspace_id)
        if request.method == "GET":
            text = services.file_text(workspace=found, path=path)
            return HttpResponse(text, content_type="text/plain; charset=utf-8")
        services.check_writable(found)
        if request.method == "DELETE":
            services.file_delete(workspace=found, path=path)
            return HttpResponse(status=204)
        saved, created = services.file_write(workspace=found, path=path, data=request.body)
    except WorkspaceError as exc:
        raise as_api_error(exc) from None
    body = {"path": saved.path, "size": saved.size, "language": saved.language}
    return JsonResponse(body, status=201 if created else 200)
