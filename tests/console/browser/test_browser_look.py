"""Look and feel in a real browser (headless Chromium, Playwright): every page of the console at
a desktop (1280 px) and a phone (390 px) width, in the light and the dark colour scheme. No page
is wider than the window (wide tables scroll inside their own box), text keeps a readable
contrast against what is behind it (dark mode follows the system), the element focused with the
keyboard has a visible outline, and the retention what-if chart is drawn. A screenshot of each
page in each combination goes to the SHOTS folder as `<page>-<width>-<scheme>.png`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import Group, User
from django.urls import reverse
from playwright.sync_api import Browser, Page

from console import services
from console.models import JobStatus, Table
from console.models_approvals import ApprovalStatus
from console.services.history import snapshot_record
from tests.console.helpers import SHORT_RETENTION, SHOTS
from tests.helpers import fake_failed_write
from timeline import HudiTable

VIEWPORTS = {1280: {"width": 1280, "height": 900}, 390: {"width": 390, "height": 844}}
SCHEMES = ("light", "dark")

# WCAG AA: 4.5:1 for text, 3:1 for a focus outline against what is behind it.
TEXT_CONTRAST = 4.5
OUTLINE_CONTRAST = 3.0

# In the page: colours parsed from computed styles, the background behind an element (the first
# ancestor with an opaque one), relative luminance and contrast ratios.
COLOUR_JS = """
const rgb = (s) => { const m = /rgba?\\(([^)]+)\\)/.exec(s || "");
  if (!m) return null; const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
const lum = (c) => { const a = c.slice(0, 3).map((v) => { v /= 255;
  return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * a[0] + 0.7152 * a[1] + 0.0722 * a[2]; };
const contrast = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
const behind = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
  if (c && c[3] > 0.5) return c; } return [255, 255, 255, 1]; };
