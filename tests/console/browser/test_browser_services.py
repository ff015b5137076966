"""The Table services page in a real browser (headless Chromium, Playwright): from a merge-on-read
table's overview to its services through the header, the stuck compaction's row with its plan,
the why, the backlog chart on the dashboard, and on to the doctor's repair preview (issue 41)."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import Group, User
from playwright.sync_api import Browser

from console.models import Table
from console.tasks import sync_table
from tests.console.helpers import SHOTS
from tests.doctor.helpers import OLD, age_tree, stuck_compaction

MOR = "sample_table/mor/avro/v9_txns_simple_nometa"


def test_browser_table_services_stuck_compaction_to_its_repair(browser: Browser, live_server, console_table) -> None:
    table: Table = console_table(MOR)
    stuck_compaction(Path(table.path.removeprefix("file:")), OLD)
    age_tree(Path(table.path.removeprefix("file:")))
    sync_table.apply(args=[table.pk])  # the sync keeps the backlog and runs the doctor
    User.objects.create_user("vic", password="correct horse").groups.add(Group.objects.get(name="viewer"))
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "vic")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    # the backlog chart drawn, or (every value 0) said in a sentence in its place (issue 43)
    page.wait_for_function("document.querySelectorAll(\"canvas[data-chart][data-drawn='1']\").length"
                           " + document.querySelectorAll('p.chart-empty').length === 4")
    page.locator("td.backlog a").click()
    row = page.locator(f"#pending-services tr.service[data-instant='{OLD}']")
    row.wait_for()
    assert "compaction" in row.inner_text() and "inflight" in row.inner_text() and "stuck" in row.inner_text()
    assert row.locator("td").first.locator("time").get_attribute("title") == OLD
    page.locator("tr.plan summary").first.click()
    assert page.locator("tr.plan table").first.is_visible()
    assert page.locator("#why-reasons tr[data-kind='NOT_SCHEDULED_BY_WRITERS']").count() == 1
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "table-services.png"), full_page=True)
    row.locator("a.stuck-repair").click()
    page.wait_for_selector("#repair-changes")
    assert OLD in page.locator("#repair-changes").inner_text()
    assert errors == []
