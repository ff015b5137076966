"""Instant times in a real browser (headless Chromium, Playwright) at desktop and phone widths:
read in the browser's own zone, the raw instant on hover and copied by the copy button, the
timeline's labelled time axis, and a day picked in From/To filtering the list."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import Browser, Page

from console import services
from console.models import Table
from tests.console.helpers import SHOTS
from timeline.instant import moment_of

# The console runs in UTC (TIME_ZONE; the fixture table writes LOCAL times, read in the same
# zone); the browser is on Kiritimati, 14 h ahead: every time on the page moves, to the next day
# for the fixture's afternoon instants, and a day picked in the filter is a day there.
BROWSER_ZONE = "Pacific/Kiritimati"
BROWSER_ZONE_NAME = "UTC+14"  # the server names a zone without an abbreviation by its offset


def local(instant_time: str) -> str:
    """How the page should show an instant time in the browser's zone."""
    return moment_of(instant_time, "LOCAL").astimezone(ZoneInfo(BROWSER_ZONE)).strftime("%Y-%m-%d %H:%M:%S")


def open_timeline(browser: Browser, live_server, table: Table, width: int) -> Page:  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": 900}, timezone_id=BROWSER_ZONE)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")  # the home page after login
    page.goto(f"{live_server.url}/tables/{table.pk}/timeline")
    page.wait_for_selector("time[data-localised]")
    return page


@pytest.mark.parametrize("width", [1280, 390])
def test_browser_time_readable_local_hover_copy_axis_and_date_filter(
        browser: Browser, live_server, settings, tmp_path: Path, table_copy, width: int) -> None:  # noqa: F811
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    table = services.table_register(path=str(table_copy("sample_table/mor/avro/v9_txns_simple_nometa")), user=None,
                                    enqueue=False)  # synced here, below
    services.table_sync(table=table)
    user = User.objects.create_user("ada", password="correct horse")
    user.groups.add(Group.objects.get(name="viewer"))
    newest = table.instants.order_by("-requested_time")[0]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = open_timeline(browser, live_server, table, width)

    first = page.locator("table.grid tbody tr").first.locator("td").first.locator("time")
    assert first.get_attribute("title") == newest.requested_time  # the raw instant on hover
    assert first.inner_text().startswith(local(newest.requested_time)) and BROWSER_ZONE_NAME in first.inner_text()
    first.hover()
    box = first.bounding_box()
    assert box is not None and box["width"] > 40 and first.is_visible()
    assert "ago" in page.locator("table.grid tbody tr").first.locator(".age").inner_text()
    shown = page.locator("table.grid tbody time[data-local=datetime]")
    assert shown.count() == sum(1 + bool(i.completion_time) for i in table.instants.all())  # requested, completed
    texts = shown.all_inner_texts()
    assert not [t for t in texts if not t.endswith(BROWSER_ZONE_NAME)], texts

    copy = page.locator("table.grid tbody tr").first.locator("button.copy").first
    copy.click()
    assert page.evaluate("navigator.clipboard.readText()") == newest.requested_time
    page.wait_for_selector("button.copy.copied")

    labels = page.locator(".axis-labels time")
    assert labels.count() == 3
    earliest = min(i.requested_time for i in table.instants.all())
    assert labels.first.inner_text() == local(earliest)[11:]  # the page spans minutes: times of day
    assert labels.first.get_attribute("title") and labels.last.inner_text() > labels.first.inner_text()
    if width >= 1280:  # readable times still fit a desktop window
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"timeline-time-{width}.png"), full_page=True)

    # a day picked in From and To: the instants of that day in the browser's zone
    day = date.fromisoformat(local(earliest)[:10])
    assert day != moment_of(earliest, "LOCAL").date()  # the browser's day, not the console's
    page.fill("input[name=since]", day.isoformat())
    page.fill("input[name=until]", day.isoformat())
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()
    zone = page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")  # the script's, as Chromium names it
    assert datetime(2026, 1, 1, tzinfo=ZoneInfo(zone)).utcoffset() == timedelta(hours=14)
    assert f"zone={zone.replace('/', '%2F')}" in page.url and f"since={day.isoformat()}" in page.url
    assert page.locator("#filter-error").count() == 0
    expected = [i for i in table.instants.all() if local(i.requested_time)[:10] == day.isoformat()]
    assert expected and page.locator("table.grid tbody tr").count() == len(expected)
    page.fill("input[name=since]", (day + timedelta(days=1)).isoformat())
    page.fill("input[name=until]", "")
    page.click("form.filters button[type=submit]")
    page.wait_for_selector("text=No instant matches")
    page.context.close()
