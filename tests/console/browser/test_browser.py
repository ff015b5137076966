"""The console in a real browser: headless Chromium (Debian's) driven by Playwright. Logs in,
opens the catalog, a table's timeline with a filter and an instant's detail, and saves
screenshots of each page under var/screenshots/ (docs/screenshots/ with `make screenshots`)."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import Group, User
from playwright.sync_api import Browser

from console import services
from tests.console.helpers import SHOTS


def test_browser_login_catalog_timeline_and_instant(browser: Browser, live_server, settings, tmp_path: Path,
                                                    table_copy) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    table = services.table_register(path=str(table_copy("sample_table/mor/avro/v9_txns_simple_nometa")), user=None,
                                    enqueue=False)  # synced here, below
    services.table_sync(table=table)
    user = User.objects.create_user("ada", password="correct horse")
    user.groups.add(Group.objects.get(name="viewer"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")  # the home page after login
    assert page.locator("table.grid.dashboard tbody tr").count() == 1
    # four charts: each drawn, or (nothing to chart yet: every value 0) said in a sentence (issue 43)
    page.wait_for_function("document.querySelectorAll(\"canvas[data-chart][data-drawn='1']\").length"
                           " + document.querySelectorAll('p.chart-empty').length === 4")
    page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)
    page.click("header >> text=Tables")
    page.wait_for_selector("h1:has-text('Tables')")
    assert page.locator("table.grid tbody tr").count() == 1
    assert page.locator("text=Register a table").count() == 0  # a viewer may not register
    page.screenshot(path=str(SHOTS / "catalog.png"), full_page=True)
    page.click(f"text={table.name}")
    page.wait_for_selector("h1")
    page.click("header nav >> text=Timeline")
    page.select_option("select[name=action]", "deltacommit")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()
    rows = page.locator("table.grid tbody tr")
    assert rows.count() == table.instants.filter(action="deltacommit").count()
    assert all("deltacommit" in rows.nth(i).inner_text() for i in range(rows.count()))
    assert page.locator("svg.axis rect").count() == rows.count()
    page.screenshot(path=str(SHOTS / "timeline.png"), full_page=True)
    rows.first.locator("a").click()
    page.wait_for_selector("text=Write stats")
    assert page.locator("details pre").first.inner_text().strip().startswith("{")
    page.screenshot(path=str(SHOTS / "instant.png"), full_page=True)
    page.goto(f"{live_server.url}/tables/{table.pk}/file-groups")
    page.wait_for_selector("section.group")
    page.screenshot(path=str(SHOTS / "file-groups.png"), full_page=True)
    page.close()
    assert all((SHOTS / f"{name}.png").stat().st_size > 10_000 for name in ("catalog", "timeline", "instant"))
