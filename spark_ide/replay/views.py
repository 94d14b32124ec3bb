"""The replay of a session: its page, and the history the page plays (anyone with a role in
the session; anyone else is told there is no such session)."""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from spark_ide.accounts.guests import guests_allowed
from spark_ide.pairing import services as sessions
from spark_ide.pairing.models import Session
from spark_ide.workspaces import documents

from .services import replay_data

log = logging.getLogger(__name__)
STORE_WAIT_S = 3.0  # how long a replay waits for the live room to store its newest events


def _session_for(request: HttpRequest, session_id: str) -> Session:
    try:
        session = sessions.session_get(session_id)
    except sessions.SessionError:
        raise Http404("no such session") from None
    if sessions.role_for(session=session, user=request.user) is None:
        raise Http404("no such session")
    return session


@guests_allowed
@login_required
@require_GET
def replay_page(request: HttpRequest, session_id: str) -> HttpResponse:
    session = _session_for(request, session_id)
    context = {
        "session": session,
        "workspace": session.workspace,
        "data_url": reverse("session-replay-data", args=[session.id]),
        "session_url": reverse("session", args=[session.id]),
    }
    return render(request, "replay/replay.html", context)


@guests_allowed
@require_GET
async def replay_json(request: HttpRequest, session_id: str) -> JsonResponse:
    """The session's history (``services.replay_data``). Not signed in: not found, no redirect.
    A room open live stores the turn events it sent first (it writes them in batches): a
    replay opened right after a turn shows all of it."""
    session = await sync_to_async(_session_for)(request, session_id)
    holder = await sync_to_async(documents.LIVE.holder)(session.workspace_id)
    if holder is not None:
        try:
            await asyncio.wait_for(holder.store_events(), STORE_WAIT_S)
        except Exception:  # the record as stored: the newest events may be missing
            log.warning("replay of %s: the room did not store its newest events", session.id, exc_info=True)
    data = await sync_to_async(replay_data)(session.workspace_id)
    response = JsonResponse(data, json_dumps_params={"separators": (",", ":")})
    response["Cache-Control"] = "private, no-cache"
    return response
