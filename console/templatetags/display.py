"""Presentation of what the selectors return: instant times as readable moments with their age,
the raw instant on hover and a copy button, durations, and the time axis of a timeline page.
Instant times stay sortable strings everywhere else; they are parsed here (by the library's
`moment_of`, in the table's timeline zone), for display only.

The server writes each moment in the request's time zone, the user's (console/zones.py: their
choice, else the browser's, else TIME_ZONE), and names the zone; every page, form and CSV shows
the same zone."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from console import zones
from console.models import Instant, Table
from timeline import TableConfig
from timeline.exceptions import InvalidInstantError
from timeline.instant import format_instant_time, moment_of, parse_instant_time

register = template.Library()

# How a <time> element is written (console/zones.py's `readable`, the one helper every time
# on every page, form, flash message, e-mail and CSV goes through).
FORMATS = zones.FORMATS
readable = zones.readable


def zone_of(where: Table | str | None) -> str:
    """The zone a table's instant times are written in (hoodie.table.timeline.timezone: UTC or
    LOCAL, the library's default); a zone name is taken as it is, nothing means LOCAL."""
    if isinstance(where, Table):
        return TableConfig(where.properties or {}).timezone
    return where.upper() if isinstance(where, str) and where else "LOCAL"


@register.filter
def moment(instant_time: str) -> datetime | None:
    """An instant time as a datetime in the table's timeline zone (naive), None if unreadable."""
    try:
        return parse_instant_time(instant_time) if instant_time else None
    except InvalidInstantError:
        return None


def aware(instant_time: str | None, where: Table | str | None = None) -> datetime | None:
    """An instant time as an aware datetime (read in the table's timeline zone), None when it is
    empty or not an instant time."""
    try:
        return moment_of(instant_time, zone_of(where)) if instant_time else None
    except InvalidInstantError:
        return None


@register.filter
def stamp(when: datetime | None, style: str = "datetime") -> SafeString:
    """A moment the console recorded (a plan requested, a lock taken, an alert fired) as
    `instant` shows an instant time: in the user's zone with the zone named, the moment itself
    (UTC, ISO) on hover; empty for none."""
    if when is None or not isinstance(when, datetime):
        return mark_safe("")
    return format_html('<time datetime="{}" title="{}" data-local="{}">{}</time>', when.isoformat(),
                       readable(when, zone=UTC), style, readable(when, style))


@register.simple_tag
def now_stamp() -> SafeString:
    """This moment, as `stamp` shows one."""
    return stamp(timezone.now())


@register.filter
def stamp_text(when: datetime | None) -> str:
    """`stamp` as plain text (options, titles, CSV)."""
    return readable(when) if isinstance(when, datetime) else ""


