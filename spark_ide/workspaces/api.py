"""JSON API for workspaces and files (docs/protocol.md §1)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from spark_ide.accounts.services import signed_in_user
from spark_ide.api import api_view, json_body
from spark_ide.api_errors import ApiCode, ApiError

from . import services
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


@api_view({"GET", "DELETE"})
def workspace(request: HttpRequest, workspace_id: str) -> HttpResponse:
    try:
        found = services.workspace_for(user=signed_in_user(request), workspace_id=workspace_id)
    except WorkspaceError as exc:
        raise as_api_error(exc) from None
    if request.method == "DELETE":
        found.delete()
        return HttpResponse(status=204)
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
