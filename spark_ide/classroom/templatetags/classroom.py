"""Template helpers of the classroom: the header's link to it, and "how long ago" as the
teacher's dashboard says it."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.template import Context
from django.utils import timezone
from django.utils.timesince import timesince

from spark_ide.classroom.services import is_teacher, takes_a_course

register = template.Library()

JUST_NOW = timedelta(minutes=1)


@register.simple_tag(takes_context=True)
def classroom_member(context: Context) -> bool:
    """Whether the signed-in person has a classroom to go to: a teacher, or a student
    enrolled in a course (the header links to ``/classroom/`` for them)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if not getattr(user, "is_authenticated", False):
        return False
    return is_teacher(user) or takes_a_course(user)


@register.filter
def ago(moment: datetime | None) -> str:
    """``just now`` within the minute, else ``3 minutes ago`` (Django's ``timesince``)."""
    if moment is None:
        return ""
    if timezone.now() - moment < JUST_NOW:
        return "just now"
    return f"{timesince(moment)} ago"
