"""Filters for tokens and money in pages (the Usage page, the course page): ``{% load spend %}``."""

from __future__ import annotations

from decimal import Decimal

from django import template

from spark_ide.live.usage import decimal_text
from spark_ide.live.usage import usd as usd_text

register = template.Library()


@register.filter
def usd(value: Decimal | None) -> str:
    """``$0.0123``, ``$4.20``; "—" when the cost is unknown (no price for the model)."""
    return "—" if value is None else usd_text(value)


@register.filter
def tokens(value: int | None) -> str:
    """``12,345``."""
    return f"{value or 0:,}"


@register.filter
def amount(value: Decimal | None) -> str:
    """A sum of money as a form's field holds it: ``1.25``; "" for none."""
    return "" if value is None else decimal_text(value)
