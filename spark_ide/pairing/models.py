"""Live sessions on a workspace, who takes part in them, and the turns of the model."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from spark_ide.workspaces.models import Workspace


class Role(models.TextChoices):
    OWNER = "owner"
    COLLABORATOR = "collaborator"
    VIEWER = "viewer"


class Session(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sessions")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # Invite links: whoever opens one (signed in) joins with that role.
    viewer_key = models.CharField(max_length=64, unique=True)
    collaborator_key = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["-created_at"]


class Participant(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=16, choices=Role.choices)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "user"], name="one_role_per_session")]


class TurnStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    STEERED = "steered"
    FAILED = "failed"


class Turn(models.Model):
    """One prompt to the model and everything it produced."""

    id = models.CharField(primary_key=True, max_length=32)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    prompt = models.TextField()
    effort = models.CharField(max_length=8, default="medium")
    active_path = models.CharField(max_length=1024, blank=True)
    status = models.CharField(max_length=16, choices=TurnStatus.choices, default=TurnStatus.QUEUED)
    steered_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    output = models.TextField(blank=True)
    ledger = models.JSONField(default=list)
    diff = models.JSONField(default=dict)  # path -> unified diff of the turn's changes
    metrics = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    reverted = models.BooleanField(default=False)

    class Meta:
        ordering = ["created_at"]
