"""One time zone (issue 30): each user picks the zone every time is shown in (default: the
browser's, which the page's script tells the server), and every page and form shows it with the
zone named; the timeline's search takes a time as the pages show it."""

from __future__ import annotations

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import Browser

from console import services
from console.models import Alert, AlertKind, AuditEvent, Table
from tests.console.helpers import SHORT_RETENTION, SHOTS, browser_sign_in, person
from timeline.instant import moment_of

pytestmark = pytest.mark.django_db

KOLKATA = "Asia/Kolkata"  # IST, +05:30: every time moves, and by half an hour


def shown(moment, zone: str) -> str:  # type: ignore[no-untyped-def]
    local = moment.astimezone(ZoneInfo(zone))
    name = local.tzname() or ""
    return f"{local:%Y-%m-%d %H:%M:%S} {'UTC' + name if name[:1] in '+-' else name}"


def instant_moment(table: Table, instant_time: str):  # type: ignore[no-untyped-def]
    return moment_of(instant_time, (table.properties or {}).get("hoodie.table.timeline.timezone", "LOCAL"))


def test_time_zone_a_users_choice_shows_every_time_in_it_with_the_zone_named(table: Table) -> None:
    ada = person("ada", "admin")
    client = Client()
    client.force_login(ada)
    assert client.post(reverse("console:preferences"), {"time_zone": "Mars/Olympus"}).status_code == 400
    assert client.post(reverse("console:preferences"), {"time_zone": KOLKATA}).status_code == 302
    assert AuditEvent.objects.filter(action="preferences.changed", parameters__time_zone=KOLKATA).exists()
    plan = services.plan_build(plan=services.plan_request(table=table, user=ada, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    alert = Alert.objects.create(table=table, kind=AlertKind.PLAN_STALE, key="plan:1", message="m")
    services.token_create(actor=ada, owner=ada, name="laptop")
    client.force_login(ada)  # a last login to show
    ada.refresh_from_db()
    newest = table.instants.order_by("-requested_time")[0]
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("-requested_time")[0]
    pages = {
        "plan": (reverse("console:plan", args=[table.pk, plan.pk]), shown(plan.requested_at, KOLKATA)),
        "timeline": (reverse("console:timeline", args=[table.pk]),
                     shown(instant_moment(table, newest.requested_time), KOLKATA)),
        "savepoint form": (reverse("console:savepoints", args=[table.pk]),
                           f'{shown(instant_moment(table, commit.requested_time), KOLKATA)} · {commit.requested_time}'),
        "alerts": (reverse("console:alerts"), shown(alert.fired_at, KOLKATA)),
        "tokens": (reverse("console:tokens"), shown(ada.api_tokens.get().created_at, KOLKATA)),
        "people": (reverse("console:people"), shown(ada.last_login, KOLKATA)),
        "audit": (reverse("console:audit"), shown(AuditEvent.objects.order_by("-at")[0].at, KOLKATA)),
        "overview": (reverse("console:overview", args=[table.pk]), shown(plan.requested_at, KOLKATA)),
    }
    for name, (url, text) in pages.items():
        page = client.get(url).content.decode()
        assert text in page, (name, text)
        assert "(UTC)" not in page and 'id="zone-link"' in page and f">{KOLKATA}</a>" in page, name
        assert " IST" in text
    assert not re.search(r">\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?</", client.get(pages["plan"][0]).content.decode())


def test_time_zone_the_browsers_zone_until_the_user_chooses_one(table: Table) -> None:
    ada = person("ada", "admin")
    plan = services.plan_build(plan=services.plan_request(table=table, user=ada, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    url = reverse("console:plan", args=[table.pk, plan.pk])
    client = Client()
    client.force_login(ada)
    assert shown(plan.requested_at, "UTC") in client.get(url).content.decode()  # nothing known: the console's
    client.cookies["cleanline_tz"] = "Pacific/Kiritimati"  # what console/time.js tells it
    page = client.get(url).content.decode()
    assert shown(plan.requested_at, "Pacific/Kiritimati") in page and "UTC+14" in page
    assert 'data-zone="Pacific/Kiritimati" data-zone-source="browser"' in page
    services.preference_time_zone(user=ada, time_zone=KOLKATA)  # a choice wins over the browser's
    assert shown(plan.requested_at, KOLKATA) in client.get(url).content.decode()
    services.preference_time_zone(user=ada, time_zone="")
    client.cookies["cleanline_tz"] = "Not/AZone"
    assert shown(plan.requested_at, "UTC") in client.get(url).content.decode()


def test_time_zone_the_timeline_search_takes_a_time_as_shown(table: Table) -> None:
    ada = person("ada", "viewer")
    services.preference_time_zone(user=ada, time_zone=KOLKATA)
    client = Client()
    client.force_login(ada)
    url = reverse("console:timeline", args=[table.pk])
    target = table.instants.order_by("requested_time")[2]
    moment = instant_moment(table, target.requested_time)
    text = shown(moment, KOLKATA)  # as the timeline shows it
    assert text in client.get(url).content.decode()

    def found(search: str) -> list[str]:
        page = client.get(url, {"search": search})
        assert 'id="filter-error"' not in page.content.decode(), search
        return [i.requested_time for i in page.context["page"]]

    assert target.requested_time in found(text)
    assert target.requested_time in found(text[:16])  # to the minute
    assert target.requested_time in found(shown(moment, "UTC"))  # another zone, named: read in it
    assert target.requested_time in found(shown(moment, "Pacific/Kiritimati"))  # "UTC+14"
    elsewhere = shown(moment + timedelta(days=400), KOLKATA)[:16]  # a minute with no instant of the table
    assert found(elsewhere) == []


@pytest.mark.django_db(transaction=True)
def test_time_zone_in_a_browser_the_browsers_zone_then_the_chosen_one_everywhere(
        browser: Browser, live_server, console_table) -> None:  # noqa: F811
    table: Table = console_table("sample_table/cow/v9_txns_simple_nometa")
    page = browser_sign_in(browser, live_server.url, "admin", timezone_id="Pacific/Kiritimati")
    page.goto(f"{live_server.url}/tables/{table.pk}/savepoints")
    page.wait_for_selector("body[data-zone='Pacific/Kiritimati']")
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("-requested_time")[0]
    option = page.locator(f"select[name=instant] option[value='{commit.requested_time}']").inner_text()
    assert option.startswith(shown(instant_moment(table, commit.requested_time), "Pacific/Kiritimati"))  # a form too
    assert page.inner_text("#zone-link") == "Pacific/Kiritimati"
    page.goto(f"{live_server.url}/preferences")
    page.select_option("#time-zone", KOLKATA)
    page.click("#zone-form button[type=submit]")
    page.wait_for_selector(f"#zone-now:has-text('{KOLKATA}')")
    page.goto(f"{live_server.url}/tables/{table.pk}/timeline")
    texts = page.locator("table.grid tbody time[data-local=datetime]").all_inner_texts()
    assert texts and all(t.endswith(" IST") for t in texts), texts  # the choice, not the browser's zone
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "time-zone-chosen.png"))
    assert timezone.get_current_timezone_name() in ("UTC", "Etc/UTC")  # the test's own zone is untouched
