"""Live sessions on a workspace, who takes part in them, and the turns of the model."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from spark_ide.live.events import Role, TurnStatus
from spark_ide.workspaces.models import Workspace

__all__ = [
    "Checkpoint", "CheckpointBlob", "Participant", "Removal", "Role", "Room", "RoomEvent", "Run", "Session", "Turn",
    "TurnStatus",
]

ROLE_CHOICES = [(role.value, role.value) for role in Role]
STATUS_CHOICES = [(status.value, status.value) for status in TurnStatus]


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
    role = models.CharField(max_length=16, choices=ROLE_CHOICES)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "user"], name="one_role_per_session")]


class Removal(models.Model):
    """Someone the owner removed from a session, and the invite keys the session had then: those
    links no longer let them in (a new link the owner makes does, as does **Let back in**)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="removals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key_digests = models.JSONField(default=list)  # sha256 hex of each invite key at the removal
    removed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "user"], name="one_removal_per_session")]


class Turn(models.Model):
    """One prompt to the model and everything it produced."""

    id = models.CharField(primary_key=True, max_length=32)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    prompt = models.TextField()
    effort = models.CharField(max_length=8, default="medium")
    model = models.CharField(max_length=64, blank=True)  # the catalogue entry's name it ran on (docs/models.md)
    active_path = models.CharField(max_length=1024, blank=True)
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=TurnStatus.RUNNING)
    reason = models.CharField(max_length=32, blank=True)  # live.events.FinishReason
    steered_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    output = models.TextField(blank=True)
    ledger = models.JSONField(default=list)
    diff = models.JSONField(default=dict)  # path -> unified diff of the turn's changes
    metrics = models.JSONField(default=dict)
    # What it used (live.usage): tokens from the provider's usage, or estimated (``usage_estimated``);
    # input counts the cached input too; the cost by the model's prices (null: unknown).
    input_tokens = models.PositiveBigIntegerField(default=0)
    cached_input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    usage_estimated = models.BooleanField(default=False)
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    reverted = models.BooleanField(default=False)
    # When it was reverted (null: it is not): it can be restored until a later turn starts.
    reverted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        # The Usage page and the daily budget: a person's turns by day.
        indexes = [models.Index(fields=["author", "created_at"], name="turn_author_day")]


class Run(models.Model):
    """A code run in the sandbox (``python path`` or the tests) and what it printed."""

    RUNNING = "running"

    id = models.CharField(primary_key=True, max_length=32)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    path = models.CharField(max_length=1024, blank=True)
    tests = models.BooleanField(default=False)
    command = models.TextField(blank=True)  # as run: "pytest -x -q", "python main.py 3" (up to 2,000 characters)
    by_model = models.BooleanField(default=False)  # the model's run tool, or the IDE's test round
    turn = models.CharField(max_length=32, blank=True)  # the model's turn it ran for ("" for a person's)
    status = models.CharField(max_length=20, default=RUNNING)  # then a sandbox RunStatus
    exit_code = models.IntegerField(null=True, blank=True)
    duration_ms = models.IntegerField(default=0)
    output = models.TextField(blank=True)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    @property
    def shown_command(self) -> str:
        """The command as the history and the dashboard show it: as run, or for a record that
        has none (a person's run recorded before commands were kept) as its Run button ran it."""
        if self.command:
            return self.command
        return "pytest" if self.tests else f"python {self.path}"


class Room(models.Model):
    """The live room of a workspace: how many times it has been opened (its epoch)."""

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, primary_key=True, related_name="room")
    epoch = models.PositiveIntegerField(default=0)


class RoomEvent(models.Model):
    """The room's turn-event log (live.events turn events): replay on reconnect, the
    transcript after a reload, the session replay. A merged run of deltas is one row from
    ``first_seq`` to ``seq``, published from ``at`` to ``until``."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="room_events")
    seq = models.BigIntegerField()
    first_seq = models.BigIntegerField()
    turn = models.CharField(max_length=32)
    kind = models.CharField(max_length=32)
    data = models.JSONField()
    # When it was published, ms since the Unix epoch (null: stored before times were kept);
    # ``until``: when the last part of a merged run was (null for a single event: ``at``).
    at = models.BigIntegerField(null=True, blank=True)
    until = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["workspace", "seq"], name="one_event_per_seq")]
        indexes = [models.Index(fields=["workspace", "turn"])]


class CheckpointBlob(models.Model):
    """One text checkpoints refer to (a file's, a bucket of paths, a past turn's), kept once per
    workspace under the sha256 of its UTF-8 (``live.checkpoints``). ``used``: the number of a
    checkpoint that uses it, at most half the retention behind the newest that does
    (``live.checkpoints.plan_save``: what pruning reads)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64)
    text = models.TextField()
    used = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "key"], name="one_blob_per_key")]
        indexes = [models.Index(fields=["workspace", "used"])]


class Checkpoint(models.Model):
    """The workspace's files and the model's conversation at a moment (``live.checkpoints``):
    ``manifest`` the keys of its buckets of paths, ``history`` the past turns' blob keys,
    oldest first. ``number`` counts the workspace's checkpoints (1, 2, ...); the newest
    ``SPARK_CHECKPOINTS_KEEP`` of a workspace are kept."""

    checkpoint = models.CharField(max_length=32, unique=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="checkpoints")
    number = models.BigIntegerField()
    kind = models.CharField(max_length=16)  # live.checkpoints.CheckpointKind
    turn = models.CharField(max_length=32, blank=True)  # the turn it was taken before
    prompt = models.TextField(blank=True)  # the start of that turn's prompt
    name = models.CharField(max_length=200, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    author_name = models.CharField(max_length=150, blank=True)  # as the author was called then
    manifest = models.JSONField(default=list)
    files = models.PositiveIntegerField(default=0)  # how many (the panel says so)
    history = models.JSONField(default=list)
    ledger = models.TextField(blank=True)
    at = models.BigIntegerField()  # ms since the Unix epoch

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["workspace", "number"], name="one_checkpoint_per_number")]
