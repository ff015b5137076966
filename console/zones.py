"""One time zone per user: every time on every page, form and CSV is shown in it, with the zone
named. The zone is the user's choice (their Preference), else the browser's (console/time.js
keeps it in the `cleanline_tz` cookie and reloads the page once when it learns it), else the
console's TIME_ZONE. A middleware activates it for the request, so Django's own conversions
(`timezone.localtime`, the `date` filter) and the display filters all use it, and dates typed
in filters and searches are read in it."""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from console.models import Preference

COOKIE = "cleanline_tz"


@cache
def zone_names() -> tuple[str, ...]:
    """Every IANA zone this machine knows, sorted (the choices of the preferences form)."""
    return tuple(sorted(zoneinfo.available_timezones()))


def known_zone(name: str | None) -> str:
    """`name` if it is a zone this machine knows, else ""."""
    return name if name and name in zone_names() else ""


def zone_label(moment: datetime) -> str:
    """How a time names its zone: the zone's abbreviation where it has one (UTC, CET, IST),
    else its offset from UTC ("UTC+14", "UTC-0330")."""
    name = moment.tzname() or ""
    return f"UTC{name}" if name[:1] in "+-" else name


def chosen_zone(user: Any) -> str:
    if not getattr(user, "is_authenticated", False):
        return ""
    return known_zone(Preference.objects.filter(user_id=user.pk).values_list("time_zone", flat=True).first())


class TimeZoneMiddleware:
    """Activates the request's zone (the user's choice, the browser's cookie, TIME_ZONE) and
    keeps it on the request: `time_zone` (its name) and `time_zone_source` (chosen, browser,
    console)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chosen = chosen_zone(request.user)
        browser = known_zone(request.COOKIES.get(COOKIE))
        name, source = ((chosen, "chosen") if chosen else (browser, "browser") if browser
                        else (settings.TIME_ZONE, "console"))
        request.time_zone, request.time_zone_source = name, source  # type: ignore[attr-defined]  # read by time_zone() below
        timezone.activate(ZoneInfo(name))
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def time_zone(request: HttpRequest) -> dict[str, Any]:
    """The template context's `time_zone` and `time_zone_source` (base.html names the zone in
    the header and hands it to time.js)."""
    return {"time_zone": getattr(request, "time_zone", settings.TIME_ZONE),
            "time_zone_source": getattr(request, "time_zone_source", "console")}
