"""Sessions, participants and turn records: plain typed functions over the database."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from spark_ide.workspaces.models import Workspace

from .models import Participant, Role, Session, Turn, TurnStatus


class SessionError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def session_create(*, workspace: Workspace, by: User) -> Session:
    with transaction.atomic():
        session = Session.objects.create(
            workspace=workspace,
            created_by=by,
            viewer_key=secrets.token_urlsafe(24),
            collaborator_key=secrets.token_urlsafe(24),
        )
        Participant.objects.create(session=session, user=by, role=Role.OWNER)
    return session


def session_get(session_id: str | uuid.UUID) -> Session:
    try:
        return Session.objects.select_related("workspace").defer("workspace__ydoc").get(pk=uuid.UUID(str(session_id)))
    except (ValueError, Session.DoesNotExist):
        raise SessionError("not_found", f"no session {session_id}") from None


def role_for(*, session: Session, user: Any) -> str | None:
    """The user's role in the session (the workspace owner is always owner), or None."""
    if not getattr(user, "is_authenticated", False):
        return None
    if session.workspace.owner_id == user.pk:
        return Role.OWNER.value
    found = Participant.objects.filter(session=session, user=user).values_list("role", flat=True).first()
    return str(found) if found else None


def session_join(*, session: Session, user: User, key: str) -> str:
    """Join through an invite link; a collaborator link upgrades a viewer. Returns the role."""
    current = role_for(session=session, user=user)
    if current == Role.OWNER:
        return current
    if secrets.compare_digest(key, session.collaborator_key):
        granted = Role.COLLABORATOR
    elif secrets.compare_digest(key, session.viewer_key):
        granted = Role.VIEWER
    else:
        raise SessionError("bad_invite", "this invite link is not valid for the session")
    if current == Role.COLLABORATOR:
        return current
    Participant.objects.update_or_create(session=session, user=user, defaults={"role": granted})
    return granted.value


def turn_create(
    *, turn_id: str, session_id: uuid.UUID, author_id: int | None, prompt: str, effort: str,
    active_path: str, steered_from: str | None,
) -> None:
    Turn.objects.create(
        id=turn_id, session_id=session_id, author_id=author_id, prompt=prompt, effort=effort,
        active_path=active_path, steered_from_id=steered_from, status=TurnStatus.RUNNING,
    )


def turn_finish(
    *, turn_id: str, status: str, output: str, ledger: list[dict[str, Any]], diff: dict[str, str],
    metrics: dict[str, Any], error: str = "",
) -> None:
    Turn.objects.filter(pk=turn_id).update(
        status=status, output=output, ledger=ledger, diff=diff, metrics=metrics, error=error,
        finished_at=timezone.now(),
    )


def turn_mark_reverted(turn_id: str) -> None:
    Turn.objects.filter(pk=turn_id).update(reverted=True)


def turns_for(session: Session) -> list[dict[str, Any]]:
    return [
        {
            "id": t.id, "prompt": t.prompt, "status": t.status, "steered_from": t.steered_from_id,
            "effort": t.effort, "metrics": t.metrics, "reverted": t.reverted,
            "created_at": t.created_at.isoformat(),
        }
        for t in Turn.objects.filter(session=session)
    ]
