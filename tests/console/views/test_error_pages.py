"""The console's own error pages (issue 30): a 404 and a refused CSRF check answer with the
console's header and words, not Django's bare pages; a session that ends while a form is open
leads through the login page, which says so, back to the form's page (a GET, never the
POST-only action's "HTTP ERROR 405"), which says what was lost."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from playwright.sync_api import Browser

from console.models import Table
from tests.console.helpers import SHOTS, browser_sign_in, person

pytestmark = pytest.mark.django_db


def test_error_pages_a_404_is_the_consoles_page_with_its_header() -> None:
    signed_in = Client()
    signed_in.force_login(person("viewer1", "viewer"))
    for client in (Client(), signed_in):
        answer = client.get("/tables/nothing-here")
        page = answer.content.decode()
        assert answer.status_code == 404 and 'class="brand"' in page and 'id="not-found"' in page
        assert "/tables/nothing-here" in page and "The requested resource was not found" not in page
    assert 'class="logout"' in signed_in.get("/no/such/page").content.decode()  # the whole header, signed in


def test_error_pages_a_refused_csrf_check_is_the_consoles_page() -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(person("viewer1", "viewer"))
    answer = client.post("/logout/", HTTP_REFERER="http://testserver/tables")
    page = answer.content.decode()
    assert answer.status_code == 403 and 'class="brand"' in page and 'id="csrf-failure"' in page
    assert "More information is available with DEBUG=True" not in page and "CSRF verification failed" not in page
    assert "Nothing was" in page and 'href="/tables"' in page  # back to the form's page
    anonymous = Client(enforce_csrf_checks=True).post("/login/", {"username": "x", "password": "y"})
    assert anonymous.status_code == 403 and "Sign in and go back to the page" in anonymous.content.decode()


def test_error_pages_a_form_sent_after_the_session_ended_returns_to_its_page(db) -> None:
    client = Client()
    user = person("operator1", "operator")
    client.force_login(user)
    Session.objects.all().delete()  # the session ends while the savepoints page is open
    answer = client.post("/tables/1/savepoints/create", {"comment": "mine"},
                         HTTP_REFERER="http://testserver/tables/1/savepoints")
    assert answer.status_code == 302
    assert answer["Location"] == "/login/?next=/tables/1/savepoints%3Fsession_expired%3D1"
    login = client.get(answer["Location"]).content.decode()
    assert 'id="session-notice"' in login and "session expired" in login and "was lost" in login


@pytest.mark.django_db(transaction=True)
def test_error_pages_session_expiry_in_a_browser_leads_back_to_the_form_not_a_405(
        browser: Browser, live_server, console_table) -> None:  # noqa: F811
    table: Table = console_table("sample_table/cow/v8_nonpartitioned")
    page = browser_sign_in(browser, live_server.url, "operator")
    page.goto(f"{live_server.url}/tables/{table.pk}/savepoints")
    page.fill("input[name=comment]", "before the backfill")
    Session.objects.all().delete()  # the session expires while the form is open
    page.click("button:has-text('Create savepoint')")
    page.wait_for_selector("#session-notice")
    assert "/login/" in page.url and "session expired" in page.inner_text("#session-notice")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "correct horse")
    with page.expect_navigation() as returned:
        page.click("button[type=submit]")
    response = returned.value
    assert response is not None and response.status == 200  # not "HTTP ERROR 405"
    assert page.url.startswith(f"{live_server.url}/tables/{table.pk}/savepoints")
    assert "signed in again" in page.inner_text("#session-notice")
    assert page.locator("input[name=comment]").count() == 1 and not table.instants.filter(action="savepoint").exists()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "session-expired-returned.png"))
