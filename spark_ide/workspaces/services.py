"""Workspace operations: plain, typed functions; views and the API are thin wrappers."""

from __future__ import annotations

import io
import uuid
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from spark_ide.api_errors import ApiCode
from spark_ide.editing.limits import too_many_files
from spark_ide.editing.paths import BadPath, clean_path, path_conflict
from spark_ide.guard import GuardMode
from spark_ide.upstream.catalogue import ModelEntry

from . import catalogue as model_catalogue
from . import ports
from .documents import (
    NotLive,
    document_file_changed,
    document_file_rename,
    document_file_replace_if,
    files_materialize,
    live_texts,
)
from .languages import language_for
from .models import File, Workspace


class WorkspaceError(Exception):
    """A refused operation; ``code`` is stable (the API and UI show it)."""

    def __init__(self, code: ApiCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class ImportReport:
    workspace: Workspace
    imported: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def checked_path(raw: str) -> str:
    try:
        return clean_path(raw, max_length=settings.SPARK_MAX_PATH_LENGTH)
    except BadPath as exc:
        raise WorkspaceError(ApiCode.BAD_PATH, f"bad path {raw[:80]!r}: {exc}") from None


def decoded_text(data: bytes | str, *, path: str) -> str:
    """File content as text: within the size cap and valid UTF-8, else a clear refusal."""
    raw = data.encode() if isinstance(data, str) else data
    limit = settings.SPARK_MAX_FILE_BYTES
    if len(raw) > limit:
        raise WorkspaceError(ApiCode.FILE_TOO_LARGE, f"{path} is larger than the limit of {limit} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkspaceError(
            ApiCode.NOT_UTF8, f"{path} is not UTF-8 text (byte {exc.start}); only text files are kept"
        ) from None


def workspace_for(*, user: User, workspace_id: str | uuid.UUID) -> Workspace:
    """The user's workspace; someone else's is reported as missing, not as forbidden."""
    try:
        return Workspace.objects.get(pk=uuid.UUID(str(workspace_id)), owner=user)
    except (ValueError, Workspace.DoesNotExist):
        raise WorkspaceError(ApiCode.NOT_FOUND, f"no workspace {workspace_id}") from None


def file_get(*, workspace: Workspace, path: str) -> File:
    try:
        return workspace.files.get(path=checked_path(path))
    except File.DoesNotExist:
        raise WorkspaceError(ApiCode.NOT_FOUND, f"no file {path} in this workspace") from None


def file_row(*, workspace: Workspace, path: str) -> File:
    """The file's row to change (rename, delete). The rows follow a live document a moment
    after it changes (``files_materialize``, on the room's refresh): a file the document holds
    whose row is not there yet, or not any more (a refresh that began before the last rename
    and wrote after it), is brought in line first, from the document as it is now."""
    try:
        return file_get(workspace=workspace, path=path)
    except WorkspaceError:
        live = live_texts(workspace.id)
        if live is None or checked_path(path) not in live:
            raise
    files_materialize(workspace.id, live)
    return file_get(workspace=workspace, path=path)


def file_text(*, workspace: Workspace, path: str) -> str:
    """The file's current text: from the live document when one is held, else stored."""
    clean = checked_path(path)
    live = live_texts(workspace.id)
    if live is None:
        return file_get(workspace=workspace, path=clean).text
    if clean not in live:
        raise WorkspaceError(ApiCode.NOT_FOUND, f"no file {clean} in this workspace")
    return live[clean]


def file_listing(workspace: Workspace) -> list[dict[str, object]]:
    """Path, size and language of every file, as the live document has them when held."""
    live = live_texts(workspace.id)
    if live is None:
        rows = workspace.files.values_list("path", "size", "language")
        return [{"path": path, "size": size, "language": language} for path, size, language in rows]
    return [
        {"path": path, "size": len(text.encode()), "language": language_for(path)}
        for path, text in sorted(live.items())
    ]


def last_changed_path(workspace: Workspace) -> str:
    """The path of the file changed last (its stored row, which the room keeps in step with
    the live document), or "" for an empty workspace: where someone who joins lands when
    nobody is at work in it."""
    found = workspace.files.order_by("-updated_at", "path").values_list("path", flat=True).first()
    return str(found) if found is not None else ""


def _file_limit_check(workspace: Workspace, adding: int) -> None:
    too_many = too_many_files(settings.SPARK_MAX_WORKSPACE_FILES, workspace.files.count(), adding)
    if too_many is not None:
        raise WorkspaceError(ApiCode.TOO_MANY_FILES, too_many)


def archived_copy(workspace_id: uuid.UUID) -> bool:
    """Whether the workspace is a student's copy in an archived course: read-only for everyone
    (``pairing.services.role_for`` makes them viewers; the file API refuses changes)."""
    return ports.courses().archived(workspace_id)


def guard_mode_for(workspace_id: uuid.UUID, *, course: bool = True) -> str:
    """The watchdog's mode for a workspace: its course's for a student's copy (a course's rules
    win over its students'), else its own; a workspace that is gone: halt. ``course=False``:
    the caller knows it is no student's copy (the course is not looked for)."""
    by_course = ports.courses().guard_mode(workspace_id) if course else None
    if by_course is not None:
        return by_course
    mode = Workspace.objects.filter(pk=workspace_id).values_list("guard_mode", flat=True).first()
    return str(mode) if mode is not None else GuardMode.HALT.value


def guard_mode_by_course(workspace_id: uuid.UUID) -> bool:
    """Whether a course sets the workspace's watchdog mode (a student's copy: not its owner)."""
    return ports.courses().guard_mode(workspace_id) is not None


def auto_test_for(workspace_id: uuid.UUID) -> bool | None:
    """The workspace's own choice of test rounds (``Workspace.auto_test``); None when it made
    none (or is gone): the server's ``SPARK_AUTO_TEST`` decides."""
    choice = Workspace.objects.filter(pk=workspace_id).values_list("auto_test", flat=True).first()
    return None if choice is None else bool(choice)


def auto_test_effective(choice: bool | None) -> bool:
    """Whether test rounds run with the workspace's ``choice``: it, else the server's default."""
    return bool(settings.SPARK_AUTO_TEST) if choice is None else choice


def auto_test_set(*, workspace: Workspace, value: object) -> bool | None:
    """Set the workspace's choice of test rounds: true, false, or None to follow the server
    (``updated_at`` stays: no file changed). The room reads it for every turn."""
    if value is not None and not isinstance(value, bool):
        raise WorkspaceError(
            ApiCode.BAD_FIELD, f"'auto_test' must be true, false or null (the server's default), not {value!r:.60}",
        )
    Workspace.objects.filter(pk=workspace.pk).update(auto_test=value)
    workspace.auto_test = value
    return value


def model_set(*, workspace: Workspace, value: object) -> ModelEntry:
    """Run the workspace's next turns on the catalogue's model ``value`` (its course's models
    only, for a student's copy); its room, if open, warms that model's socket now."""
    if not isinstance(value, str) or not value.strip():
        names = ", ".join(model_catalogue.catalogue().names)
        raise WorkspaceError(ApiCode.BAD_FIELD, f"'model' must be the name of one of the server's models ({names})")
    try:
        entry = model_catalogue.check_choice(workspace.pk, value.strip())
    except model_catalogue.UnknownModel as exc:
        raise WorkspaceError(ApiCode(exc.code), exc.message) from None
    Workspace.objects.filter(pk=workspace.pk).update(model=entry.name)
    workspace.model = entry.name
    transaction.on_commit(lambda: ports.rooms().model_changed(workspace.pk))
    return entry


def check_writable(workspace: Workspace) -> None:
    if archived_copy(workspace.pk):
        raise WorkspaceError(ApiCode.READ_ONLY, "this workspace is a copy in an archived course: it is read-only")


class _Any:
    """``file_write``'s default ``expected``: whatever the file holds."""


ANY_TEXT = _Any()


def file_write(
    *, workspace: Workspace, path: str, data: bytes | str, expected: str | _Any | None = ANY_TEXT
) -> tuple[File, bool]:
    """Create or replace a file; returns it and whether it was created. With ``expected``,
    only if the file holds that text (None: there is no such file) when it is written, in the
    live document when one is open (where someone may be typing), else in storage; otherwise
    ``changed``, and nothing is written."""
    clean = checked_path(path)
    text = decoded_text(data, path=clean)
    with transaction.atomic():
        existing = workspace.files.select_for_update().filter(path=clean).first()
        stored = None if existing is None else existing.text
        if existing is None:
            _file_limit_check(workspace, 1)
            _path_conflict_check(workspace, clean)
            existing = File(workspace=workspace, path=clean, language=language_for(clean))
            created = True
        else:
            created = False
        # After the checks: a live document's change is not undone with this transaction.
        if not isinstance(expected, _Any):
            done = document_file_replace_if(workspace, clean, text, expected)
            if done is None:  # never opened live: the row is the truth
                done = stored == expected
            if not done:
                raise WorkspaceError(ApiCode.CHANGED, f"{clean} changed since it was read")
        existing.text = text
        existing.size = len(text.encode())
        existing.save()
        workspace.save(update_fields=["updated_at"])
        if isinstance(expected, _Any):
            document_file_changed(workspace, clean, text)
    return existing, created


def file_create(*, workspace: Workspace, path: str) -> File:
    """A new empty file; refuses to overwrite one that exists, in the live document too: the
    model may have written it a moment ago, before its row follows (``files_materialize``)."""
    clean = checked_path(path)
    exists = WorkspaceError(ApiCode.EXISTS, f"{clean} already exists")
    if workspace.files.filter(path=clean).exists():
        raise exists
    try:
        return file_write(workspace=workspace, path=clean, data=b"", expected=None)[0]
    except WorkspaceError as exc:
        if exc.code == ApiCode.CHANGED:
            raise exists from None
        raise


def _path_conflict_check(workspace: Workspace, path: str) -> None:
    """The rule every write obeys (``editing.paths.path_conflict``), over the stored paths."""
    conflict = path_conflict(path, set(workspace.files.values_list("path", flat=True)))
    if conflict is not None:
        raise WorkspaceError(ApiCode.PATH_CONFLICT, conflict)


def file_delete(*, workspace: Workspace, path: str) -> None:
    found = file_row(workspace=workspace, path=path)
    with transaction.atomic():
        found.delete()
        workspace.save(update_fields=["updated_at"])
        document_file_changed(workspace, found.path, None)


def file_rename(*, workspace: Workspace, path: str, new_path: str) -> File:
    file = file_row(workspace=workspace, path=path)
    clean = checked_path(new_path)
    if clean == file.path:
        return file
    if workspace.files.filter(path=clean).exists():
        raise WorkspaceError(ApiCode.EXISTS, f"{clean} already exists")
    _path_conflict_check(workspace, clean)
    old_path = file.path
    file.path = clean
    file.language = language_for(clean)
    try:
        with transaction.atomic():
            file.save()
            # After the row: a live document's change is not undone with this transaction.
            moved = document_file_rename(workspace, old_path, clean)
            if moved is None:
                raise WorkspaceError(
                    ApiCode.CHANGED, f"{old_path} was renamed or deleted meanwhile, or {clean} created"
                )
            if not isinstance(moved, NotLive) and moved != file.text:
                file.text, file.size = moved, len(moved.encode())
                file.save(update_fields=["text", "size", "updated_at"])
    except IntegrityError:
        raise WorkspaceError(ApiCode.EXISTS, f"{clean} already exists") from None
    return file


def _workspace_limit_check(owner: User) -> None:
    """SPARK_MAX_WORKSPACES_PER_USER: a script creating workspaces in a loop stops there (each
    holds rows, a document, and a room when opened). Course copies count too."""
    limit = settings.SPARK_MAX_WORKSPACES_PER_USER
    if Workspace.objects.filter(owner=owner).count() >= limit:
        raise WorkspaceError(
            ApiCode.TOO_MANY_WORKSPACES, f"you have {limit} workspaces, the most one person may hold: delete one first"
        )


def workspace_create(
    *, owner: User, name: str, files: dict[str, str] | None = None
) -> Workspace:
    """A new workspace with the given files; all-or-nothing."""
    name = name.strip()
    if not name or len(name) > 200:
        raise WorkspaceError(ApiCode.BAD_NAME, "a workspace name is 1 to 200 characters")
    files = files or {}
    if (too_many := too_many_files(settings.SPARK_MAX_WORKSPACE_FILES, 0, len(files))) is not None:
        raise WorkspaceError(ApiCode.TOO_MANY_FILES, too_many)
    with transaction.atomic():
        _workspace_limit_check(owner)
        workspace = Workspace.objects.create(owner=owner, name=name)
        for path, text in files.items():
            if not isinstance(text, str):
                raise WorkspaceError(ApiCode.BAD_FILE, f"the content of {path[:80]!r} must be a string")
            file_write(workspace=workspace, path=path, data=text)
    return workspace


def workspace_import(
    *, owner: User, name: str, entries: Iterable[tuple[str, bytes]]
) -> ImportReport:
    """A new workspace from (path, bytes) pairs, e.g. an uploaded folder.

    Binary or oversized files and bad paths are skipped and reported, not fatal: a course
    folder with a PNG in it should still import its code.
    """
    with transaction.atomic():
        report = ImportReport(workspace=workspace_create(owner=owner, name=name))
        for path, data in entries:
            try:
                file_write(workspace=report.workspace, path=path, data=data)
            except WorkspaceError as exc:
                if exc.code == "too_many_files":
                    raise
                report.skipped.append((path, exc.message))
            else:
                report.imported.append(path)
    return report


def zip_entries(data: bytes) -> list[tuple[str, bytes]]:
    """The files of a zip archive, guarded against zip bombs; a common top folder is dropped."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise WorkspaceError(ApiCode.BAD_ZIP, "the upload is not a zip archive") from None
    members = [info for info in archive.infolist() if not info.is_dir()]
    if (too_many := too_many_files(settings.SPARK_MAX_WORKSPACE_FILES, 0, len(members))) is not None:
        raise WorkspaceError(ApiCode.TOO_MANY_FILES, too_many)
    total = sum(info.file_size for info in members)
    if total > settings.SPARK_MAX_IMPORT_BYTES:
        raise WorkspaceError(ApiCode.IMPORT_TOO_LARGE, f"the archive unpacks to {total} bytes")
    entries = []
    for info in members:
        with archive.open(info) as member:
            entries.append((info.filename, bounded_read(member)))
    return strip_common_folder(entries)


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def bounded_read(upload: Readable) -> bytes:
    """At most one byte over the file size cap: enough for file_write to refuse it as too large,
    never a whole oversized upload in memory."""
    return upload.read(settings.SPARK_MAX_FILE_BYTES + 1)


def strip_common_folder(entries: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``proj/a.py, proj/b.py`` -> ``a.py, b.py`` (an uploaded folder or a zipped folder)."""
    firsts = {path.split("/", 1)[0] for path, _ in entries}
    if len(firsts) == 1 and all("/" in path for path, _ in entries):
        return [(path.split("/", 1)[1], data) for path, data in entries]
    return entries


def workspace_export_zip(*, workspace: Workspace) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in workspace.files.all():
            archive.writestr(file.path, file.text)
    return buffer.getvalue()


def workspace_summary(workspace: Workspace) -> dict[str, object]:
    return {
        "id": str(workspace.id),
        "name": workspace.name,
        "files": file_listing(workspace),
        "auto_test": workspace.auto_test,  # test rounds: true, false, or null for the server's default
        # The catalogue's model its turns run on, and those it may pick (docs/models.md).
        "model": model_catalogue.entry_for(workspace.pk).name,
        "models": [entry.name for entry in model_catalogue.choices_for(workspace.pk)],
    }
