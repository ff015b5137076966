"""The table doctor in a real browser (headless Chromium, Playwright): the dashboard's health list,
a table's finding, its repair preview, the request by an admin (who may not approve it: two-person
approval), the approval by a second admin and the healthy result (issue 28)."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import Group, User
from playwright.sync_api import Browser, Page

from console.models import Table
from console.models_approvals import ApprovalStatus
from console.models_health import Repair
from console.tasks import sync_table
from tests.console.helpers import SHOTS, leave_markers

V9_COW = "sample_table/cow/v9_txns_simple_nometa"


def signed_in(browser: Browser, url: str, name: str, role: str) -> Page:
    User.objects.create_user(name, password="correct horse").groups.add(Group.objects.get(name=role))
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    return page


def test_browser_health_list_finding_preview_second_admin_approval_and_healthy_result(
        browser: Browser, live_server, console_table, settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    table: Table = console_table(V9_COW)
    instant = leave_markers(Path(table.path.removeprefix("file:")))
    sync_table.apply(args=[table.pk])  # the sync runs the doctor
    SHOTS.mkdir(parents=True, exist_ok=True)

    requester = signed_in(browser, live_server.url, "ada", "admin")  # asks for the repair
    row = requester.locator(f"#lake-health-list tr[data-table='{table.name}']")
    assert "info" in row.inner_text() and "leftover-markers" in row.inner_text()
    row.locator("a").click()
    finding = requester.locator("#health-findings tr.finding[data-kind='leftover-markers']")
    finding.wait_for()
    assert "marker folder(s) of finished instants" in finding.inner_text() and instant in finding.inner_text()
    requester.screenshot(path=str(SHOTS / "health-finding.png"))
    finding.locator("a.repair-preview").click()
    requester.wait_for_selector("#repair-changes")
    assert "delete folder" in requester.locator("#repair-changes").inner_text()
    assert instant in requester.locator("#repair-changes").inner_text()
    requester.screenshot(path=str(SHOTS / "health-repair-preview.png"))
    requester.click("button:has-text('Request this repair')")
    requester.wait_for_selector("#repair-status:has-text('waiting for approval')")
    note = requester.locator("#approval-note").inner_text()
    assert "You requested this repair: another admin must approve it" in note
    assert requester.locator("button:has-text('Approve and run')").count() == 0
    repair = Repair.objects.get(table=table)

    admin = signed_in(browser, live_server.url, "bert", "admin")
    admin.goto(f"{live_server.url}/tables/{table.pk}/repairs/{repair.pk}")
    admin.click("button:has-text('Approve and run')")  # the run is queued on commit (eager here)
    admin.wait_for_selector("#repair-done")
    repair.refresh_from_db()
    assert repair.status == ApprovalStatus.COMPLETED and repair.decided_by is not None
    assert "1 change made" in admin.locator("#repair-done").inner_text()
    admin.screenshot(path=str(SHOTS / "health-repair-done.png"))
    admin.locator("#repair-done a").click()
    admin.wait_for_selector("#health-healthy")
    admin.goto(f"{live_server.url}/")
    assert "healthy" in admin.locator(f"#lake-health-list tr[data-table='{table.name}']").inner_text()
    admin.screenshot(path=str(SHOTS / "health-dashboard.png"), full_page=True)
    admin.set_viewport_size({"width": 390, "height": 900})  # a phone: wide tables scroll in their own box
    for url in (f"/tables/{table.pk}/repairs/{repair.pk}", f"/tables/{table.pk}/health/leftover-markers/repair", "/"):
        admin.goto(f"{live_server.url}{url}")
        assert admin.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), url
