"""Sessions, participants and turn records: plain typed functions over the database."""

from __future__ import annotations

import functools
import logging
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from spark_ide.accounts.models import Guest
from spark_ide.accounts.services import guest_create, sha256_hex
from spark_ide.live.store import RunOutcome, RunRecord, TurnOutcome, TurnRecord
from spark_ide.sandbox.control import run_control
from spark_ide.workspaces.models import Workspace
from spark_ide.workspaces.services import archived_copy

from .models import Participant, Removal, Role, Run, Session, Turn, TurnStatus
from .usage import turn_usage

log = logging.getLogger(__name__)


class SessionError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# The roles an invite link gives, and the session field holding each one's key.
INVITE_KEYS = {Role.VIEWER: "viewer_key", Role.COLLABORATOR: "collaborator_key"}


def _invite_key() -> str:
    return secrets.token_urlsafe(24)


def _invite_digests(session: Session) -> list[str]:
    """The digests of the session's invite keys as they are now (a removal bars these)."""
    return [sha256_hex(getattr(session, field)) for field in INVITE_KEYS.values()]


def session_create(*, workspace: Workspace, by: User) -> Session:
    with transaction.atomic():
        session = Session.objects.create(
            workspace=workspace, created_by=by, viewer_key=_invite_key(), collaborator_key=_invite_key()
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
    """The user's role in the session (the workspace owner is always owner), or None.

    A student's copy in an archived course is read-only for everyone: whoever holds a role
    there (the student, anyone they invited, their teacher watching) holds it as a viewer, so
    the page, the socket and the API all open it for reading and refuse edits, prompts and runs.
    """
    if not getattr(user, "is_authenticated", False):
        return None
    owner = session.workspace.owner_id
    held = None if owner == user.pk else (
        Participant.objects.filter(session=session, user=user).values_list("role", flat=True).first())
    return _role(user.pk, owner, held, session.workspace_id)


def _role(user_id: int, owner_id: int, held: str | None, workspace_id: uuid.UUID) -> str | None:
    """``role_for``'s rule, from what it read: the workspace's owner, and the role ``user_id``
    holds as a participant (None: none)."""
    if owner_id == user_id:
        role = Role.OWNER.value
    elif not held:
        return None
    else:
        role = str(held)
    if role != Role.VIEWER and archived_copy(workspace_id):
        return Role.VIEWER.value
    return role


@dataclass(frozen=True)
class SocketPlace:
    """What a session socket's connect needs of its session (``socket_place``)."""

    id: uuid.UUID
    workspace_id: uuid.UUID


def socket_place(session_id: str, user: Any) -> tuple[SocketPlace | None, str | None]:
    """The session a socket connects to and the user's role in it (``role_for``), in one
    statement (and ``archived_copy``'s, for a role above viewer): (None, None) for no such
    session. A reconnect storm (a server restart: every page at once) makes one per socket;
    through the ORM, the session, then the participant, cost some 0.6 ms of query building on
    the one thread every socket's lookups share, ten times this."""
    try:
        wanted = uuid.UUID(str(session_id))
    except ValueError:
        return None, None
    if not getattr(user, "is_authenticated", False):
        return None, None
    with connection.cursor() as cursor:
        cursor.execute(_place_sql(), [user.pk, Session._meta.pk.get_db_prep_value(wanted, connection)])
        found = cursor.fetchone()
    if found is None:
        return None, None
    workspace_value, owner_id, held = found
    workspace_id = Workspace._meta.pk.to_python(workspace_value)  # SQLite keeps it as hex text
    return SocketPlace(wanted, workspace_id), _role(user.pk, owner_id, held, workspace_id)


@functools.cache
def _place_sql() -> str:
    """``socket_place``'s statement, named from the models (their tables and columns)."""
    quote = connection.ops.quote_name
    session, workspace, participant = Session._meta, Workspace._meta, Participant._meta

    def column(meta: Any, field: str) -> str:
        return quote(meta.get_field(field).column)

    on_workspace = f"w.{column(workspace, 'id')} = s.{column(session, 'workspace')}"
    on_participant = (f"p.{column(participant, 'session')} = s.{column(session, 'id')} "
                      f"AND p.{column(participant, 'user')} = %s")
    return (
        f"SELECT s.{column(session, 'workspace')}, w.{column(workspace, 'owner')}, p.{column(participant, 'role')} "  # noqa: S608
        f"FROM {quote(session.db_table)} s JOIN {quote(workspace.db_table)} w ON {on_workspace} "
        f"LEFT JOIN {quote(participant.db_table)} p ON {on_participant} WHERE s.{column(session, 'id')} = %s"
    )


class SessionMembers:
    """``workspaces.ports.Members``: the role someone other than the owner holds in a
    workspace, in its live session (the earliest, the one invites point at)."""

    def role(self, workspace_id: uuid.UUID, user_id: int) -> str | None:
        held = Participant.objects.filter(session__workspace_id=workspace_id, user_id=user_id)
        found = held.order_by("session__created_at", "session_id").values_list("role", flat=True).first()
        return None if found is None else str(found)


def invite_role(*, session: Session, key: str) -> Role:
    """The role an invite key gives in the session; ``bad_invite`` for any other key."""
    for role, field in INVITE_KEYS.items():
        if secrets.compare_digest(key.encode(), getattr(session, field).encode()):
            return role
    raise SessionError("bad_invite", "this invite link is not valid for the session: ask for a new one")


def join_grants(*, session: Session, user: User, key: str) -> tuple[str | None, Role | None]:
    """What an invite link would do for a signed-in user: the role they hold now, and the role
    joining grants (None: it changes nothing, as for the owner, a collaborator, or a viewer
    opening a viewer link). ``bad_invite`` for a key that is not the session's."""
    current = role_for(session=session, user=user)
    if current == Role.OWNER or (current is not None and session.workspace.owner_id == user.pk):
        return current, None  # an owner (read-only in an archived course's copy) stays the owner
    granted = invite_role(session=session, key=key)
    if current in (Role.COLLABORATOR, granted):
        return current, None
    removal = Removal.objects.filter(session=session, user=user).only("key_digests").first()
    if removal is not None and sha256_hex(key) in removal.key_digests:
        raise SessionError("removed", "the owner removed you from this session, and this link no longer "
                           "lets you in: ask them for a new one")
    return current, granted


def session_join(*, session: Session, user: User, key: str) -> str:
    """Join through an invite link; a collaborator link upgrades a viewer, nothing downgrades.
    Returns the role held after; ``removed`` when the owner removed the user while that link
    was the session's (``participant_remove``)."""
    current, granted = join_grants(session=session, user=user, key=key)
    if granted is None:
        return str(current)
    Participant.objects.update_or_create(session=session, user=user, defaults={"role": granted})
    return granted.value


def session_join_as_guest(*, session: Session, key: str, name: str) -> User:
    """A new guest named ``name`` (``accounts.services.guest_create``), holding the invite's role."""
    with transaction.atomic():
        role = invite_role(session=session, key=key)
        user = guest_create(name)
        Participant.objects.create(session=session, user=user, role=role)
    return user


def latest_joined(user: User) -> Session | None:
    """Where a guest's sign-in lands: the session it joined last through an invite, or its
    own (a student's copy of a course's workspace), whichever came last."""
    joined = Participant.objects.filter(user=user).exclude(role=Role.OWNER).order_by("-joined_at", "-id")
    found = joined.select_related("session").first()
    own = Session.objects.filter(workspace__owner=user).order_by("-created_at").first()
    if found is None or (own is not None and own.created_at > found.joined_at):
        return own
    return found.session


@dataclass(frozen=True)
class Member:
    """A row of the owner's participant list."""

    user_id: int
    name: str
    role: str
    guest: bool
    teacher: bool = False  # the course's teacher, in a student's copy: watches by right

    @property
    def removable(self) -> bool:
        return self.role != Role.OWNER and not self.teacher


def members(session: Session, teacher_id: int | None = None) -> list[Member]:
    """Who holds a role in the session: the owner first, then in the order they joined.
    ``teacher_id``: in a student's copy of a course, the course's teacher (not removable:
    they watch every copy of their course)."""
    rows = Participant.objects.filter(session=session).select_related("user", "user__guest")
    found = [
        Member(user_id=row.user_id, name=_display_name(row.user), role=row.role, guest=_guest_of(row.user) is not None,
               teacher=row.user_id == teacher_id)
        for row in rows.order_by("joined_at", "id")
    ]
    return sorted(found, key=lambda member: member.role != Role.OWNER)


def _guest_of(user: User) -> Guest | None:
    found: Guest | None = getattr(user, "guest", None)
    return found


def _display_name(user: User) -> str:
    guest = _guest_of(user)
    return str(guest.name) if guest is not None else user.get_username()


def participant_remove(*, session: Session, user_id: int) -> None:
    """Take ``user_id``'s role away (the caller hangs up on their live connections)."""
    found = Participant.objects.filter(session=session, user_id=user_id).first()
    if found is None:
        raise SessionError("not_found", "that person is not in this session")
    if found.role == Role.OWNER or session.workspace.owner_id == user_id:
        raise SessionError("not_removable", "the owner cannot be removed from their own session")
    with transaction.atomic():
        found.delete()
        # The links they could come back through stop working for them (not for anyone else).
        digests = _invite_digests(session)
        Removal.objects.update_or_create(session=session, user_id=user_id, defaults={"key_digests": digests})


def removed_members(session: Session) -> list[Member]:
    """Who the owner removed and has not let back in, most recent first (the People panel)."""
    rows = Removal.objects.filter(session=session).select_related("user", "user__guest").order_by("-removed_at", "-id")
    return [
        Member(user_id=row.user_id, name=_display_name(row.user), role="removed", guest=_guest_of(row.user) is not None)
        for row in rows
    ]


def removal_lift(*, session: Session, user_id: int) -> None:
    """Let a removed person back in: the invite links they hold work for them again (their
    role is not given back: they join again through a link)."""
    if not Removal.objects.filter(session=session, user_id=user_id).delete()[0]:
        raise SessionError("not_found", "that person was not removed from this session")


def invite_rotate(*, session: Session, role: str) -> list[int]:
    """A new invite key for ``role``; the old link stops working and the guests who hold that
    role (they came through it) lose their place. Returns the ids of the guests removed."""
    try:
        field = INVITE_KEYS[Role(role)]
    except (ValueError, KeyError):
        raise SessionError("bad_role", f"invite links are for {', '.join(INVITE_KEYS)}") from None
    with transaction.atomic():
        setattr(session, field, _invite_key())
        session.save(update_fields=[field])
        guests = Participant.objects.filter(session=session, role=role, user__guest__isnull=False)
        removed = list(guests.values_list("user_id", flat=True))
        guests.delete()
    return removed


def turn_create(record: TurnRecord) -> None:
    Turn.objects.create(
        id=record.turn, session_id=uuid.UUID(record.session), author_id=record.author_id, prompt=record.prompt,
        effort=record.effort, active_path=record.active_path, steered_from_id=record.steered_from,
        model=record.model, status=TurnStatus.RUNNING,
    )


def turn_finish(outcome: TurnOutcome) -> None:
    usage = outcome.usage
    Turn.objects.filter(pk=outcome.turn).update(
        status=outcome.status, reason=outcome.reason, output=outcome.output, ledger=outcome.ledger,
        diff=outcome.diff, metrics=dict(outcome.metrics), error=outcome.error, finished_at=timezone.now(),
        input_tokens=usage.input_tokens, cached_input_tokens=usage.cached_input_tokens,
        output_tokens=usage.output_tokens, usage_estimated=usage.estimated, cost_usd=usage.cost_usd,
    )


# What a run's record says when the process running it went away before it ended.
RUN_OWNER_LOST = "the server running it stopped before the run ended: its result is unknown"


def run_create(record: RunRecord) -> None:
    """Record a run as started. Its room runs one at a time and writes in order (this under the
    room's fence), so any other run of the workspace still recorded as running is one an earlier
    owner of the room lost: it is recorded failed first (``runs_lost``)."""
    session_id = uuid.UUID(record.session)
    workspace_id = Session.objects.filter(pk=session_id).values_list("workspace_id", flat=True).first()
    if workspace_id is not None:
        runs_lost(workspace_id)
    Run.objects.create(
        id=record.run, session_id=session_id, author_id=record.author_id, path=record.path, tests=record.tests,
        command=record.command, by_model=record.by_model, turn=record.turn,
    )


def runs_lost(workspace_id: uuid.UUID) -> list[str]:
    """Record the workspace's runs still marked running as failed, their owner lost, and send
    each a Stop (a Celery worker may still run one whose room went away: its output has nowhere
    to go). For the room's opening, which starts with no run going, and for ``run_create``.
    Returns the ids."""
    lost = Run.objects.filter(session__workspace_id=workspace_id, status=Run.RUNNING)
    ids = list(lost.values_list("id", flat=True))
    if ids:
        Run.objects.filter(pk__in=ids, status=Run.RUNNING).update(
            status="failed", message=RUN_OWNER_LOST, finished_at=timezone.now(),
        )
        transaction.on_commit(lambda: _stop_runs(ids))
    return ids


def _stop_runs(ids: list[str]) -> None:
    for run in ids:
        try:
            run_control().send(run, "stop")
        except Exception:  # Redis away: the run's own wall limit still ends it
            log.warning("could not send Stop to the lost run %s", run, exc_info=True)


def run_finish(outcome: RunOutcome) -> None:
    Run.objects.filter(pk=outcome.run).update(
        status=outcome.status, exit_code=outcome.exit_code, duration_ms=outcome.duration_ms,
        output=outcome.output, message=outcome.message, finished_at=timezone.now(),
    )


def turn_mark_reverted(turn_id: str) -> None:
    Turn.objects.filter(pk=turn_id).update(reverted=True, reverted_at=timezone.now())


def turn_mark_restored(turn_id: str) -> None:
    """A revert undone (``restore``): the turn's edits are back."""
    Turn.objects.filter(pk=turn_id).update(reverted=False, reverted_at=None)


# The turn history lists at most this many turns: the room's latest.
HISTORY_LIMIT = 100


def room_turns(session: Session) -> list[Turn]:
    """The latest turns of every session of the session's workspace, oldest first."""
    latest = Turn.objects.filter(session__workspace_id=session.workspace_id).order_by("-created_at", "-id")
    return list(reversed(latest[:HISTORY_LIMIT]))


def room_runs(session: Session, limit: int) -> list[Run]:
    """The latest code runs of every session of the session's workspace, newest first."""
    runs = Run.objects.filter(session__workspace_id=session.workspace_id).select_related("author")
    return list(runs.order_by("-created_at", "-id")[:limit])


def room_turn(session: Session, turn_id: str) -> Turn | None:
    """A turn of any session of the session's workspace, or None."""
    return Turn.objects.filter(session__workspace_id=session.workspace_id, id=turn_id).first()


def turns_for(session: Session) -> list[dict[str, Any]]:
    return [
        {
            "id": t.id, "prompt": t.prompt, "status": t.status, "steered_from": t.steered_from_id,
            "effort": t.effort, "model": t.model, "metrics": t.metrics, "usage": turn_usage(t).payload(),
            "reverted": t.reverted,
            "reverted_at": t.reverted_at.isoformat() if t.reverted_at is not None else None,
            "created_at": t.created_at.isoformat(),
        }
        for t in room_turns(session)
    ]
