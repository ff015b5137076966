"""A phone's width (390 px) in a real browser (issue 30): file names wrap at sensible places (a
whole name takes a few lines, not one line every few characters), the plan page stays short
(its files stacked one under another, its partitions collapsed when many), and every control
of the People page (role, change, deactivate) is on the screen, not behind a sideways scroll."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser

from console import services
from console.models import Table
from tests.console.helpers import SHORT_RETENTION, SHOTS, browser_sign_in, person

pytestmark = pytest.mark.django_db(transaction=True)
PHONE = {"viewport": {"width": 390, "height": 844}}


def on_screen(box: dict[str, Any] | None) -> bool:
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390


def test_browser_narrow_plan_page_is_short_and_file_names_wrap_sensibly(
        browser: Browser, live_server, console_table) -> None:  # noqa: F811
    table: Table = console_table("sample_table/cow/v9_txns_simple_nometa")
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    page = browser_sign_in(browser, live_server.url, "admin", **PHONE)
    page.goto(f"{live_server.url}/tables/{table.pk}/plans/{plan.pk}?show=all")
    names = page.locator("td.wrap")  # the file names
    assert names.count() >= 10
    line = float(page.evaluate("parseFloat(getComputedStyle(document.querySelector('td.wrap')).lineHeight)"))
    heights = [names.nth(n).bounding_box()["height"] for n in range(names.count())]  # type: ignore[index]
    assert max(heights) <= 4 * line + 12, (max(heights), line)  # a few lines a name, not a character column
    rows = names.count()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "plan-390-stacked.png"), full_page=True)
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= 1800 + rows * 160, (height, rows)  # was some 480 px a file: a 50-file page 25,000 px
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "plan-390-stacked.png"), full_page=True)


def test_browser_narrow_people_controls_are_on_the_screen(browser: Browser, live_server) -> None:  # noqa: F811
    for n in range(3):
        person(f"someone-with-a-long-name-{n}", "viewer").__class__.objects.filter(
            username=f"someone-with-a-long-name-{n}").update(email=f"someone.with.a.long.name.{n}@example.com")
    page = browser_sign_in(browser, live_server.url, "admin", **PHONE)
    page.goto(f"{live_server.url}/people")
    controls = page.locator("#people select, #people button")
    assert controls.count() >= 6
    off = [n for n in range(controls.count()) if not on_screen(controls.nth(n).bounding_box())]
    assert not off, [controls.nth(n).bounding_box() for n in off]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "people-390-stacked.png"), full_page=True)


def test_browser_narrow_instant_page_fits_and_its_paths_wrap_as_names(
        browser: Browser, live_server, console_table) -> None:  # noqa: F811
    """Issue 43: at 390 px the instant page's Path column wrapped every 4 characters and the page
    was 415 px wide. Its write stats stack: a path takes the whole width, a few lines at most."""
    table: Table = console_table("sample_table/cow/v9_txns_simple_nometa")
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("-requested_time")[0]
    page = browser_sign_in(browser, live_server.url, "viewer", **PHONE)
    page.goto(f"{live_server.url}/tables/{table.pk}/instants/{commit.pk}")
    paths = page.locator("table.grid td:text-matches('\\.parquet$')")  # the Path column's cells
    assert paths.count() >= 1
    line = float(page.evaluate("parseFloat(getComputedStyle(document.querySelector('table.grid td')).lineHeight)"))
    for n in range(paths.count()):
        box = paths.nth(n).bounding_box()
        assert box is not None and box["width"] >= 300 and box["height"] <= 3 * line + 8, (box, line)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "instant-390.png"), full_page=True)