_AGE_UNITS = (("y", 365 * 86400), ("mo", 30 * 86400), ("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
_DURATION_UNITS = (("d", 86400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1))


def age_text(when: datetime, now: datetime | None = None) -> str:
    """How long ago, in one unit: '45 s ago', '12 min ago', '3 h ago', '5 d ago', '2 mo ago',
    '1 y ago'; 'in 3 h' for a time ahead of the clock."""
    seconds = ((now or timezone.now()) - when).total_seconds()
    span = abs(seconds)
    if span < 1:
        return "just now"
    unit, size = next((u, s) for u, s in _AGE_UNITS if span >= s)
    amount = f"{int(span // size)} {unit}"
    return f"{amount} ago" if seconds > 0 else f"in {amount}"


def duration_text(seconds: float) -> str:
    """A duration in its two largest units: '650 ms', '4.2 s', '3 min 4 s', '2 h 5 min', '3 d 1 h'."""
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    whole = int(seconds)
    big, big_size, small, small_size = next(u for u in _DURATION_UNITS if whole >= u[1])
    rest = (whole % big_size) // small_size
    return f"{whole // big_size} {big}" + (f" {rest} {small}" if rest else "")


@register.filter
def when(instant_time: str, where: Table | str | None = None) -> str:
    """An instant time as plain readable text (for places without markup: options, titles);
    the instant time itself when it is not one."""
    moment_ = aware(instant_time, where)
    return readable(moment_) if moment_ else (instant_time or "")


@register.filter
def age(instant_time: str, where: Table | str | None = None) -> str:
    """How long ago an instant time was ('3 h ago'); empty when it is not one."""
    moment_ = aware(instant_time, where)
    return age_text(moment_) if moment_ else ""


@register.filter
def seconds_ago(seconds: float | str | None) -> str:
    """An age given in seconds, read as `age` reads one ('3 h ago')."""
    if seconds is None or seconds == "":
        return ""
    now = timezone.now()
    return age_text(now - timedelta(seconds=float(seconds)), now)


def _table(context: template.Context, where: Table | str | None) -> Table | str | None:
    return where if where is not None else context.get("table")


@register.simple_tag(takes_context=True)
def instant(context: template.Context, instant_time: str | None, where: Table | str | None = None, *,
            link: str = "", show_age: bool = True) -> SafeString:
    """An instant time as a readable date-time (a `<time>` whose title is the raw instant),
    its age, and a button copying the raw instant; wrapped in a link to `link` when given.
    `where` is the table (default: the page's `table`) whose timeline zone the time is in.
    Empty for no time; a value that is not an instant time is shown as it is."""
    return _instant_html(instant_time, _table(context, where), link=link, show_age=show_age)


def _instant_html(instant_time: str | None, where: Table | str | None, *, link: str = "",
                  show_age: bool = True) -> SafeString:
    if not instant_time:
        return mark_safe("")
    moment_ = aware(instant_time, where)
    if moment_ is None:
        return format_html('<a href="{}">{}</a>', link, instant_time) if link else format_html("{}", instant_time)
    shown = format_html('<time datetime="{}" title="{}" data-local="datetime">{}</time>',
                        moment_.isoformat(timespec="milliseconds"), instant_time, readable(moment_))
    if link:
        shown = format_html('<a href="{}">{}</a>', link, shown)
    ago = format_html(' <span class="age">{}</span>', age_text(moment_)) if show_age else ""
    return format_html('<span class="instant">{}{}{}</span>', shown, ago, copy_button(instant_time))


@register.filter
def instants(text: str | None, where: Table | str | None = None) -> SafeString:
    """A sentence (a reason, a warning, an error, a flash message, an alert) with every instant
    time in it shown as `instant` shows it (without its age), every time written in UTC
    ('2024-01-01 12:00 UTC') shown as `stamp` shows it (in the viewer's zone), the rest escaped."""
    shown = []
    for n, part in enumerate(zones.INSTANT_IN_TEXT.split(str(text or ""))):
        if n % 2:
            shown.append(str(_instant_html(part, where, show_age=False)))
            continue
        shown.append(zones.times_in_text(str(escape(part)), lambda moment_: str(stamp(moment_))))
    return mark_safe("".join(shown))  # noqa: S308 (every part is escaped or built by format_html)


@register.simple_tag(takes_context=True)
def flash(context: template.Context, message: Any) -> SafeString:
    """A flash message as `instants` shows a sentence (its instant times in the page's table's
    timeline zone, when the page has a table)."""
    return instants(str(message), context.get("table"))


@register.filter
def refusal_of(refusal: str | None, instant_time: str = "") -> str:
    """A refusal shown in its write's row: without the table's location the library puts
    first ("file:/lake/t: ...", the page names the table) and with the row's own instant time
    as "this write" (the row shows its time once, in its first cell)."""
    text = str(refusal or "")
    head, sep, rest = text.partition(": ")
    if sep and ("/" in head or ":" in head) and " " not in head:
        text = rest
    if instant_time:
        text = re.sub(rf"(?<![\w.]){re.escape(instant_time)}(?![\w.])", "this write", text)
    return text[:1].upper() + text[1:]


@register.filter
def epoch_ms(value: int | None) -> SafeString:
    """Epoch milliseconds (a savepoint's savepointedAt) as `stamp` shows a moment."""
    return stamp(zones.from_epoch_ms(value)) if value else mark_safe("")


# Two overlapping sheets, drawn in the text's colour (no icon font needed).
_COPY_ICON = mark_safe('<svg width="10" height="10" viewBox="0 0 10 10" aria-hidden="true"><rect x="3" y="0.5" '
                       'width="6.5" height="6.5" rx="1"/><path d="M1.5 3v6.5h6.5"/></svg>')


@register.simple_tag
def copy_button(text: str) -> SafeString:
    """A small button that copies `text` (console/time.js); its title names what it copies."""
    return format_html(' <button type="button" class="copy" data-copy="{}" title="Copy {}" aria-label="Copy {}">'
                       '{}</button>', text, text, text, _COPY_ICON)


def duration_seconds(requested_time: str | None, completion_time: str | None,
                     where: Table | str | None = None) -> float | None:
    """Seconds from an instant's requested time to its completion time, when both are known."""
    start, end = aware(requested_time, where), aware(completion_time, where)
    return (end - start).total_seconds() if start and end and end >= start else None


@register.simple_tag(takes_context=True)
def duration(context: template.Context, requested_time: str | None, completion_time: str | None,
             where: Table | str | None = None) -> SafeString:
    """The time from requested to completed ('4.2 s'), empty unless both are known."""
    seconds = duration_seconds(requested_time, completion_time, _table(context, where))
    if seconds is None:
        return mark_safe("")
    return format_html('<span class="duration" title="requested {} → completed {} ({} s)">{}</span>',
                       requested_time, completion_time, f"{seconds:.3f}", duration_text(seconds))


def _spans(instants: Iterable[Instant]) -> tuple[list[tuple[Instant, datetime | None, datetime | None]],
                                                  datetime | None, float]:
    """Each instant with its requested and completed moments (completed = requested while
    pending), the page's earliest moment and the seconds the page spans (at least 1)."""
    spans = [(i, moment(i.requested_time), moment(i.completion_time) or moment(i.requested_time)) for i in instants]
    known = [(s, e) for _, s, e in spans if s and e]
    start = min((s for s, _ in known), default=None)
    total = max((max(e for _, e in known) - start).total_seconds(), 1.0) if start else 1.0
    return spans, start, total


@register.simple_tag
def time_axis(instants: Iterable[Instant], width: int = 240) -> list[dict[str, Any]]:
    """Each instant of a page with a bar from its requested to its completed time, on one
    time axis scaled to the page (x and w in pixels out of `width`, the duration in seconds;
    None when the times are unreadable)."""
    spans, start, total = _spans(instants)
    rows = []
    for instant_, begin, end in spans:
        bar = None
        if start is not None and begin is not None and end is not None:
            bar = {"x": round((begin - start).total_seconds() / total * width, 1),
                   "w": round(max((end - begin).total_seconds() / total * width, 2.0), 1),
                   "seconds": round((end - begin).total_seconds(), 3)}
        rows.append({"instant": instant_, "bar": bar})
    return rows


@register.simple_tag(takes_context=True)
def time_ticks(context: template.Context, instants: Iterable[Instant], where: Table | str | None = None,
               width: int = 240, count: int = 3) -> list[dict[str, Any]]:
    """The labels of the page's time axis (the same scale as `time_axis`): `count` ticks from
    the earliest to the latest moment, each with its x in pixels, the moment in ISO form, its
    label in the console's zone and the label's style (time of day within a day, day and time
    within a year, else the date); none when no time is readable."""
    _, start, total = _spans(instants)
    if start is None:
        return []
    style = "time" if total < 86400 else "daytime" if total < 365 * 86400 else "date"
    zone = zone_of(_table(context, where))
    ticks = []
    for n in range(count):
        naive = start + timedelta(seconds=total * n / max(count - 1, 1))
        moment_ = moment_of(format_instant_time(naive), zone)
        ticks.append({"x": round(width * n / max(count - 1, 1), 1), "iso": moment_.isoformat(timespec="milliseconds"),
                      "label": readable(moment_, style), "title": readable(moment_), "style": style,
                      "edge": "first" if n == 0 else "last" if n == count - 1 else "middle"})
    return ticks


# Audit parameters that name an object of the console, and the page that shows it.
_AUDIT_LINKS = (("plan", "console:plan", "plan_id", "plan"), ("job", "console:job", "job_id", "job"),
                ("estimate", "console:retention", None, "estimate"),
                ("repair", "console:repair", "repair_id", "repair"),
                ("archival", "console:archival_detail", "archival_id", "archival"))


@register.simple_tag
def audit_links(event: Any) -> SafeString:
    """Links from an audit row to what it is about: its table, and the plan, job, estimate,
    repair or archival its parameters name (a plan's page, a job's page, the estimate on the
    retention page, a repair's or an archival's page)."""
    from django.urls import NoReverseMatch, reverse

    table = getattr(event, "table", None)
    parameters = event.parameters if isinstance(getattr(event, "parameters", None), dict) else {}
    links = []
    if table is not None:
        links.append(format_html('<a href="{}">{}</a>', reverse("console:overview", args=[table.pk]), table.name))
        for key, name, argument, label in _AUDIT_LINKS:
            value = parameters.get(key)
            if not isinstance(value, int):
                continue
            try:
                if argument is None:
                    url = f"{reverse(name, args=[table.pk])}?{key}={value}"
                else:
                    url = reverse(name, args=[table.pk, value])
            except NoReverseMatch:
                continue
            links.append(format_html('<a href="{}">{} {}</a>', url, label, value))
    return mark_safe(" · ".join(str(link) for link in links))  # noqa: S308 (each part built by format_html)


@register.filter
def readable_parameters(parameters: Any, where: Table | str | None = None) -> SafeString:
    """An audit event's parameters as 'key: value' pairs (instant times readable, lists joined),
    not as a Python dict's text."""
    if not isinstance(parameters, dict) or not parameters:
        return mark_safe("")
    parts = []
    for key, value in parameters.items():
        if isinstance(value, list | tuple):
            shown = ", ".join(str(v) for v in value) or "none"
        elif isinstance(value, dict):
            shown = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, bool):
            shown = "yes" if value else "no"
        else:
            shown = str(value)
        parts.append(format_html('<span class="param"><span class="key">{}</span>: {}</span>',
                                 key.replace("_", " "), instants(shown, where)))
    return mark_safe(" · ".join(str(p) for p in parts))  # noqa: S308 (each part built by format_html)
