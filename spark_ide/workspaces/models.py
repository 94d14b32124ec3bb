"""A workspace is a named set of UTF-8 text files owned by one user."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from spark_ide.guard.modes import GuardMode


class WorkspaceManager(models.Manager["Workspace"]):
    """Leaves the document blob out of every query unless asked (``defer(None)``): listings and
    permission checks must not carry a whole document's state."""

    def get_queryset(self) -> models.QuerySet[Workspace]:
        return super().get_queryset().defer("ydoc")


# The watchdog's modes as a form's choices (the modes are ``guard.GuardMode``'s).
GUARD_MODE_CHOICES = [(mode.value, mode.label) for mode in GuardMode]


class Workspace(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspaces")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The live document (pycrdt/Yjs) as a compacted update; later changes are DocumentUpdate
    # rows. Null until the workspace is first opened live: then it is built from the files.
    ydoc = models.BinaryField(null=True, blank=True)
    # Which document ``ydoc`` is: a room replaces its document by one rebuilt from the text
    # (fresh item ids, without the deleted items a long-lived one keeps), one more each time.
    # The one before is kept whole, so that a page that held it can still send what it typed
    # offline (``live.room``, "Replacing the document").
    generation = models.PositiveIntegerField(default=0)
    previous_ydoc = models.BinaryField(null=True, blank=True)
    # Anyone may read the files at the public page (``public.py``) while this is on; off by default.
    public = models.BooleanField(default=False)
    # The watchdog's mode; halt by default, so a new user is protected without configuring anything.
    # A course's mode wins over its students' copies (``services.guard_mode_for``).
    guard_mode = models.CharField(max_length=8, choices=GUARD_MODE_CHOICES, default=GuardMode.HALT.value)
    # Test rounds (issue 30): after the model's changes the IDE runs the tests and has it fix a
    # failure. True or False: this workspace's own choice (the live page's switch, the API's
    # PATCH); None: the server's SPARK_AUTO_TEST decides.
    auto_test = models.BooleanField(null=True, default=None)
    # The catalogue's model the room's turns run on (issue 34; docs/models.md): an entry's name,
    # picked by the owner (the live page's picker, the API's PATCH); "": the catalogue's default.
    model = models.CharField(max_length=64, blank=True, default="")

    objects = WorkspaceManager()

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.name


class File(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    text = models.TextField(blank=True)
    size = models.PositiveIntegerField(default=0)
    language = models.CharField(max_length=100)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["workspace", "path"], name="unique_path_per_workspace")]

    def __str__(self) -> str:
        return self.path


class DocumentUpdate(models.Model):
    """One persisted Yjs update of a workspace document, appended in order, compacted away."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="doc_updates")
    data = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)
    # A whole new document (a replacement, new item ids): what came before does not apply to it.
    fresh = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]
