"""One person's identities count as one for the two-person rule (`console/lineage.py`; issue 38,
item 5), signed in through the real providers: a local break-glass admin and an OIDC identity
with the same e-mail address (the test OIDC provider in headless Chromium), and an LDAP admin (the
test slapd) and an OIDC identity with the directory's address, never approve each other's plans.
An address the OIDC provider does not say it verified (`email_verified`) links nothing."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from playwright.sync_api import Page

from console import permissions, services
from console.models import AuditEvent, CleanPlan, Profile, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import LDAP_PASSWORDS, SHORT_RETENTION, OidcProvider, Slapd, oidc_sign_in

TABLE = "sample_table/cow/v9_txns_simple_nometa"
ONE_OF_YOURS = "The requester's account is another account of yours"


@pytest.fixture(autouse=True)
def two_person(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True


def draft(table: Table, user: User) -> CleanPlan:
    plan = services.plan_build(plan=services.plan_request(table=table, user=user, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    return plan


def refused(plan: CleanPlan, approver: User, reason: str) -> None:
    """`approver`'s approval of `plan` is refused for `reason`, audited, and nothing changed."""
    with pytest.raises(ValidationError, match=reason):
        services.plan_approval_request(plan=plan, user=approver)
    event = AuditEvent.objects.filter(action="clean.plan.approval.refused").order_by("-pk").first()
    assert event is not None and event.username == approver.username and re.search(reason, event.result)
    assert CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.DRAFT


def oidc_identity(page: Page, live_url: str, provider: OidcProvider, username: str, **claims: object) -> User:
    """`username` signed in through the provider (admin by the groups claim), as Cleanline's user."""
    provider.set_user(username, f"{username}'s provider password", groups=["cleanline-admins"], **claims)
    page.context.clear_cookies()  # no session at the provider or here: a new sign-in
    oidc_sign_in(page, live_url, username, f"{username}'s provider password")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    user = User.objects.get(username=username)
    assert Profile.objects.get(user=user).source == "oidc" and user.has_perm(permissions.APPROVE)
    return user


def test_lineage_identities_a_break_glass_admin_and_his_oidc_identity_never_approve_each_others_plans(
        page: Page, live_server, oidc_on: OidcProvider, console_table, settings) -> None:
    table = console_table(TABLE)
    settings.CLEANLINE_BREAK_GLASS_USERS = ["root"]
    root = User.objects.create_superuser("root", email="Grace@example.org", password="a long enough password 1")
    grace = oidc_identity(page, live_server.url, oidc_on, "grace", email="grace@example.org", email_verified=True)
    assert Profile.objects.get(user=grace).email_verified

    by_root, by_grace = draft(table, root), draft(table, grace)
    refused(by_root, grace, f"{ONE_OF_YOURS} \\(grace and root share a verified e-mail address\\)")
    page.goto(f"{live_server.url}{reverse('console:plan', args=[table.pk, by_root.pk])}")
    note = page.locator("#approval-note").inner_text()
    assert "grace and root share a verified e-mail address" in note
    assert page.locator("text=Approve and run").count() == 0
    refused(by_grace, root, "Break-glass accounts may request but never approve")
    settings.CLEANLINE_BREAK_GLASS_USERS = []  # not break-glass any more: still grace's other account
    refused(by_grace, root, f"{ONE_OF_YOURS} \\(root and grace share a verified e-mail address")

    # the provider no longer says it verified the address: nothing links the two accounts
    grace = oidc_identity(page, live_server.url, oidc_on, "grace", email="grace@example.org", email_verified=False)
    assert not Profile.objects.get(user=grace).email_verified
    assert permissions.approval_refusal(grace, root.pk) == ""


def test_lineage_identities_an_ldap_admin_and_his_oidc_identity_never_approve_each_others_plans(
        page: Page, live_server, oidc_on: OidcProvider, ldap_on: Slapd, console_table) -> None:
    table = console_table(TABLE)
    session = Client(REMOTE_ADDR="192.0.2.10")
    session.post(reverse("login"), {"username": "alice", "password": LDAP_PASSWORDS["alice"]})
    assert "_auth_user_id" in session.session
    alice = User.objects.get(username="alice")
    assert Profile.objects.get(user=alice).source == "ldap" and alice.email == "alice@example.org"
    sso = oidc_identity(page, live_server.url, oidc_on, "alice-sso", email="alice@example.org", email_verified=True)

    by_alice, by_sso = draft(table, alice), draft(table, sso)
    refused(by_alice, sso, f"{ONE_OF_YOURS} \\(alice-sso and alice share a verified e-mail address")
    refused(by_sso, alice, f"{ONE_OF_YOURS} \\(alice and alice-sso share a verified e-mail address")
    answer = session.post(reverse("console:plan_approve", args=[table.pk, by_sso.pk]), follow=True)
    assert "share a verified e-mail address" in answer.content.decode()
    assert CleanPlan.objects.get(pk=by_sso.pk).status == ApprovalStatus.DRAFT

    other = User.objects.create_user("zoe")  # an admin of another person approves
    other.groups.add(Group.objects.get(name="admin"))
    assert services.plan_approval_request(plan=by_sso, user=other).status == ApprovalStatus.APPROVING
