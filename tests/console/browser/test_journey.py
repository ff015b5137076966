"""The admin journey in headless Chromium on a table of the demo lake, with a real Celery worker:
an operator plans a clean and reviews it; an admin approves it, watches the progress bar finish,
opens the deleted-file report, creates a savepoint and opens a restore preview. Screenshots of
each step go to var/screenshots/journey-*.png (docs/screenshots/ with `make screenshots`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from django.contrib.auth.models import Group, User
from playwright.sync_api import Browser, Page

from console import services
from console.models import CleanPlan, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHOTS, queued_outcome


def log_in(browser: Browser, url: str, name: str, role: str) -> Page:  # noqa: F811
    User.objects.create_user(name, password="secret pass").groups.add(Group.objects.get(name=role))
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "secret pass")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")  # the home page after login
    return page


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"journey-{name}.png"), full_page=True)


def test_journey_plan_review_approve_report_savepoint_restore(
        browser: Browser, live_server, settings, start_worker, demo_lake: Path, tmp_path: Path) -> None:  # noqa: F811
    shutil.copytree(demo_lake / "trips_cow_v6", tmp_path / "trips_cow_v6")
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    start_worker()
    table = services.table_register(path=str(tmp_path / "trips_cow_v6"), user=None)  # the worker runs its sync
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    SHOTS.mkdir(parents=True, exist_ok=True)

    operator = log_in(browser, live_server.url, "olga", "operator")
    operator.click(f"text={table.name}")
    operator.fill("input[name=commits_retained]", "2")
    operator.check("input[name=allow_short_retention]")  # below the table's 10: the library refuses otherwise
    operator.click("button:has-text('Plan a clean')")
    operator.wait_for_selector(".badge.plan-draft", timeout=120_000)
    plan = CleanPlan.objects.get()
    assert plan.files_to_delete >= 100
    assert operator.locator("text=Approve and run").count() == 0
    shot(operator, "1-review")
    operator.select_option("select[name=show]", "keep")
    operator.select_option("select[name=partition]", "paris")
    operator.click("form.filters button[type=submit]")
    operator.wait_for_selector("td:has-text('latest version')")
    shot(operator, "2-kept-files")

    admin = log_in(browser, live_server.url, "ada", "admin")
    admin.goto(f"{live_server.url}/tables/{table.pk}/plans/{plan.pk}")
    admin.click("text=Approve and run")
    admin.wait_for_selector("progress")
    admin.wait_for_selector(".badge.plan-completed", timeout=120_000)
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.COMPLETED
    assert admin.locator("progress").get_attribute("value") == str(plan.files_to_delete)
    shot(admin, "3-completed")
    assert admin.locator("td:has-text('deleted')").count() > 0
    shot(admin, "4-report")

    admin.click("header nav >> text=Savepoints")
    admin.fill("input[name=comment]", "before the backfill")
    admin.click("button:has-text('Create savepoint')")
    admin.wait_for_selector("text=before the backfill")
    shot(admin, "5-savepoint")
    admin.locator("text=restore preview").last.click()  # the newest savepoint: older ones have a later one
    admin.wait_for_selector("h1:has-text('Restore')")
    assert admin.locator("input[name=confirm]").count() == 1
    shot(admin, "6-restore-preview")