"""

# Text-bearing elements whose contrast is measured (the first few visible ones of each kind).
TEXT_SELECTORS = ["body", "h1", "h2", "h3", "p", "a", "th", "td", "dt", "dd", "li", "label", "summary", "figcaption",
                  ".badge", ".path", ".hint", ".error", ".warn-text", ".ok-text", ".message", ".duration",
                  ".instant .age", "button", "input:not([type=hidden])", "select", "pre", "code", "svg text"]

LOOK_JS = COLOUR_JS + """
(selectors) => {
  const html = document.documentElement, body = document.body;
  const bodyStyle = getComputedStyle(body);
  const low = [];
  for (const selector of selectors) {
    let seen = 0;
    for (const el of document.querySelectorAll(selector)) {
      if (seen >= 6) break;
      const box = el.getBoundingClientRect();
      const text = (["INPUT", "SELECT"].includes(el.tagName) ? el.value : el.textContent || "").trim();
      if (!box.width || !box.height || (!text && !["INPUT", "SELECT"].includes(el.tagName))) continue;
      seen++;
      const style = getComputedStyle(el);
      const fg = rgb(el.tagName === "text" ? style.fill : style.color), bg = behind(el);
      if (!fg) continue;
      const ratio = contrast(fg, bg);
      if (ratio < %(text)s) low.push(`${selector} "${text.slice(0, 30)}" ${style.color} on rgb(${bg.slice(0, 3)}): `
                                     + ratio.toFixed(2));
    }
  }
  const scrolls = (e) => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
  const wide = [...body.querySelectorAll("*")].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
    .filter((e) => { for (let p = e.parentElement; p && p !== body; p = p.parentElement) if (scrolls(p)) return false;
                     return true; })
    .slice(-3).map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join(".")} "${e.textContent.slice(0, 20)}"`);
  return {
    wide, scrollWidth: html.scrollWidth, innerWidth: window.innerWidth,
    clipped: [getComputedStyle(html).overflowX, bodyStyle.overflowX].filter((o) => o === "hidden" || o === "clip"),
    background: lum(behind(body)), ink: lum(rgb(bodyStyle.color)), lowContrast: low,
  };
}
""".replace("%(text)s", str(TEXT_CONTRAST))

# Tab from the top of the page until a button has the focus (the header's "Log out" at the
# latest); each element focused on the way must show an outline of 2 px or more that stands out.
FOCUS_JS = COLOUR_JS + """
() => {
  const el = document.activeElement, style = getComputedStyle(el);
  const outline = rgb(style.outlineColor), bg = behind(el.parentElement || el);
  return { tag: el.tagName, text: (el.textContent || el.name || "").trim().slice(0, 30), style: style.outlineStyle,
           width: parseFloat(style.outlineWidth) || 0, contrast: outline ? contrast(outline, bg) : 0 };
}
"""


def lake_pages(table: Table) -> list[tuple[str, str]]:
    """Real data behind every page: a draft plan and a completed one, a savepoint, a rollback
    job, a failed write, a retention estimate, an API token; returns (name, path) of each page.
    Each is made here, in the test's process: no task is queued for it."""
    operator = User.objects.create_user("olga", password="secret pass")
    operator.groups.add(Group.objects.get(name="operator"))
    admin = User.objects.create_user("ada", password="secret pass")
    admin.groups.add(Group.objects.get(name="admin"))
    draft = services.plan_build(plan=services.plan_request(table=table, user=operator, overrides=SHORT_RETENTION,
                                                           enqueue=False))
    # estimated before the clean below: its chart has bars
    estimate = services.estimate_run(estimate=services.estimate_request(table=table, user=operator,
                                                                        commits=[1, 2, 3, 5], hours=[24],
                                                                        enqueue=False))
    assert estimate.status == JobStatus.COMPLETED and any(r["bytes_to_delete"] for r in estimate.result)
    done = services.plan_build(plan=services.plan_request(table=table, user=operator, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    done = services.plan_run(plan=services.plan_approve(plan=done, user=admin))
    assert draft.status == ApprovalStatus.DRAFT and draft.files_to_delete > 0, draft.error
    assert done.status == ApprovalStatus.COMPLETED, done.error
    commits = [i.requested_time for i in HudiTable.open(table.path).timeline.commits().completed()]
    savepoint = services.savepoint_create(table=table, user=admin, instant_time=commits[-1],
                                          comment="before the backfill")
    lake = Path(table.path.removeprefix("file:"))
    fake_failed_write(lake, "20990101000000000", markers=True)
    job = services.job_run(job=services.job_request(table=table, user=admin, kind="rollback",
                                                    target="20990101000000000", confirm_name="20990101000000000",
                                                    enqueue=False))
    assert job.status == JobStatus.COMPLETED, job.error
    fake_failed_write(lake, "20990102000000000", markers=True)  # one left for the failed-writes page
    services.table_sync(table=table)
    snapshot_record(table=table)  # the History pages' charts have a point
    services.token_create(actor=admin, owner=admin, name="ci pipeline")
    instant = table.instants.filter(action="commit", state="COMPLETED").order_by("-requested_time")[0]
    of_table = {"overview": [], "timeline": [], "instant": [instant.pk], "file-groups": [], "savepoints": [],
                "restore": [savepoint], "failed-writes": [], "plan-draft": [draft.pk], "plan-completed": [done.pk],
                "job": [job.pk], "table-history": [], "retention": []}
    names = {"file-groups": "file_groups", "failed-writes": "failed_writes", "plan-draft": "plan",
             "plan-completed": "plan", "table-history": "table_history"}
    pages = [(name, reverse(f"console:{name}")) for name in ("home", "catalog", "audit", "tokens", "people")]
    pages.append(("alerts", f"{reverse('console:alerts')}?table={table.pk}"))
    pages += [("history", reverse("console:history")), ("alerts-setup", reverse("console:alerts_setup"))]
    pages += [(name, reverse(f"console:{names.get(name, name)}", args=[table.pk, *args]))
              for name, args in of_table.items()]
    pages[-1] = ("retention", f"{pages[-1][1]}?estimate={estimate.pk}")
    return pages


def check_page(page: Page, name: str, width: int, scheme: str) -> list[str]:
    """What is wrong with the page as it is shown now (nothing: an empty list)."""
    where = f"{name} at {width} px, {scheme}"
    problems = []
    look: dict[str, Any] = page.evaluate(LOOK_JS, TEXT_SELECTORS)
    if look["scrollWidth"] > look["innerWidth"]:
        problems.append(f"{where}: the page is {look['scrollWidth']} px wide in a {look['innerWidth']} px window, "
                        f"the widest: {look['wide']}")
    if look["clipped"]:
        problems.append(f"{where}: overflow hidden on the page hides what does not fit")
    dark = look["background"] < 0.05 and look["ink"] > 0.5
    light = look["background"] > 0.8 and look["ink"] < 0.1
    if not (dark if scheme == "dark" else light):
        problems.append(f"{where}: background luminance {look['background']:.2f}, text {look['ink']:.2f}")
    problems += [f"{where}: low contrast {low}" for low in look["lowContrast"]]
    page.evaluate("document.activeElement && document.activeElement.blur()")  # the keyboard from the top
    for _ in range(40):
        page.keyboard.press("Tab")
        focus = page.evaluate(FOCUS_JS)
        if focus["style"] == "none" or focus["width"] < 2 or focus["contrast"] < OUTLINE_CONTRAST:
            problems.append(f"{where}: focused {focus['tag']} {focus['text']!r} has outline {focus['style']} "
                            f"{focus['width']} px, contrast {focus['contrast']:.2f}")
            break
        if focus["tag"] == "BUTTON":
            break
    else:
        problems.append(f"{where}: no button reached with the keyboard")
    return problems


def test_browser_look_every_page_fits_reads_in_both_schemes_shows_focus_and_draws_the_chart(
        browser: Browser, live_server, settings, tmp_path: Path, table_copy) -> None:  # noqa: F811
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    table = services.table_register(path=str(table_copy("sample_table/cow/v9_txns_simple_nometa")), user=None,
                                    enqueue=False)  # synced here, below
    services.table_sync(table=table)
    pages = lake_pages(table)
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for width, viewport in VIEWPORTS.items():
        for scheme in SCHEMES:
            context = browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]
            page = context.new_page()
            page.goto(f"{live_server.url}/login/")
            problems += check_page(page, "login", width, scheme)
            page.screenshot(path=str(SHOTS / f"login-{width}-{scheme}.png"))
            page.fill("input[name=username]", "ada")
            page.fill("input[name=password]", "secret pass")
            page.click("button[type=submit]")
            page.wait_for_load_state()
            assert "/login/" not in page.url
            for name, path in pages:
                response = page.goto(f"{live_server.url}{path}")
                assert response is not None and response.status == 200, (name, path)
                if name == "retention":
                    assert page.locator("#retention-chart").count() == 1
                for canvas in page.locator("canvas").all():  # the charts: drawn, inside the window
                    canvas.scroll_into_view_if_needed()
                    page.wait_for_function("(c) => c.dataset.drawn === '1'", arg=canvas.element_handle())
                    box = canvas.bounding_box()
                    assert box is not None and box["width"] > 200 and box["height"] > 100, (name, box)
                    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (name, box)
                page.evaluate("window.scrollTo(0, 0)")
                problems += check_page(page, name, width, scheme)
                page.evaluate("document.activeElement && document.activeElement.blur()")
                page.screenshot(path=str(SHOTS / f"{name}-{width}-{scheme}.png"))
            context.close()
    assert not problems, "\n".join(problems)
