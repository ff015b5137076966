"""The newcomer journey (issue 30's must-show) as one test in headless Chromium, with a real
Celery worker, a real SMTP server and a webhook receiver on 127.0.0.1: a fresh demo lake; `admin`
discovers its tables and registers them at once; `admin` plans a clean; the approvals queue, the
header's badge and the approval alert (e-mail and webhook, with the plan's link) reach `admin2`,
who approves it; the worker runs it; the report; what-if retention; a savepoint, a restore to
it; the rollback of the demo's failed write that Hudi's rules allow; people, alerts, audit.

The whole journey runs at 1280 px in the light scheme; every page it visited is then checked
again at 1280 px dark and at 390 px light and dark. On every page: the page is no wider than
the window, and at 390 px no control (button, link, input, select) lies off the screen sideways
(not even behind a table's own sideways scroll). Screenshots (the window; at 1280 px light, 390
px light and dark) are written only when CLEANLINE_SCREENSHOTS names a folder (`make
screenshots`: docs/screenshots/newcomer-<page>-<width>-<scheme>.png); a normal run writes none."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User
from playwright.sync_api import Browser, Page

from console.models import CleanPlan, Job, JobStatus, SyncStatus, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import Sinks, wait_for
from timeline import HudiTable
from timeline.internal.demo import DEMO_TABLES

PASSWORD = "a long enough password 1"
SHOTS = os.environ.get("CLEANLINE_SCREENSHOTS", "")
WORK = 180_000  # ms a worker may take for one step (a sync, a plan, a clean, a restore) on a busy machine
OTHER_VIEWS = [(1280, "dark"), (390, "light"), (390, "dark")]

# The page's width and every visible control not inside the window sideways (at any scroll of
# its own box: a control behind a table's sideways scroll is off the screen too).
LAYOUT_JS = """
() => {
  const width = window.innerWidth;
  const controls = [...document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea")];
  const off = controls.filter((e) => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
      return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && (r.left < -0.5 || r.right > width + 0.5); })
    .slice(0, 5).map((e) => { const r = e.getBoundingClientRect();
      return `${e.tagName.toLowerCase()} "${(e.textContent || e.name || "").trim().slice(0, 30)}" `
             + `${Math.round(r.left)}..${Math.round(r.right)}`; });
  const wide = [...document.body.querySelectorAll("*")].filter((e) => e.getBoundingClientRect().right > width + 0.5)
    .slice(-2).map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join(".")} "${e.textContent.slice(0, 30)}"`);
  return { scrollWidth: document.documentElement.scrollWidth, width, off, wide };
}
"""


class Journey:
    """The pages visited (name, path) in order, and what is wrong with any of them."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.pages: list[tuple[str, str]] = []
        self.problems: list[str] = []

    def look(self, page: Page, name: str, width: int = 1280, scheme: str = "light", *, remember: bool = True) -> None:
        """Check the page as it is shown now; remember it for the other widths and schemes."""
        page.wait_for_load_state()
        if remember and name not in dict(self.pages):
            self.pages.append((name, page.url.removeprefix(self.url)))
        found: dict[str, Any] = page.evaluate(LAYOUT_JS)
        where = f"{name} at {width} px, {scheme}"
        if found["scrollWidth"] > found["width"]:
            self.problems.append(f"{where}: the page is {found['scrollWidth']} px wide in a {found['width']} px window "
                                 f"(the widest: {found['wide']})")
        if width <= 390 and found["off"]:
            self.problems.append(f"{where}: controls off the screen: {found['off']}")
        if SHOTS and (width, scheme) != (1280, "dark"):  # the window, as the look test takes them; dark
            Path(SHOTS).mkdir(parents=True, exist_ok=True)  # desktop pages are the look test's
            page.screenshot(path=str(Path(SHOTS) / f"newcomer-{name}-{width}-{scheme}.png"))


def finished(page: Page, success: str) -> None:
    """Wait for a job's page to show `success`; a refusal or a failure fails the test with its words."""
    page.locator(success).or_(page.locator("#job .badge.plan-failed, main p.error")).first.wait_for(timeout=WORK)
    if page.locator(success).count() == 0:
        jobs = list(Job.objects.values("kind", "status", "error"))
        raise AssertionError(f"{page.locator('main').inner_text()[:2000]}\njobs: {jobs}")


def admin(name: str) -> User:
    user = User.objects.create_user(name, email=f"{name}@cleanline.test", password=PASSWORD)
    user.groups.add(Group.objects.get(name="admin"))
    return user


def sign_in(browser: Browser, journey: Journey, name: str, width: int, scheme: str) -> Page:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)  # type: ignore[arg-type]
    page = context.new_page()
    page.goto(f"{journey.url}/login/")
    journey.look(page, "login", width, scheme, remember=False)
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    journey.look(page, "dashboard", width, scheme)
    return page


def discover_and_register(page: Page, journey: Journey) -> dict[str, Table]:
    page.click("header >> text=Tables")
    page.wait_for_selector("h1:has-text('Tables')")
    journey.look(page, "catalog-empty", remember=False)
    page.click("#discover-link")
    page.wait_for_selector("h1:has-text('Discover tables')")
    assert page.locator("#discovered input[name=path]").count() == len(DEMO_TABLES)
    for name in DEMO_TABLES:
        assert page.locator(f"#discovered td:text-is('{name}')").count() == 1
    journey.look(page, "discover")
    page.click("button:has-text('Register the ticked tables')")
    page.wait_for_selector(f"text={len(DEMO_TABLES)} tables registered")
    # back on the Discover page, each table's sync badge polled until the worker synced it
    page.wait_for_selector("h1:has-text('Discover tables')")
    page.wait_for_selector(f".badge.sync-ok >> nth={len(DEMO_TABLES) - 1}", timeout=WORK)
    journey.look(page, "discover-registered", remember=False)
    page.click("header >> text=Tables")
    page.wait_for_selector("h1:has-text('Tables')")
    journey.look(page, "catalog")
    tables = {t.name: t for t in Table.objects.all()}
    assert sorted(tables) == sorted(DEMO_TABLES) and all(t.sync_status == SyncStatus.OK for t in tables.values())
    return tables


def plan_as_admin(page: Page, journey: Journey, trips: Table) -> CleanPlan:
    page.click(f"table.grid a:text-is('{trips.name}')")
    page.wait_for_selector(f"h1:has-text('{trips.name}')")
    journey.look(page, "overview")
    page.fill("input[name=commits_retained]", "2")
    page.check("input[name=allow_short_retention]")  # below the table's 10: the library refuses otherwise
    page.click("button:has-text('Plan a clean')")
    page.wait_for_selector(".badge.plan-draft", timeout=WORK)
    plan = CleanPlan.objects.get()
    assert plan.files_to_delete >= 100
    assert page.locator("text=Approve and run").count() == 0  # two-person approval: not her own plan
    journey.look(page, "plan-draft", remember=False)  # the same page as the report, later
    return plan


def queue_and_notice_reach_admin2(page: Page, journey: Journey, sinks: Sinks, plan: CleanPlan) -> None:
    link = f"{journey.url}/tables/{plan.table_id}/plans/{plan.pk}"
    wait_for(lambda: any(link in m.get_content() for _, m in sinks.mails), 60, "the approval e-mail")
    (recipients, mail), = [(r, m) for r, m in sinks.mails if link in m.get_content()]
    assert recipients == ["admin2@cleanline.test"] and "waits for approval" in mail["Subject"]  # not admin: her plan
    wait_for(lambda: any(link in h["text"] for h in sinks.hooks), 60, "the approval webhook")
    assert page.locator("#approvals-badge").inner_text().strip() == "1"
    page.click("#approvals-link")
    page.wait_for_selector("h1:has-text('Waiting for your decision')")
    assert page.locator("#approvals tbody tr").count() == 1
    journey.look(page, "approvals")
    page.click("#approvals >> text=Review and decide")
    page.wait_for_selector(".badge.plan-draft")
    assert page.url == link


def waiting_on_a_phone(browser: Browser, journey: Journey) -> None:
    """The queue and the plan while the plan waits (later visits find them decided), at 390 px."""
    for scheme in ("light", "dark"):
        page = sign_in(browser, journey, "admin2", 390, scheme)
        page.click("#approvals-link")
        page.wait_for_selector("#approvals tbody tr[data-kind]")
        journey.look(page, "approvals-waiting", 390, scheme, remember=False)
        page.click("#approvals >> text=Review and decide")
        page.wait_for_selector("button:has-text('Approve and run')")
        journey.look(page, "plan-waiting", 390, scheme, remember=False)
        page.context.close()


def approve_run_report(page: Page, journey: Journey, plan: CleanPlan) -> None:
    page.click("button:has-text('Approve and run')")
    page.wait_for_selector(".badge.plan-completed", timeout=WORK)
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.COMPLETED
    assert page.locator("progress").get_attribute("value") == str(plan.files_to_delete)
    assert page.locator("td:has-text('deleted')").count() > 0  # the report: each file's outcome
    assert page.locator("#approvals-badge").count() == 0  # nothing waits any more
    journey.look(page, "plan-report")


def what_if(page: Page, journey: Journey, trips: Table) -> None:
    page.goto(f"{journey.url}/tables/{trips.pk}/retention")
    page.fill("input[name=commits]", "1..4")
    page.fill("input[name=hours]", "")
    page.click("button:has-text('Estimate')")
    page.wait_for_selector("#retention-chart[data-drawn='1']", timeout=WORK)
    assert page.locator("table.grid tbody tr").count() == 4
    journey.look(page, "what-if")


def savepoint_and_restore(page: Page, journey: Journey, trips: Table) -> None:
    commits = [i.requested_time for i in HudiTable.open(trips.path).timeline.commits().completed()]
    page.click("header nav >> text=Savepoints")
    page.wait_for_selector("h1:has-text('savepoints')")
    page.select_option("select[name=instant]", commits[-2])  # the write before the last: the restore undoes one
    page.fill("input[name=comment]", "before the last write")
    page.click("button:has-text('Create savepoint')")
    page.wait_for_selector("td:has-text('before the last write')")
    journey.look(page, "savepoints")
    page.locator("tr:has-text('before the last write') >> text=restore preview").click()
    page.wait_for_selector("h1:has-text('Restore')")
    assert page.locator("h2:has-text('Instants rolled back') + table tbody tr").count() == 1
    journey.look(page, "restore-preview")
    page.fill("input[name=confirm]", trips.name)
    page.click("button:has-text('Restore')")
    finished(page, "text=Checked: the table's latest file slices are those it had")
    assert Job.objects.get(kind="restore").status == JobStatus.COMPLETED
    journey.look(page, "restore-done")
    assert [i.requested_time for i in HudiTable.open(trips.path).timeline.commits().completed()] == commits[:-1]


def roll_back_failed_write(page: Page, journey: Journey, orders: Table) -> None:
    page.goto(f"{journey.url}/tables/{orders.pk}/failed-writes")
    page.wait_for_selector("h1:has-text('failed writes')")
    assert page.locator("text=Preview and roll back").count() == 1  # the newest; the older one is refused
    journey.look(page, "failed-writes")
    page.click("a.way-forward")  # the refused one: Hudi's rule and the way forward
    page.wait_for_selector("#way-forward")
    journey.look(page, "rollback-refused")
    page.go_back()
    page.click("text=Preview and roll back")
    page.wait_for_selector("text=A rollback cannot be undone")
    journey.look(page, "rollback-preview", remember=False)  # gone once rolled back
    target = page.locator("input[name=target]").get_attribute("value")
    assert target is not None
    page.fill("input[name=confirm]", target)
    stopped = page.locator("input[name=writers_stopped]")
    if stopped.count():  # the demo lake was written a moment ago: its pending write looks live (timeline/locks/live.py)
        stopped.check()  # and the newcomer says its writer has stopped, as the form asks
    page.click("button:has-text('Roll back this write')")
    finished(page, "text=is rolled back (rollback instant")
    assert Job.objects.get(kind="rollback").status == JobStatus.COMPLETED
    journey.look(page, "rollback-done")
    pending = HudiTable.open(orders.path).timeline.commits().pending()
    assert target not in [i.requested_time for i in pending] and len(list(pending)) == 1


def people_alerts_audit(page: Page, journey: Journey, plan: CleanPlan) -> None:
    page.click("header >> text=People")
    page.wait_for_selector("#people")
    assert page.locator("#people tr:has-text('admin2')").count() == 1
    journey.look(page, "people")
    page.click("header >> text=Alerts")
    page.wait_for_selector("h1:has-text('Alerts')")
    page.wait_for_selector(f"text=clean plan #{plan.pk} waits for approval")  # the alert that reached admin2
    page.select_option("select[name=table]", str(plan.table_id))
    page.click("button:has-text('Show its rules')")
    page.wait_for_selector("#alert-rules")  # the table's rules, as they are today
    journey.look(page, "alerts")
    page.click("header >> text=Audit log")
    page.wait_for_selector("h1:has-text('Audit log')")
    for action in ("clean.plan.approval.requested", "clean.run.completed", "savepoint.created", "restore.completed",
                   "rollback.completed"):
        assert page.locator(f"td:text-is('{action}')").count() == 1, action
    page.fill("input[name=action]", "table.registered")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("td:text-is('table.registered')").count() == len(DEMO_TABLES)
    journey.look(page, "audit")


def test_newcomer_journey_discover_plan_approve_run_restore_roll_back_at_two_widths_and_schemes(
        browser: Browser, live_server, settings, start_worker, sinks: Sinks, demo_lake: Path,
        tmp_path: Path) -> None:  # noqa: F811
    lake = tmp_path / "lake"
    for name in DEMO_TABLES:
        shutil.copytree(demo_lake / name, lake / name)
    settings.CLEANLINE_ALLOWED_ROOTS = [str(lake)]
    start_worker(EMAIL_HOST="127.0.0.1", EMAIL_PORT=str(settings.EMAIL_PORT), CLEANLINE_ALERT_EMAILS="",
                 CLEANLINE_ALERT_WEBHOOKS=",".join(settings.CLEANLINE_ALERT_WEBHOOKS), CLEANLINE_URL=live_server.url,
                 CLEANLINE_ALERT_ALLOWED_HOSTS=",".join(settings.CLEANLINE_ALERT_ALLOWED_HOSTS))  # its receiver
    admin("admin"), admin("admin2")
    journey = Journey(live_server.url)

    first = sign_in(browser, journey, "admin", 1280, "light")
    tables = discover_and_register(first, journey)
    plan = plan_as_admin(first, journey, tables["trips_cow_v6"])
    second = sign_in(browser, journey, "admin2", 1280, "light")
    queue_and_notice_reach_admin2(second, journey, sinks, plan)
    waiting_on_a_phone(browser, journey)
    approve_run_report(second, journey, plan)
    what_if(second, journey, tables["trips_cow_v6"])
    savepoint_and_restore(second, journey, tables["trips_cow_v6"])
    roll_back_failed_write(second, journey, tables["orders_cow_v8"])
    people_alerts_audit(second, journey, plan)
    assert not journey.problems, "\n".join(journey.problems)

    for width, scheme in OTHER_VIEWS:  # the same pages, as they are now, at the other widths and schemes
        page = sign_in(browser, journey, "admin2", width, scheme)
        for name, path in journey.pages:
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None and response.status == 200, (name, path)
            journey.look(page, name, width, scheme, remember=False)
        page.context.close()
    assert not journey.problems, "\n".join(journey.problems)
