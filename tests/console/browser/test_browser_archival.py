"""Archival in a real browser (headless Chromium, Playwright), at a desktop and a phone width: a
table whose archival a savepoint blocks shows the blocker on its overview; the savepoint's page
says what deleting it frees, and it is deleted there; an admin requests the archival, a second
admin approves it (the worker's task runs eagerly in the server), and the active timeline is
shorter on the table's page and on the lake."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from console import services
from console.models import Archival, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHOTS, completed_commits, signed_in
from timeline import HudiTable

VIEWS = [(1280, "light"), (390, "dark")]


def fits(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


@pytest.mark.parametrize(("width", "scheme"), VIEWS)
def test_browser_archival_blocked_by_a_savepoint_freed_and_archived(
        browser: Browser, live_server, archivable_table, width: int, scheme: str) -> None:
    table: Table = archivable_table
    savepoint = completed_commits(table)[1]
    services.savepoint_create(table=table, user=None, instant_time=savepoint, comment="hold")
    ada = signed_in(browser, live_server.url, "ada", "admin", width, scheme)
    ada.goto(f"{live_server.url}/tables/{table.pk}/")
    blocker = ada.locator("#archival ~ table tr.blocker[data-kind='savepoint']")
    assert blocker.count() == 1 and blocker.locator(f"td:nth-child(2) time[title='{savepoint}']").count() == 1
    assert blocker.locator("td:nth-child(3) time").count() == 1  # since when: the savepoint's completion
    assert "12 instants in the active timeline; archival would move 1 now" in ada.inner_text("#archival-summary")
    assert fits(ada)
    SHOTS.mkdir(parents=True, exist_ok=True)
    ada.screenshot(path=str(SHOTS / f"archival-blocked-{width}-{scheme}.png"), full_page=True)

    ada.goto(f"{live_server.url}/tables/{table.pk}/savepoints")
    ada.click("text=delete… (what archival it frees)")
    ada.wait_for_selector("#frees")
    assert "lets archival move 8 more instants" in ada.inner_text("#frees")
    assert ada.locator("#freed-instants tbody tr").count() == 8 and fits(ada)
    ada.screenshot(path=str(SHOTS / f"archival-savepoint-frees-{width}-{scheme}.png"), full_page=True)
    ada.fill("input[name=confirm]", savepoint)
    ada.click("button:has-text('Delete savepoint')")
    # the flash message shows the savepoint's time readable, the raw instant its tooltip (issue 43)
    ada.wait_for_selector(f"p.message:has-text('deleted.') time[title='{savepoint}']")

    ada.click("header nav >> text=Archival")
    ada.click("button:has-text('Request archival of 9 instants')")
    ada.wait_for_selector("#approval-note")
    assert ada.locator("button:has-text('Approve and archive')").count() == 0  # two-person approval
    archival = Archival.objects.get()
    assert archival.status == ApprovalStatus.DRAFT

    bob = signed_in(browser, live_server.url, "bob", "admin", width, scheme)
    bob.goto(f"{live_server.url}/tables/{table.pk}/archivals/{archival.pk}")
    bob.click("button:has-text('Approve and archive')")
    bob.wait_for_selector("#archival-result")
    assert "9 instants archived: the active timeline went from 11 to 2 instants" in bob.inner_text("#archival-result")
    assert fits(bob)
    bob.screenshot(path=str(SHOTS / f"archival-completed-{width}-{scheme}.png"), full_page=True)
    bob.goto(f"{live_server.url}/tables/{table.pk}/")
    assert "2 instants in the active timeline; archival would move 0 now" in bob.inner_text("#archival-summary")
    assert len(HudiTable.open(table.path).timeline) == 2
