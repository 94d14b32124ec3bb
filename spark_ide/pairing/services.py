"""Sessions, participants and turn records: plain typed functions over the database."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from spark_ide.live.store import TurnOutcome, TurnRecord
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


def session_for_workspace(*, workspace: Workspace, by: User) -> tuple[Session, bool]:
    """The workspace's live session (the earliest, the one invites point at), made on first use.

    Returns ``(session, created)``. Making one locks the workspace row and looks again, so two
    first visits at once make one session (SQLite's immediate transactions serialise them too).
    """
    existing = _first_session(workspace)
    if existing is not None:
        return existing, False
    with transaction.atomic():
        Workspace.objects.select_for_update().only("id").get(pk=workspace.pk)
        existing = _first_session(workspace)
        if existing is not None:
            return existing, False
        return session_create(workspace=workspace, by=by), True


def _first_session(workspace: Workspace) -> Session | None:
    sessions = Session.objects.select_related("workspace").defer("workspace__ydoc")
    return sessions.filter(workspace=workspace).order_by("created_at", "id").first()


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


def turn_create(record: TurnRecord) -> None:
    Turn.objects.create(
        id=record.turn, session_id=uuid.UUID(record.session), author_id=record.author_id, prompt=record.prompt,
        effort=record.effort, active_path=record.active_path, steered_from_id=record.steered_from,
        status=TurnStatus.RUNNING,
    )


def turn_finish(outcome: TurnOutcome) -> None:
    Turn.objects.filter(pk=outcome.turn).update(
        status=outcome.status, reason=outcome.reason, output=outcome.output, ledger=outcome.ledger,
        diff=outcome.diff, metrics=dict(outcome.metrics), error=outcome.error, finished_at=timezone.now(),
    )


def turn_mark_reverted(turn_id: str) -> None:
    Turn.objects.filter(pk=turn_id).update(reverted=True)


# The turn history lists at most this many turns: the room's latest.
HISTORY_LIMIT = 100


def room_turns(session: Session) -> list[Turn]:
    """The latest turns of every session of the session's workspace, oldest first."""
    latest = Turn.objects.filter(session__workspace_id=session.workspace_id).order_by("-created_at", "-id")
    return list(reversed(latest[:HISTORY_LIMIT]))


def turns_for(session: Session) -> list[dict[str, Any]]:
    return [
        {
            "id": t.id, "prompt": t.prompt, "status": t.status, "steered_from": t.steered_from_id,
            "effort": t.effort, "metrics": t.metrics, "reverted": t.reverted,
            "created_at": t.created_at.isoformat(),
        }
        for t in room_turns(session)
    ]
