"""Local accounts beside the identity providers: with CLEANLINE_LOCAL_SIGNIN off only the
break-glass accounts sign in with a password (the others are refused and audited, and their
sessions and API tokens end), a user from a provider never signs in with a local password, the login page offers
what is configured, and the People page neither changes the role a provider gives nor hides where
a user comes from."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from console import services
from console.models import AuditEvent, Profile, UserSource
from console.roles import role_name
from console.services import token_create

pytestmark = pytest.mark.django_db
PASSWORD = "a long enough password 1"


def local(name: str, role: str = "admin") -> User:
    user = User.objects.create_user(name, password=PASSWORD)
    user.groups.add(Group.objects.get(name=role))
    return user


def signs_in(name: str, password: str = PASSWORD) -> tuple[bool, str]:
    client = Client()
    page = client.post(reverse("login"), {"username": name, "password": password})
    return "_auth_user_id" in client.session, page.content.decode() if page.status_code == 200 else ""


def test_local_signin_off_leaves_only_the_break_glass_accounts(settings) -> None:
    local("breakglass")
    ops = local("ops", "operator")
    session = Client()
    session.force_login(ops)
    assert session.get(reverse("console:catalog")).status_code == 200
    settings.CLEANLINE_LOCAL_SIGNIN, settings.CLEANLINE_BREAK_GLASS_USERS = False, ["breakglass"]
    assert signs_in("breakglass")[0]
    refused, page = signs_in("ops")
    assert not refused and "Local sign-in is off" in page
    event = AuditEvent.objects.get(action="signin.refused")
    assert (event.username, event.parameters["method"]) == ("ops", "local")
    assert not signs_in("ops", "a wrong password")[0]
    assert AuditEvent.objects.filter(action="signin.refused").count() == 1  # a wrong password: axes counts it
    assert session.get(reverse("console:catalog")).status_code == 302  # the old session ended too
    settings.CLEANLINE_LOCAL_SIGNIN = True
    assert signs_in("ops")[0]


def test_local_password_of_a_user_from_a_provider_is_refused() -> None:
    user = local("olivia")
    Profile.objects.create(user=user, source=UserSource.OIDC, external_id="http://idp olivia")
    refused, page = signs_in("olivia")
    assert not refused and "signs in through OIDC" in page


def test_login_page_offers_what_is_configured(settings) -> None:
    client = Client()
    page = client.get(reverse("login")).content.decode()
    assert 'id="password-signin"' in page and "oidc-signin" not in page  # the defaults: local accounts only
    settings.CLEANLINE_OIDC_ISSUER, settings.CLEANLINE_OIDC_CLIENT_ID = "http://127.0.0.1:9/unused", "console"
    settings.CLEANLINE_OIDC_PROVIDER_NAME = "Corp SSO"
    page = client.get(reverse("login") + "?next=/tables").content.decode()
    assert "Sign in with Corp SSO" in page and 'id="password-signin"' in page
    assert 'href="/oidc/authenticate/?next=%2Ftables"' in page
    settings.CLEANLINE_LOCAL_SIGNIN = False  # instead of the form: the button and a break-glass link
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with Corp SSO" in page and 'id="password-signin"' not in page and 'id="break-glass"' in page
    assert 'id="password-signin"' in client.get(reverse("login") + "?local=1").content.decode()
    settings.CLEANLINE_LDAP_ENABLED = True  # LDAP users type their directory password in the form
    assert 'id="password-signin"' in client.get(reverse("login")).content.decode()


def test_people_page_shows_where_users_come_from_and_leaves_a_providers_role_to_it() -> None:
    admin = local("boss")
    ldap_user = User.objects.create_user("lena")
    ldap_user.groups.add(Group.objects.get(name="viewer"))
    Profile.objects.create(user=ldap_user, source=UserSource.LDAP, external_id="uid=lena,ou=people,dc=example,dc=org")
    client = Client()
    client.force_login(admin)
    page = client.get(reverse("console:people")).content.decode()
    assert '<td class="source">LDAP</td>' in page and '<td class="source">local</td>' in page
    assert 'aria-label="role of lena"' not in page and "given by LDAP at each sign-in" in page
    with pytest.raises(ValidationError, match="signs in through LDAP"):
        services.person_role_change(actor=admin, user=ldap_user, role="admin")
    assert role_name(ldap_user) == "viewer"
    assert AuditEvent.objects.filter(action="people.refused", parameters__username="lena").exists()
    services.person_deactivate(actor=admin, user=ldap_user)  # deactivation works the same for everyone
    assert not User.objects.get(pk=ldap_user.pk).is_active


def test_local_signin_off_refuses_the_api_tokens_of_local_users_but_the_break_glass_ones(settings) -> None:
    ops, breakglass, lena = local("ops", "operator"), local("breakglass"), local("lena", "viewer")
    Profile.objects.create(user=lena, source=UserSource.LDAP, external_id="uid=lena,ou=people,dc=example,dc=org")
    held = {user.get_username(): token_create(actor=user, owner=user, name="ci")[1]
            for user in (ops, breakglass, lena)}

    def call(name: str) -> tuple[int, str]:
        answer = Client().get("/api/v1/tables", HTTP_AUTHORIZATION=f"Bearer {held[name]}")
        return answer.status_code, answer.json()["detail"] if answer.status_code != 200 else ""

    assert [call(name)[0] for name in held] == [200, 200, 200]
    settings.CLEANLINE_LOCAL_SIGNIN, settings.CLEANLINE_BREAK_GLASS_USERS = False, ["breakglass"]
    status, detail = call("ops")
    assert status == 401 and "Local sign-in is off" in detail
    event = AuditEvent.objects.get(action="signin.refused")
    assert (event.username, event.parameters["method"], event.parameters["token"]) == ("ops", "api_token", "ci")
    assert call("breakglass")[0] == 200 and call("lena")[0] == 200  # a provider's user keeps their tokens
    settings.CLEANLINE_LOCAL_SIGNIN = True
    assert call("ops")[0] == 200


def test_local_lockout_counts_a_username_whatever_its_case_and_the_password_check_keeps_case(settings) -> None:
    local("alice")
    limit = settings.AXES_FAILURE_LIMIT
    attacker = Client(REMOTE_ADDR="203.0.113.79")
    answers = [attacker.post(reverse("login"), {"username": name, "password": "a wrong guess"}).status_code
               for name in ["alice", "Alice", "ALICE", "aLiCe", "alicE", "ALICe"][:limit]]
    assert answers == [200] * (limit - 1) + [429]
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"alice"}
    right = attacker.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert right.status_code == 429 and "_auth_user_id" not in attacker.session
    # elsewhere: a local username is still matched exactly (Django's), only the count ignores case
    elsewhere = Client(REMOTE_ADDR="198.51.100.30")
    elsewhere.post(reverse("login"), {"username": "Alice", "password": PASSWORD})
    assert "_auth_user_id" not in elsewhere.session
    elsewhere.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert "_auth_user_id" in elsewhere.session



def test_break_glass_over_plain_http_says_the_cookie_was_refused_for_want_of_https(settings) -> None:
    """Issue 43: without a TLS proxy, break-glass sign-in ended on "your session ended". With
    HTTPS-only cookies (CLEANLINE_HTTPS) a browser keeps none from a plain-HTTP page: the login
    page warns, and the refused form names that cause, not an ended session."""
    local("breakglass")
    settings.CLEANLINE_LOCAL_SIGNIN, settings.CLEANLINE_BREAK_GLASS_USERS = False, ["breakglass"]
    settings.SECURE_SSL_REDIRECT = False  # the plain-HTTP page reached (no redirect to a missing TLS port)
    settings.CSRF_COOKIE_SECURE = settings.SESSION_COOKIE_SECURE = True
    browser = Client(enforce_csrf_checks=True)  # a browser refusing the Secure cookie over HTTP sends none back
    login = browser.get(reverse("login") + "?local=1").content.decode()
    assert 'id="signin-not-https"' in login and "CLEANLINE_HTTPS=true" in login
    browser.cookies.clear()  # the Secure cookie the page set: a browser did not keep it over HTTP
    refused = browser.post(reverse("login"), {"username": "breakglass", "password": PASSWORD})
    page = refused.content.decode()
    assert refused.status_code == 403 and 'id="csrf-not-https"' in page
    assert "this connection is not HTTPS" in page and "session" not in page.split('id="csrf-not-https"')[1][:400]
    secure = Client(enforce_csrf_checks=True)  # over HTTPS: the page as before, the form's expiry
    assert 'id="signin-not-https"' not in secure.get(reverse("login"), secure=True).content.decode()
    expired = secure.post(reverse("login"), {"username": "breakglass", "password": PASSWORD}, secure=True)
    assert expired.status_code == 403 and 'id="csrf-failure"' in expired.content.decode()
