"""Pages: the workspace list, import and export, the htmx tree partial, the watchdog's setting.

Opening a workspace opens its live session: ``spark_ide.pairing.views.workspace_page``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from spark_ide.accounts.guests import guests_allowed
from spark_ide.accounts.services import signed_in_user
from spark_ide.api_errors import ApiCode
from spark_ide.guard import GuardMode

from . import services
from .models import Workspace
from .services import WorkspaceError
from .tree import Node, build_tree


def _owned(request: HttpRequest, workspace_id: str) -> Workspace:
    try:
        return services.workspace_for(user=signed_in_user(request), workspace_id=workspace_id)
    except WorkspaceError:
        raise Http404("no such workspace") from None


@login_required
@require_GET
def workspace_list(request: HttpRequest) -> HttpResponse:
    owned = signed_in_user(request).workspaces.all()
    return render(request, "workspaces/list.html", {"workspaces": owned})


@login_required
@require_POST
def workspace_new(request: HttpRequest) -> HttpResponse:
    try:
        created = services.workspace_create(owner=signed_in_user(request), name=request.POST.get("name", ""))
    except WorkspaceError as exc:
        messages.error(request, exc.message)
        return redirect("workspace-list")
    return redirect("workspace", workspace_id=created.id)


@login_required
@require_POST
def workspace_import(request: HttpRequest) -> HttpResponse:
    """A folder (files + their relative paths) or a zip archive becomes a new workspace."""
    name = request.POST.get("name", "").strip()
    try:
        archive = request.FILES.get("archive")
        if archive is not None:
            entries = services.zip_entries(archive.read())
            name = name or (archive.name or "import").removesuffix(".zip")
        else:
            uploads = request.FILES.getlist("files")
            paths = request.POST.getlist("paths")
            if not uploads or len(paths) != len(uploads):
                raise WorkspaceError(ApiCode.BAD_UPLOAD, "choose a folder or a zip archive to import")
            entries = services.strip_common_folder(
                [(p, services.bounded_read(f)) for p, f in zip(paths, uploads, strict=True)]
            )
            name = name or paths[0].split("/", 1)[0]
        report = services.workspace_import(owner=signed_in_user(request), name=name, entries=entries)
    except WorkspaceError as exc:
        messages.error(request, f"Import failed: {exc.message}")
        return redirect("workspace-list")
    messages.success(request, f"Imported {len(report.imported)} files.")
    for path, reason in report.skipped:
        messages.warning(request, f"Skipped {path}: {reason}")
    return redirect("workspace", workspace_id=report.workspace.id)


@guests_allowed  # a student who joined a course by its link (a guest) owns their copy
@login_required
@require_GET
def workspace_export(request: HttpRequest, workspace_id: str) -> HttpResponse:
    found = _owned(request, workspace_id)
    response = HttpResponse(services.workspace_export_zip(workspace=found), content_type="application/zip")
    filename = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in found.name) or "workspace"
    response["Content-Disposition"] = f'attachment; filename="{filename}.zip"'
    return response


# What each watchdog mode does, as the setting's panel explains it.
GUARD_MODE_HELP: dict[str, str] = {
    GuardMode.HALT.value: "stop the model at a high-severity flaw and have it fix it; flag the rest",
    GuardMode.FLAG.value: "let the model finish; mark every finding in the editor and the transcript",
    GuardMode.OFF.value: "do not scan the code",
}


def _guard_setting(request: HttpRequest, workspace: Workspace, *, opened: bool, status: int = 200) -> HttpResponse:
    by_course = services.guard_mode_by_course(workspace.pk)
    context = {
        "workspace": workspace, "mode": services.guard_mode_for(workspace.id), "by_course": by_course, "opened": opened,
        "choices": list(GUARD_MODE_HELP.items()),
    }
    return render(request, "workspaces/_guard_setting.html", context, status=status)


@guests_allowed  # a student who joined a course by its link (a guest) owns their copy
@login_required
@require_http_methods(["GET", "POST"])
def guard_setting(request: HttpRequest, workspace_id: str) -> HttpResponse:
    """The owner's choice of what the security watchdog does in this workspace: GET the panel
    (the live page loads it with htmx), POST ``mode`` = ``off`` | ``flag`` | ``halt`` to set it.
    A student's copy in a course follows the course's mode: the panel shows it, a POST is
    refused (409). Anyone else's workspace is not found. The room reads the mode again
    within seconds (``live.watchdog``), so a change applies to the next scan or turn."""
    workspace = _owned(request, workspace_id)
    if request.method == "GET":
        return _guard_setting(request, workspace, opened=False)
    mode = request.POST.get("mode", "")
    if not GuardMode.known(mode):
        return HttpResponseBadRequest("mode must be 'off', 'flag' or 'halt'")
    if services.guard_mode_by_course(workspace.pk):
        return HttpResponse("the course sets this workspace's watchdog mode", status=409)
    Workspace.objects.filter(pk=workspace.pk).update(guard_mode=mode)
    if getattr(request, "htmx", False):
        return _guard_setting(request, workspace, opened=True)
    return redirect("workspace", workspace_id=workspace.id)


def tree_nodes(workspace: Workspace) -> list[Node]:
    """The sidebar tree, from the live document when a session holds it."""
    return build_tree([(str(f["path"]), str(f["language"])) for f in services.file_listing(workspace)])


def _tree_response(
    request: HttpRequest, workspace: Workspace, *, tree_url: str, can_edit: bool, error: str = ""
) -> HttpResponse:
    """The tree's files (``#tree-files``), never its new-file form: a person may be typing a
    path there when the answer or a refresh arrives, and a form drawn again would lose it."""
    context = {
        "workspace": workspace, "tree": tree_nodes(workspace), "error": error, "can_edit": can_edit,
        "tree_url": tree_url,
    }
    return render(request, "workspaces/_tree_files.html", context)


def tree_partial(request: HttpRequest, workspace: Workspace, *, tree_url: str, can_edit: bool) -> HttpResponse:
    """GET: the tree's files. POST ``action`` = create | rename | delete: change, then the files.

    Each change also tells the editor what happened (an ``HX-Trigger-After-Swap`` client
    event), so an open tab follows a rename and closes on delete. Served per live session, whose
    participants may not own the workspace; ``can_edit`` comes from their role.
    """
    if request.method == "GET":
        return _tree_response(request, workspace, tree_url=tree_url, can_edit=can_edit)
    if request.method != "POST":
        return HttpResponse(status=405)
    if not can_edit:
        return HttpResponse("a viewer cannot change files", status=403)
    action, path = request.POST.get("action", ""), request.POST.get("path", "")
    try:
        if action == "create":
            created = services.file_create(workspace=workspace, path=path)
            event, detail = "spark:open", {"path": created.path}
        elif action == "rename":
            # The htmx rename button asks with hx-prompt, which arrives as the HX-Prompt header.
            new_path = request.POST.get("new_path") or request.htmx.prompt or ""  # type: ignore[attr-defined]
            renamed = services.file_rename(workspace=workspace, path=path, new_path=new_path)
            event, detail = "spark:renamed", {"path": path, "new_path": renamed.path}
        elif action == "delete":
            services.file_delete(workspace=workspace, path=path)
            event, detail = "spark:deleted", {"path": path}
        else:
            raise WorkspaceError(ApiCode.BAD_ACTION, f"unknown action {action[:40]!r}")
    except WorkspaceError as exc:
        return _tree_response(request, workspace, tree_url=tree_url, can_edit=can_edit, error=exc.message)
    response = _tree_response(request, workspace, tree_url=tree_url, can_edit=can_edit)
    # After the swap: htmx then fires it on the body when the button that asked is no longer in
    # the page (a file's rename or delete button: this answer's files replaced it), where a
    # plain HX-Trigger event would reach nobody; the new-file form stays, and it bubbles up.
    return trigger_client_event(response, event, detail, after="swap")
