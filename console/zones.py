"""One time zone per user: every time on every page, form and CSV is shown in it, with the zone
named. The zone is the user's choice (their Preference), else the browser's (console/time.js
keeps it in the `cleanline_tz` cookie and reloads the page once when it learns it), else the
console's TIME_ZONE. A middleware activates it for the request, so Django's own conversions
(`timezone.localtime`, the `date` filter) and the display filters all use it, and dates typed
in filters and searches are read in it."""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
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


# The one helper every time goes through (pages, forms, flash messages, e-mails, CSV) -------

FORMATS = {"datetime": "%Y-%m-%d %H:%M:%S", "date": "%Y-%m-%d", "daytime": "%m-%d %H:%M", "time": "%H:%M:%S"}


def readable(when: datetime, style: str = "datetime", zone: tzinfo | None = None) -> str:
    """An aware datetime in `zone` (default: the request's, the viewer's: the middleware above
    activates it), the zone named: '2024-01-01 12:30:45 UTC', '2024-01-02 02:30:45 UTC+14'.
    The shorter styles (an axis tick's 'date', 'daytime', 'time') leave the zone to their title."""
    local = when.astimezone(zone) if zone is not None else timezone.localtime(when)
    text = local.strftime(FORMATS[style])
    return f"{text} {zone_label(local)}" if style == "datetime" else text


def from_epoch_ms(epoch_ms: int) -> datetime:
    """Epoch milliseconds (a savepoint's savepointedAt, a heartbeat) as an aware datetime."""
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


# A time the console wrote into a sentence in UTC (a lock's holder since, a plan requested at),
# or as ISO 8601 with its offset (an audit event's parameters: a lock's acquired_at).
_TIME_IN_TEXT = re.compile(r"(?<!\d)(\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?) UTC(?![+\-\w])"
                           r"|(?<![\w.])(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d{1,6})?)?(?:Z|[+-]\d\d:\d\d))(?![\w.])")
# An instant time standing on its own in a sentence (not part of a file name or a number).
INSTANT_IN_TEXT = re.compile(r"(?<![\w.])(\d{14,20})(?![\w.])")


def _moment(match: re.Match[str]) -> datetime:
    if match.group(1):
        return datetime.fromisoformat(match.group(1)).replace(tzinfo=UTC)
    return datetime.fromisoformat(match.group(2).replace("Z", "+00:00"))


def times_in_text(text: str, shown: Callable[[datetime], str]) -> str:
    """A sentence with every time written in it in UTC or as ISO 8601 (with its offset)
    replaced, in one pass, by `shown(moment)`."""
    return _TIME_IN_TEXT.sub(lambda match: shown(_moment(match)), text)


def text_in_zone(text: str, zone: tzinfo, timeline_zone: str = "LOCAL") -> str:
    """A plain-text sentence (an e-mail, a CSV cell) with its times in `zone`: a time written
    in UTC is rewritten in the zone, the zone named, and a raw instant time keeps a readable
    time beside it ('20240101120000000 (2024-01-01 13:00:00 CET)'); `timeline_zone` is the
    table's timeline zone the instant times are in (hoodie.table.timeline.timezone)."""
    from timeline.exceptions import InvalidInstantError
    from timeline.instant import moment_of

    text = times_in_text(text, lambda moment: readable(moment, zone=zone))

    def beside(match: re.Match[str]) -> str:
        try:
            return f"{match.group(1)} ({readable(moment_of(match.group(1), timeline_zone), zone=zone)})"
        except InvalidInstantError:
            return match.group(1)

    return INSTANT_IN_TEXT.sub(beside, text)


def zone_of_user(user: Any) -> tzinfo:
    """The zone a user reads e-mails in: their chosen one, else the console's TIME_ZONE (an
    e-mail has no browser to ask)."""
    return ZoneInfo(chosen_zone(user) or settings.TIME_ZONE)


def zones_of_addresses(addresses: list[str]) -> dict[str, list[str]]:
    """E-mail addresses grouped by the zone their reader chose (an address no active user
    has, or whose user chose none, reads the console's TIME_ZONE), so that each e-mail shows
    its times in its readers' zone."""
    from django.contrib.auth.models import User

    chosen: dict[str, str] = {}
    for user in User.objects.filter(is_active=True, email__in=addresses):
        chosen.setdefault(user.email, chosen_zone(user))
    groups: dict[str, list[str]] = {}
    for address in addresses:
        groups.setdefault(chosen.get(address) or settings.TIME_ZONE, []).append(address)
    return groups
