"""A workspace document's history, kept for replay after compaction.

The live document is stored as a compacted state plus the updates since
(``workspaces.DocumentUpdate``); compaction folds the updates into the state and would lose
every moment in between. Before it does, the updates move here with their times, and now and
then a checkpoint (the whole document through one update) is written, so a replay seeks from
the nearest checkpoint before a moment and applies only the updates after it.
"""

from __future__ import annotations

from django.db import models

from spark_ide.workspaces.models import Workspace


class Checkpoint(models.Model):
    """The whole document as one Yjs update, through the update ``through``."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    through = models.BigIntegerField()  # the DocumentUpdate id of the last update it holds (0: none)
    at = models.BigIntegerField()  # ms since the Unix epoch: the document was this from then on
    state = models.BinaryField()

    class Meta:
        ordering = ["through"]
        constraints = [models.UniqueConstraint(fields=["workspace", "through"], name="one_checkpoint_per_update")]


class HistoryUpdate(models.Model):
    """One document update as it was persisted, moved out of the live log by compaction.
    Its id is the ``DocumentUpdate`` id it had: the order they happened in."""

    id = models.BigIntegerField(primary_key=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    at = models.BigIntegerField()  # ms since the Unix epoch: when it was persisted
    data = models.BinaryField()
    fresh = models.BooleanField(default=False)  # a whole new document (``DocumentUpdate.fresh``)

    class Meta:
        ordering = ["id"]
