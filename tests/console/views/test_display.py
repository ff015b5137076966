"""Template tags of console/templatetags/display.py: instant times as readable moments with
their age, the raw instant on hover and a copy button, durations, the timeline page's time
axis in pixels and its labels; and every page that shows an instant shows it so."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest
from django.template import Context, Template
from django.urls import reverse
from django.utils import timezone

from console import selectors
from console.models import Instant, Table
from console.templatetags.display import age_text, duration_text, moment, time_axis, time_ticks
from tests.console.helpers import login
from timeline import HudiTable
from timeline.instant import moment_of

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"  # the `table` fixture (tests/console/conftest.py) registers it

pytestmark = pytest.mark.django_db


def utc_table() -> Table:
    """A table row whose timeline is written in UTC (only the database: display reads no lake)."""
    return Table.objects.create(path="/nowhere/utc", name="utc", table_type="COPY_ON_WRITE", table_version=8,
                                layout_version=2, properties={"hoodie.table.timeline.timezone": "UTC"})


def render(text: str, **context: object) -> str:
    return Template("{% load display %}" + text).render(Context(context))


def test_display_moment_parses_instant_times_and_ages_read_as_timesince() -> None:
    assert moment("20260101000000000") == datetime(2026, 1, 1)
    assert moment("") is None and moment("not-a-time") is None
    age = Template("{% load display %}{{ t|moment|timesince:now }}|{{ bad|moment|timesince:now }}")
    assert age.render(Context({"t": "20260101000000000", "bad": "x", "now": datetime(2026, 1, 3, 5)})) == (
        "2\xa0days, 5\xa0hours|")


def test_display_ages_and_durations_read_in_one_or_two_units() -> None:
    now = datetime(2026, 3, 7, 12, 0, tzinfo=UTC)
    ages = {timedelta(0): "just now", timedelta(seconds=45): "45 s ago",
            timedelta(minutes=12, seconds=59): "12 min ago", timedelta(hours=3, minutes=59): "3 h ago",
            timedelta(days=5, hours=23): "5 d ago",
            timedelta(days=65): "2 mo ago", timedelta(days=800): "2 y ago", timedelta(hours=-3): "in 3 h"}
    assert {d: age_text(now - d, now) for d in ages} == ages
    durations = {0.65: "650 ms", 4.25: "4.2 s", 4.0: "4 s", 184: "3 min 4 s", 180: "3 min", 7500: "2 h 5 min",
                 3 * 86400 + 3700: "3 d 1 h"}
    assert {s: duration_text(s) for s in durations} == durations


def test_display_instant_is_a_readable_time_in_the_consoles_zone_raw_on_hover_and_copy(settings) -> None:
    table = utc_table()
    raw = "20240101123045123"
    html = render("{% instant t %}", t=raw, table=table)
    assert '<time datetime="2024-01-01T12:30:45.123+00:00" title="20240101123045123" data-local="datetime">' \
           "2024-01-01 12:30:45 UTC</time>" in html
    assert f'<button type="button" class="copy" data-copy="{raw}" title="Copy {raw}"' in html
    assert re.search(r'<span class="age">\d+ (y|mo) ago</span>', html)
    settings.TIME_ZONE = "Asia/Kolkata"  # the console's zone: the same moment, read there
    timezone.deactivate()
    assert ">2024-01-01 18:00:45 IST</time>" in render("{% instant t %}", t=raw, table=table)


def test_display_instant_forms_link_fourteen_digits_and_what_is_not_an_instant() -> None:
    table = utc_table()
    linked = render('{% instant t link="/x" show_age=False %}', t="20240101123045", table=table)
    assert linked.startswith('<span class="instant"><a href="/x"><time datetime="2024-01-01T12:30:45.000+00:00" '
                             'title="20240101123045"')
    assert "</time></a> <button" in linked and 'class="age"' not in linked  # the button is outside the link
    assert render("{% instant t %}", t="commit:<b>", table=table) == "commit:&lt;b&gt;"
    assert render("{% instant t %}|{% instant n %}", t="", n=None, table=table) == "|"
    other = render("{% instant t other %}", t="20240101123045123", other="LOCAL", table=table)
    local = moment_of("20240101123045123", "LOCAL")
    assert f'datetime="{local.isoformat(timespec="milliseconds")}"' in other
    assert render("{{ t|when:table }}|{{ t|age:table }}|{{ bad|when:table }}|{{ bad|age:table }}",
                  t="20240101123045123", bad="x", table=table).startswith("2024-01-01 12:30:45 UTC|")


def test_display_instants_in_a_sentence_are_shown_so_and_the_rest_escaped() -> None:
    table = utc_table()
    html = render("{{ s|instants:table }}", s="kept: savepoint 20240101123045123 <b>, not f_20240101123045123.parquet",
                  table=table)
    assert html.startswith('kept: savepoint <span class="instant"><time datetime="2024-01-01T12:30:45.123+00:00" '
                           'title="20240101123045123" data-local="datetime">2024-01-01 12:30:45 UTC</time> <button')
    assert html.endswith("</span> &lt;b&gt;, not f_20240101123045123.parquet") and 'class="age"' not in html


def test_display_duration_from_requested_to_completed() -> None:
    table = utc_table()
    html = render("{% duration a b %}", a="20240101123045123", b="20240101123050623", table=table)
    assert html == ('<span class="duration" title="requested 20240101123045123 → completed 20240101123050623 '
                    '(5.500 s)">5.5 s</span>')
    assert render("{% duration a '' %}|{% duration b a %}|{% duration a 'x' %}", a="20240101123045123",
                  b="20240101123050623", table=table) == "||"  # unknown, or completed before requested


def test_display_time_axis_scales_bars_to_the_page(table: Table) -> None:
    rows = time_axis(list(table.instants.all()), width=100)
    bars = [r["bar"] for r in rows]
    assert all(b is not None and 0 <= b["x"] <= 100 and b["w"] >= 2 for b in bars)
    assert min(b["x"] for b in bars) == 0 and max(b["x"] + b["w"] for b in bars) >= 99


def test_display_time_axis_leaves_unreadable_times_without_a_bar(table: Table) -> None:
    odd = Instant(table=table, requested_time="garbage", action="commit", state="COMPLETED")
    rows = time_axis([*table.instants.all()[:2], odd])
    assert rows[-1] == {"instant": odd, "bar": None} and all(r["bar"] for r in rows[:2])


def test_display_time_axis_labels_run_from_the_earliest_to_the_latest_moment() -> None:
    table = utc_table()
    page = [Instant(table=table, requested_time=r, completion_time=c, action="commit", state="COMPLETED")
            for r, c in (("20240101120000000", "20240101120100000"), ("20240101130000000", "20240101140000000"))]
    ticks = time_ticks(Context({"table": table}), page, width=200)
    assert [(t["x"], t["label"], t["style"], t["edge"]) for t in ticks] == [
        (0.0, "12:00:00", "time", "first"), (100.0, "13:00:00", "time", "middle"), (200.0, "14:00:00", "time", "last")]
    assert ticks[0]["iso"] == "2024-01-01T12:00:00.000+00:00" and ticks[0]["title"] == "2024-01-01 12:00:00 UTC"
    page.append(Instant(table=table, requested_time="20240302000000000", action="clean", state="REQUESTED"))
    assert [t["label"] for t in time_ticks(Context({"table": table}), page)] == [
        "01-01 12:00", "01-31 18:00", "03-02 00:00"]
    assert time_ticks(Context({"table": table}), [Instant(table=table, requested_time="x")]) == []


class VisibleText(HTMLParser):
    """The text a reader sees, without <pre>, <option>, <title>, <script> and attributes."""

    HIDDEN = {"pre", "option", "title", "script", "style"}

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.depth += tag in self.HIDDEN

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag in self.HIDDEN

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.text.append(data)


def visible_instants(html: str) -> list[str]:
    """Raw instant times (14 to 20 digits on their own) a reader would see on the page."""
    parser = VisibleText()
    parser.feed(html)
    return re.findall(r"(?<![\w.])\d{14,20}(?![\w.])", " ".join(parser.text))


def readable(raw: str) -> str:
    return moment_of(raw, "LOCAL").astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_display_pages_show_instants_readable_with_the_raw_instant_on_hover(table: Table) -> None:
    operator = login("operator")
    commits = [i.requested_time for i in HudiTable.open(table.path).timeline.commits().completed()]
    operator.post(reverse("console:savepoint_create", args=[table.pk]), {"instant": commits[2], "comment": "keep"})
    from console import services

    services.table_sync(table=table)
    operator.get(reverse("console:catalog"))  # shows (and drops) the flash message naming the savepoint
    newest = table.instants.order_by("-requested_time").first()
    assert newest is not None
    pages = {
        "catalog": reverse("console:catalog"),
        "overview": reverse("console:overview", args=[table.pk]),
        "timeline": reverse("console:timeline", args=[table.pk]),
        "instant": reverse("console:instant", args=[table.pk, newest.pk]),
        "file groups": reverse("console:file_groups", args=[table.pk]) + "?partition=region=us",
        "savepoints": reverse("console:savepoints", args=[table.pk]),
        "restore": reverse("console:restore", args=[table.pk, commits[2]]),
    }
    for name, url in pages.items():
        html = operator.get(url).content.decode()
        assert visible_instants(html) == [], name
    timeline = operator.get(pages["timeline"]).content.decode()
    for instant in table.instants.all():
        assert (f'title="{instant.requested_time}" data-local="datetime">{readable(instant.requested_time)}</time>'
                in timeline), instant
    savepoints = operator.get(pages["savepoints"]).content.decode()
    assert f'title="{commits[2]}" data-local="datetime">{readable(commits[2])}</time>' in savepoints
    assert f'data-copy="{commits[2]}"' in savepoints
    restore = operator.get(pages["restore"]).content.decode()
    iso = moment_of(commits[2], "LOCAL").isoformat(timespec="milliseconds")
    assert f'savepoint <span class="instant"><time datetime="{iso}" title="{commits[2]}"' in restore


def test_display_timeline_shows_durations_and_a_labelled_axis(table: Table) -> None:
    page = login("viewer").get(reverse("console:timeline", args=[table.pk])).content.decode()
    assert page.count('class="bar state-') == table.instants.count()
    done = [i for i in table.instants.all() if i.completion_time]
    for instant in done:
        seconds = (moment_of(instant.completion_time, "LOCAL") - moment_of(instant.requested_time, "LOCAL"))
        assert f"({seconds.total_seconds():.3f} s)\">{duration_text(seconds.total_seconds())}</span>" in page
    labels = re.findall(r'<time class="(first|middle|last)" style="left: [\d.]+px" datetime="[^"]+" '
                        r'data-local="(\w+)" title="[^"]+">([^<]+)</time>', page)
    times = sorted(moment_of(t, "LOCAL").astimezone(UTC) for i in table.instants.all()
                   for t in (i.requested_time, i.completion_time) if t)
    assert [(edge, label) for edge, _, label in labels][::2] == [
        ("first", f"{times[0]:%H:%M:%S}"), ("last", f"{times[-1]:%H:%M:%S}")]


def test_display_file_groups_show_slice_ages(table: Table) -> None:
    groups = login("viewer").get(reverse("console:file_groups", args=[table.pk]), {"partition": "region=us"})
    _, _, rows = selectors.file_groups(table, "region=us")
    ages = {age_text(moment_of(s.base_instant, "LOCAL")) for g in rows for s in g["slices"]}  # type: ignore[attr-defined]
    assert ages and all(f"<td>{age}</td>" in groups.content.decode() for age in ages), ages


def test_display_failed_writes_show_the_write_readable_and_its_last_change_as_an_age(console_table) -> None:
    from pathlib import Path

    from tests.helpers import fake_failed_write
    from timeline.instant import instant_time_of

    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    failed = instant_time_of(datetime.now(UTC) - timedelta(hours=3, minutes=5), "LOCAL")
    base = Path(table.path.removeprefix("file:"))
    fake_failed_write(base, failed, markers=True)
    two_hours_ago = (datetime.now(UTC) - timedelta(hours=2, minutes=1)).timestamp()
    for state_file in (base / ".hoodie" / "timeline").glob(f"{failed}.*"):
        os.utime(state_file, (two_hours_ago, two_hours_ago))  # its last change
    html = login("viewer").get(reverse("console:failed_writes", args=[table.pk])).content.decode()
    iso = moment_of(failed, "LOCAL").isoformat(timespec="milliseconds")
    assert (f'<td><span class="instant"><time datetime="{iso}" title="{failed}" data-local="datetime">'
            f'{readable(failed)}</time> <span class="age">3 h ago</span>') in html
    assert re.search(r'<td class="num"[^>]* title="72\d\d s">2 h ago</td>', html), html
