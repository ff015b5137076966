"""Presentation of what the selectors return: instant times as moments (for ages) and the time
axis of a timeline page in pixels. Instant times stay sortable strings everywhere else; they
are parsed here, for display only."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django import template

from console.models import Instant
from timeline import InvalidInstantError, parse_instant_time

register = template.Library()


@register.filter
def moment(instant_time: str) -> datetime | None:
    """An instant time as a datetime in the table's timeline zone (naive), None if unreadable;
    ages are shown with Django's `timesince` on it, as everywhere in the console."""
    try:
        return parse_instant_time(instant_time) if instant_time else None
    except InvalidInstantError:
        return None


@register.simple_tag
def time_axis(instants: Iterable[Instant], width: int = 240) -> list[dict[str, Any]]:
    """Each instant of a page with a bar from its requested to its completed time, on one
    time axis scaled to the page (x and w in pixels out of `width`, the duration in seconds;
    None when the times are unreadable)."""
    spans = [(i, moment(i.requested_time), moment(i.completion_time) or moment(i.requested_time)) for i in instants]
    known = [(s, e) for _, s, e in spans if s and e]
    start = min((s for s, _ in known), default=None)
    total = max((max(e for _, e in known) - start).total_seconds(), 1.0) if start else 1.0
    rows = []
    for instant, begin, end in spans:
        bar = None
        if start is not None and begin is not None and end is not None:
            bar = {"x": round((begin - start).total_seconds() / total * width, 1),
                   "w": round(max((end - begin).total_seconds() / total * width, 2.0), 1),
                   "seconds": round((end - begin).total_seconds(), 3)}
        rows.append({"instant": instant, "bar": bar})
    return rows

