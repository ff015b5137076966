"""OIDC sign-in in headless Chromium against a real OIDC provider on 127.0.0.1 (the npm package
oidc-provider, tests/console/helpers.py): through the provider's own login page, the code flow
with PKCE, the role from the claim (and a changed claim changes it at the next sign-in), sign-out
at the provider, a tampered state or nonce refused, a user whose claim maps to no role refused,
an ID token also for an audience the console does not trust (or for another authorized party)
refused, a username with characters that show nothing refused; every refusal audited
(`signin.refused`). The provider's error text is shown only for a sign-in this browser started,
and refused callbacks are throttled per address."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse
from playwright.sync_api import Page

from console.models import AuditEvent, Profile
from console.roles import role_name
from tests.console.helpers import SHOTS, OidcProvider, provider_login
from tests.console.helpers import oidc_sign_in as sign_in


def sign_out(page: Page) -> None:
    """The console's Log out, then the provider's own sign-out page: back on the login page."""
    page.click("form.logout button[type=submit]")
    page.click("#provider-logout")
    page.wait_for_selector("#oidc-signin")


def refusals() -> list[dict[str, str]]:
    return [e.parameters for e in AuditEvent.objects.filter(action="signin.refused").order_by("pk")]


def test_oidc_signin_through_the_provider_gives_the_role_of_the_claim_and_a_changed_claim_changes_it(
        page: Page, live_server, oidc_on: OidcProvider) -> None:
    oidc_on.set_user("grace", "grace's provider password", email="grace@example.org", name="Grace Hopper",
                     groups=["cleanline-operators", "unrelated"])
    authorize: list[str] = []
    page.on("request", lambda r: authorize.append(r.url) if r.url.startswith(f"{oidc_on.issuer}/auth?") else None)
    page.goto(f"{live_server.url}/tables")
    assert "/login/" in page.url and page.locator("#oidc-signin").inner_text() == "Sign in with Test IdP"
    page.click("#oidc-signin")
    provider_login(page, "grace", "grace's provider password")
    page.wait_for_selector("h1:has-text('Tables')")  # back where she was going, signed in
    assert page.locator("header .role").inner_text() == "operator"
    query = parse_qs(urlparse(authorize[0]).query)
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) >= 43
    assert query["state"][0] and query["nonce"][0] and query["response_type"] == ["code"]
    grace = User.objects.get(username="grace")
    assert role_name(grace) == "operator" and not grace.has_usable_password() and grace.email == "grace@example.org"
    profile = Profile.objects.get(user=grace)
    assert (profile.source, profile.external_id) == ("oidc", f"{oidc_on.issuer} grace")
    assert profile.role_reason == "groups=cleanline-operators"

    # the claim changes at the provider: the next sign-in (after signing out there too) gives the new role
    oidc_on.set_user("grace", "grace's provider password", email="grace@example.org",
                     groups=["cleanline-admins"])
    sign_out(page)
    sign_in(page, live_server.url, "grace", "grace's provider password")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    assert page.locator("header .role").inner_text() == "admin"
    page.click("header >> text=People")
    row = page.locator("#people tr[data-username=grace]")
    assert row.locator("td.source").inner_text() == "OIDC" and "given by OIDC" in row.inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "people-sources.png"), full_page=True)
    changes = AuditEvent.objects.filter(action="signin.role_changed", username="grace").order_by("pk")
    assert [(e.parameters["from"], e.parameters["to"]) for e in changes] == [("", "operator"), ("operator", "admin")]
    assert User.objects.filter(username="grace").count() == 1 and not refusals()


def test_oidc_user_without_a_mapped_role_gets_no_access_and_losing_it_takes_the_role_away(
        page: Page, live_server, oidc_on: OidcProvider) -> None:
    oidc_on.set_user("mallory", "mallory's provider password", groups=["staff"])
    sign_in(page, live_server.url, "mallory", "mallory's provider password")
    page.wait_for_selector("#signin-refusal")
    assert "no Cleanline role" in page.locator("#signin-refusal").inner_text()
    assert not User.objects.filter(username="mallory").exists()
    page.goto(f"{live_server.url}/tables")
    assert "/login/" in page.url  # no session
    assert [(r["method"], r["username"]) for r in refusals()] == [("oidc", "mallory")]
    assert refusals()[0]["identity"] == f"{oidc_on.issuer} mallory" and "groups=['staff']" in refusals()[0]["reason"]

    # a viewer whose claim no longer maps to a role: refused at the next sign-in, role taken away
    page.context.clear_cookies()  # another browser: mallory's session at the provider is not ivan's
    oidc_on.set_user("ivan", "ivan's provider password", groups=["cleanline-viewers"])
    sign_in(page, live_server.url, "ivan", "ivan's provider password")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    oidc_on.set_user("ivan", "ivan's provider password", groups=[])
    sign_out(page)
    sign_in(page, live_server.url, "ivan", "ivan's provider password")
    page.wait_for_selector("#signin-refusal")
    assert role_name(User.objects.get(username="ivan")) == ""
    assert refusals()[-1]["username"] == "ivan" and "no Cleanline role any more" in refusals()[-1]["reason"]
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url


@pytest.mark.parametrize("tampered", ["state", "nonce"])
def test_oidc_tampered_state_or_nonce_is_refused_and_audited(page: Page, live_server, oidc_on: OidcProvider,
                                                             tampered: str) -> None:
    oidc_on.set_user("judy", "judy's provider password", groups=["cleanline-admins"])
    page.goto(f"{live_server.url}/login/")
    # the console's redirect to the provider, read without following it (same cookies as the page)
    start = page.request.get(f"{live_server.url}/oidc/authenticate/", max_redirects=0)
    assert start.status == 302
    location = urlparse(start.headers["location"])
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    query[tampered] = query[tampered][:-4] + "XXXX"
    page.goto(location._replace(query=urlencode(query)).geturl())
    provider_login(page, "judy", "judy's provider password")
    page.wait_for_selector("#signin-refusal")
    assert page.url.startswith(f"{live_server.url}/login/")
    expected = {"state": "state not found in session", "nonce": "Nonce verification failed"}[tampered]
    assert expected in page.locator("#signin-refusal").inner_text()
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url  # no session
    assert not User.objects.filter(username="judy").exists()
    assert len(refusals()) == 1 and refusals()[0]["method"] == "oidc" and expected in refusals()[0]["reason"]


@pytest.mark.django_db
def test_oidc_off_by_default_and_a_callback_without_a_started_signin_is_refused(settings, oidc_on) -> None:
    client = Client()
    assert b"oidc-signin" in client.get(reverse("login")).content
    refused = client.get("/oidc/callback/?code=forged&state=forged")
    assert refused.status_code == 302 and refused["Location"] == reverse("login")
    assert "No sign-in was started" in refusals()[0]["reason"]
    settings.CLEANLINE_OIDC_ISSUER = ""
    assert b"oidc-signin" not in client.get(reverse("login")).content
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=a&state=b").status_code == 404


CLIENT = OidcProvider.client_id


@pytest.mark.parametrize(("id_token", "trusted", "refusal"), [
    ({"aud": [CLIENT, "another-app"]}, [], "'another-app', an audience this client does not trust"),
    ({"aud": [CLIENT, "another-app"], "azp": CLIENT}, [], "'another-app', an audience this client does not trust"),
    ({"aud": [CLIENT, "reporting"]}, ["reporting"], "names no authorized party (azp)"),
    ({"aud": CLIENT, "azp": "another-app"}, [], "its authorized party (azp) is 'another-app'"),
    ({"aud": [CLIENT, "reporting"], "azp": CLIENT}, ["reporting"], ""),
], ids=["untrusted-no-azp", "untrusted-with-azp", "trusted-no-azp", "azp-another-party", "trusted-with-azp"])
def test_oidc_id_token_for_an_untrusted_audience_or_another_party_is_refused(
        page: Page, live_server, oidc_on: OidcProvider, settings, id_token: dict[str, Any], trusted: list[str],
        refusal: str) -> None:
    """OIDC Core 3.1.3.7 steps 3 to 5: every audience but the client trusted, an azp when there
    are several, and an azp naming the client."""
    settings.CLEANLINE_OIDC_TRUSTED_AUDIENCES = trusted
    oidc_on.set_user("wendy", "wendy's provider password", groups=["cleanline-admins"], id_token=id_token)
    sign_in(page, live_server.url, "wendy", "wendy's provider password")
    if not refusal:
        page.wait_for_selector("h1:has-text('Lake dashboard')")
        assert User.objects.filter(username="wendy").exists() and not refusals()
        return
    page.wait_for_selector("#signin-refusal")
    assert refusal in page.locator("#signin-refusal").inner_text()
    assert not User.objects.filter(username="wendy").exists()
    assert [r["method"] for r in refusals()] == ["oidc"] and refusal in refusals()[0]["reason"]


def test_oidc_username_with_characters_that_show_nothing_is_refused(page: Page, live_server,
                                                                    oidc_on: OidcProvider) -> None:
    """`admin2<ZWSP>`, `car<SOFT HYPHEN>ol` and `<RLO>admin2` would stand beside `admin2` and
    `carol` on the People page looking the same: refused, audited, no user made."""
    for name in ("admin2", "carol"):
        User.objects.create_user(name, password="a long enough password 1").groups.add(Group.objects.get(name="admin"))
    hidden = {"mallet1": "admin2\u200b", "mallet2": "car\u00adol", "mallet3": "\u202eadmin2",
              "mallet4": "ad\u3164min2"}
    escapes = ["admin2\\u200b", "car\\xadol", "\\u202eadmin2", "ad\\u1160min2"]  # in the audit log (after NFKC)
    for login, username in hidden.items():
        page.context.clear_cookies()  # a new browser for each: the provider's session is per user
        oidc_on.set_user(login, "the provider password", preferred_username=username, groups=["cleanline-admins"])
        sign_in(page, live_server.url, login, "the provider password")
        page.wait_for_selector("#signin-refusal")
        assert "show nothing or reorder the text" in page.locator("#signin-refusal").inner_text(), login
    assert sorted(User.objects.values_list("username", flat=True)) == ["admin2", "carol"]
    assert [(r["identity"], r["username"]) for r in refusals()] == [
        (f"{oidc_on.issuer} {login}", escaped) for login, escaped in zip(hidden, escapes, strict=True)]
    assert ["U+200B ZERO WIDTH SPACE" in refusals()[0]["reason"], "U+00AD SOFT HYPHEN" in refusals()[1]["reason"],
            "U+202E RIGHT-TO-LEFT OVERRIDE" in refusals()[2]["reason"]] == [True] * 3


@pytest.mark.django_db
def test_oidc_provider_error_text_is_shown_only_for_a_signin_this_browser_started(oidc_on) -> None:
    client = Client()
    lure = "Your account is locked: call +1 555 0100 or visit evil.example"
    forged = client.get("/oidc/callback/", {"error": "access_denied", "error_description": lure})
    assert forged.status_code == 302 and forged["Location"] == reverse("login")
    page = client.get(reverse("login")).content.decode()
    assert "No sign-in was started in this browser" in page and "evil.example" not in page
    assert refusals()[-1]["error"] == "access_denied" and "evil.example" not in str(refusals())

    start = client.get("/oidc/authenticate/")
    state = parse_qs(urlparse(start["Location"]).query)["state"][0]
    client.get("/oidc/callback/", {"error": "access_denied", "error_description": lure, "state": "not " + state})
    page = client.get(reverse("login")).content.decode()
    assert "No sign-in was started in this browser" in page and "evil.example" not in page  # another state

    client.get("/oidc/callback/", {"error": "access_denied", "error_description": "You cancelled.", "state": state})
    page = client.get(reverse("login")).content.decode()
    assert "The identity provider answered access_denied: You cancelled." in page  # its own sign-in
    assert len(refusals()) == 3


@pytest.mark.django_db
def test_oidc_refused_callbacks_are_throttled_per_address_and_not_audited_past_the_limit(settings, oidc_on) -> None:
    limit = settings.AXES_FAILURE_LIMIT
    attacker = Client(REMOTE_ADDR="203.0.113.50")
    answers = [attacker.get("/oidc/callback/", {"error": "x", "error_description": f"spam {n}"}).status_code
               for n in range(limit + 3)]
    assert answers == [302] * (limit - 1) + [429] * 4
    assert len(refusals()) == limit + 1  # each refusal up to the limit, then the throttling once
    assert refusals()[-1]["throttled"] is True and refusals()[-1]["ip_address"] == "203.0.113.50"
    assert f"{limit} refused OIDC sign-ins from 203.0.113.50" in refusals()[-1]["reason"]
    # a forged code is not exchanged either while the address is throttled
    assert attacker.get("/oidc/callback/", {"code": "forged", "state": "forged"}).status_code == 429
    assert len(refusals()) == limit + 1
    assert Client(REMOTE_ADDR="198.51.100.9").get("/oidc/callback/", {"error": "x"}).status_code == 302
