"""Safe flows and what-if retention in a real browser (headless Chromium, Playwright), at a
desktop and a phone width, in light and dark: a failed write is previewed, confirmed by typing
its time and rolled back, with a readable result; a what-if estimate is asked for and drawn."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from console import services
from console.models import Job, JobStatus, Table
from tests.console.helpers import SHOTS, browser_sign_in
from tests.helpers import fake_failed_write

FAILED = "20990101000000000"
VIEWS = [(1280, "light"), (390, "dark")]


def logged_in(browser: Browser, url: str, width: int, scheme: str) -> Page:  # noqa: F811
    return browser_sign_in(browser, url, "admin", viewport={"width": width, "height": 900}, color_scheme=scheme)


def fits(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


@pytest.mark.parametrize(("width", "scheme"), VIEWS)
def test_browser_rollback_preview_typed_confirmation_and_readable_result(
        browser: Browser, live_server, console_table, width: int, scheme: str) -> None:  # noqa: F811
    table: Table = console_table("sample_table/cow/v8_nonpartitioned")
    fake_failed_write(Path(table.path.removeprefix("file:")), FAILED, markers=True)
    services.table_sync(table=table)
    page = logged_in(browser, live_server.url, width, scheme)
    page.goto(f"{live_server.url}/tables/{table.pk}/failed-writes")
    page.click("text=Preview and roll back")
    page.wait_for_selector("text=A rollback cannot be undone")
    assert page.locator("table.grid tbody tr").count() >= 1 and fits(page)
    page.click("button:has-text('Roll back this write')")  # nothing typed: the browser asks for it
    assert not Job.objects.exists()
    page.fill("input[name=confirm]", FAILED)
    page.click("button:has-text('Roll back this write')")
    page.wait_for_selector("text=is rolled back (rollback instant")
    assert Job.objects.get().status == JobStatus.COMPLETED and fits(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"flow-rollback-{width}-{scheme}.png"))


@pytest.mark.parametrize(("width", "scheme"), VIEWS)
def test_browser_what_if_retention_is_asked_for_and_drawn(
        browser: Browser, live_server, console_table, width: int, scheme: str) -> None:  # noqa: F811
    table: Table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    page = logged_in(browser, live_server.url, width, scheme)
    page.goto(f"{live_server.url}/tables/{table.pk}/retention")
    page.fill("input[name=commits]", "1..4")
    page.fill("input[name=hours]", "")
    page.click("button:has-text('Estimate')")
    page.wait_for_selector("#retention-chart[data-drawn='1']")
    assert page.locator("table.grid tbody tr").count() == 4
    box = page.locator("#retention-chart").bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 100 and fits(page)
    page.screenshot(path=str(SHOTS / f"flow-what-if-{width}-{scheme}.png"))
