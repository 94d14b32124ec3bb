"""Compaction folds the document's updates into one state; its history keeps them, with
checkpoints now and then, so every state the document went through can be rebuilt."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pycrdt import Doc

from spark_ide.editing.document import document_from_texts, document_texts, set_file_text
from spark_ide.replay import history
from spark_ide.replay.models import Checkpoint, HistoryUpdate
from spark_ide.replay.services import document_history, replay_data
from spark_ide.workspaces.documents import document_append, document_compact, document_load, document_replace
from spark_ide.workspaces.models import DocumentUpdate, Workspace
from spark_ide.workspaces.services import workspace_create
from tests.replay.conftest import document_holding, document_rebuilt

pytestmark = pytest.mark.django_db


def _edit(workspace: Workspace, doc: Doc[Any], path: str, text: str) -> int:
    """Change the document and persist the change, as a room does."""
    before = doc.get_state()
    set_file_text(doc, path, text, "test")
    return document_append(workspace.id, doc.get_update(before))


def test_every_state_survives_compaction(user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history, "CHECKPOINT_UPDATES", 5)
    workspace = workspace_create(owner=user, name="w", files={"a.py": "a = 0\n"})
    doc = document_load(workspace.id)  # opened live: the history starts here
    seen = [document_texts(doc)]
    for i in range(1, 24):
        update_id = _edit(workspace, doc, "a.py" if i % 3 else f"pkg/m{i}.py", f"a = {i}\n" * i)
        seen.append(document_texts(doc))
        if i % 4 == 0:
            # The live state handed to compaction may hold a change not persisted yet: the
            # history's checkpoints must not (they are the document as it was at an update).
            ahead: Doc[Any] = Doc()
            ahead.apply_update(doc.get_update())
            set_file_text(ahead, "a.py", "not persisted yet\n", "test")
            document_compact(workspace.id, ahead.get_update(), through_id=update_id)

    assert DocumentUpdate.objects.count() == 3  # the updates since the last compaction
    assert HistoryUpdate.objects.count() == 20  # the rest moved, none lost
    assert Checkpoint.objects.count() == 3  # the start, then at the first compaction 5 updates on
    data = replay_data(workspace.id)
    assert len(data["updates"]) == 23
    for count, texts in enumerate(seen):
        assert document_holding(data, count) == texts, count
    assert [checkpoint["n"] for checkpoint in data["checkpoints"]] == [0, 8, 16]
    assert all(b[0] >= a[0] for a, b in zip(data["updates"], data["updates"][1:], strict=False))


def test_a_document_opened_before_history_was_kept_starts_its_history_at_a_compaction(user: Any) -> None:
    workspace = workspace_create(owner=user, name="w", files={"a.py": "a = 0\n"})
    doc = document_load(workspace.id)
    _edit(workspace, doc, "a.py", "a = 1\n")
    Checkpoint.objects.all().delete()  # as if history started after this workspace was opened
    last = _edit(workspace, doc, "a.py", "a = 2\n")
    document_compact(workspace.id, doc.get_update(), through_id=last)
    after = _edit(workspace, doc, "a.py", "a = 3\n")
    data = replay_data(workspace.id)
    assert [checkpoint["n"] for checkpoint in data["checkpoints"]] == [0]
    assert len(data["updates"]) == 1 and DocumentUpdate.objects.get().pk == after
    assert document_holding(data, 0) == {"a.py": "a = 2\n"}
    assert document_holding(data, 1) == {"a.py": "a = 3\n"}


def test_a_workspace_never_opened_live_has_nothing_to_replay(user: Any) -> None:
    workspace = workspace_create(owner=user, name="w", files={"a.py": "a = 0\n"})
    assert replay_data(workspace.id) == {
        "start": None, "end": 0, "checkpoints": [], "updates": [], "events": [], "marks": [],
    }


def test_a_replacement_starts_the_document_over(user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history, "CHECKPOINT_UPDATES", 3)
    workspace = workspace_create(owner=user, name="w", files={"a.py": "a = 0\n"})
    old = document_load(workspace.id)
    seen = [document_texts(old)]
    for i in (1, 2):
        last = _edit(workspace, old, "a.py" if i % 2 else "b.py", f"a = {i}\n" * 50)
        seen.append(document_texts(old))
    document_compact(workspace.id, old.get_update(), through_id=last)  # 2 updates: no checkpoint due

    new = document_from_texts(document_texts(old), "test")
    state = new.get_update()
    document_replace(workspace.id, state, generation=1, previous=old.get_update())
    seen.append(document_texts(new))
    replaced = new.get_state()
    replacement = HistoryUpdate.objects.get(fresh=True)  # moved as it was, marked
    assert bytes(replacement.data) == state
    assert replacement.id == max(HistoryUpdate.objects.values_list("id", flat=True))
    assert not DocumentUpdate.objects.exists()
    assert Checkpoint.objects.count() == 1  # a replacement is a whole document: no checkpoint for it alone

    for i in (3, 4, 5):
        last = _edit(workspace, new, "a.py", f"a = {i}\n" * 50)
        seen.append(document_texts(new))
    document_compact(workspace.id, new.get_update(), through_id=last)  # 3 updates since the replacement

    checkpoint = Checkpoint.objects.order_by("through").last()
    assert checkpoint is not None and checkpoint.through == last
    built: Doc[Any] = Doc()
    built.apply_update(bytes(checkpoint.state))
    assert document_texts(built) == document_texts(new)
    # Built from the new document alone: none of the old one's items (their client) are in it.
    assert built.get_state() == new.get_state() != old.get_state()
    assert len(checkpoint.state) < len(state) + 200  # the new document and three small edits

    assert [update.fresh for update in document_history(workspace.id)[1]] == [False, False, True, False, False, False]
    data = replay_data(workspace.id)
    assert [len(update) for update in data["updates"]] == [2, 2, 3, 2, 2, 2]
    assert data["updates"][2][1:] == [base64.b64encode(state).decode("ascii"), 1]
    assert [checkpoint["n"] for checkpoint in data["checkpoints"]] == [0, 6]
    for count, texts in enumerate(seen):
        assert document_texts(document_rebuilt(data, count)) == texts, count
    assert document_rebuilt(data, 3).get_state() == replaced  # a replay starts over there too
