"""The two-person rule covers who becomes an approver (hardening, round two, finding 2): while
two-person approval is on, the admin role is given only with a second admin's confirmation, and
an account the requester of a change created or promoted never approves it. Also the People
page's low findings: look-alike usernames refused, NFKC normalised, a concurrent change answered
as a conflict."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connections
from django.test import Client
from django.urls import reverse

from console import services
from console.models import AuditEvent, CleanPlan, GrantStatus, RoleGrant, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION

TABLE = "sample_table/cow/v9_txns_simple_nometa"
STRONG = "a long enough password 1"


def admin(name: str) -> User:
    user = User.objects.create_user(name, password=STRONG)
    user.groups.add(Group.objects.get(name="admin"))
    return user


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def is_admin(user: User) -> bool:
    return user.groups.filter(name="admin").exists()


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("pk"))


@pytest.fixture
def plan_by(console_table) -> Callable[[User], CleanPlan]:  # type: ignore[no-untyped-def]
    table: Table = console_table(TABLE)

    def make(requester: User) -> CleanPlan:
        plan = services.plan_build(plan=services.plan_request(table=table, user=requester, overrides=SHORT_RETENTION))
        assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
        return plan

    return make


@pytest.mark.django_db
def test_people_grants_second_account_of_the_requester_never_approves(plan_by, settings) -> None:  # type: ignore[no-untyped-def]
    """The reproduction: an admin plans, creates a second admin account with a password of his
    choosing, signs in as it and approves. The account waits for a second admin; even once
    another admin confirmed it, it may not approve its creator's plan (refused and audited)."""
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    mallory, bob = admin("mallory"), admin("bob")
    plan = plan_by(mallory)
    sock, _, _ = services.person_create(actor=mallory, username="mallory2", role="admin", password=STRONG)
    assert not is_admin(sock)  # not an admin yet: it waits for a second admin
    [grant] = RoleGrant.objects.filter(user=sock)
    assert grant.status == GrantStatus.PENDING and grant.requested_by == mallory and grant.account_created
    assert events("people.admin.requested")[0].parameters["username"] == "mallory2"
    url = reverse("console:plan_approve", args=[plan.table_id, plan.pk])
    assert signed_in(sock).post(url).status_code == 404  # no role yet: it sees no table

    with pytest.raises(ValidationError, match="another admin must confirm"):
        services.person_admin_confirm(actor=mallory, grant=grant)
    with pytest.raises(PermissionDenied):  # not an admin yet
        services.person_admin_confirm(actor=sock, grant=grant)
    services.person_admin_confirm(actor=bob, grant=grant)
    sock.refresh_from_db()
    assert is_admin(User.objects.get(pk=sock.pk))
    assert events("people.admin.confirmed")[0].user == bob

    signed_in(User.objects.get(pk=sock.pk)).post(url)
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT
    with pytest.raises(ValidationError, match="created or given its role by the requester"):
        services.plan_approval_request(plan=plan, user=User.objects.get(pk=sock.pk))
    refused = events("clean.plan.approval.refused")
    assert refused and refused[-1].username == "mallory2" and "requester" in refused[-1].result
    page = signed_in(User.objects.get(pk=sock.pk)).get(reverse("console:plan", args=[plan.table_id, plan.pk]))
    assert b"Approve and run" not in page.content and b"another admin must approve" in page.content

    approved = services.plan_approval_request(plan=plan, user=bob)  # a real second admin may
    assert approved.status == ApprovalStatus.APPROVING


@pytest.mark.django_db
def test_people_grants_promotion_needs_a_second_admin_and_the_promoted_never_approves_the_promoter(
        plan_by, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    ann, bob = admin("ann"), admin("bob")
    olga = User.objects.create_user("olga", password=STRONG)
    olga.groups.add(Group.objects.get(name="operator"))
    response = signed_in(ann).post(reverse("console:people_role", args=[olga.pk]), {"role": "admin"})
    assert response.status_code == 302
    assert not is_admin(olga) and olga.groups.filter(name="operator").exists()
    grant = RoleGrant.objects.get(user=olga, status=GrantStatus.PENDING)
    with pytest.raises(ValidationError, match="already waits"):
        services.person_role_change(actor=bob, user=olga, role="admin")
    people = signed_in(bob).get(reverse("console:people")).content.decode()
    assert 'id="pending-grants"' in people and "olga" in people
    assert signed_in(bob).post(reverse("console:people_grant_confirm", args=[grant.pk])).status_code == 302
    assert is_admin(olga)
    with pytest.raises(ValidationError, match="created or given its role by the requester"):
        services.plan_approval_request(plan=plan_by(ann), user=olga)
    assert services.plan_approval_request(plan=plan_by(bob), user=olga).status == ApprovalStatus.APPROVING


@pytest.mark.django_db
def test_people_grants_views_get_405_viewers_403_no_role_404_csrf_enforced(settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    ann, bob = admin("ann"), admin("bob")
    services.person_create(actor=ann, username="nina", role="admin", password=STRONG)
    grant = RoleGrant.objects.get(status=GrantStatus.PENDING)
    for name in ("people_grant_confirm", "people_grant_decline"):
        url = reverse(f"console:{name}", args=[grant.pk])
        assert signed_in(bob).get(url).status_code == 405
        for role in ("viewer", "operator"):
            user = User.objects.create_user(f"{name}-{role}")
            user.groups.add(Group.objects.get(name=role))
            assert signed_in(user).post(url).status_code == 403
        assert signed_in(User.objects.create_user(f"{name}-none")).post(url).status_code == 404
        strict = Client(enforce_csrf_checks=True)
        strict.force_login(bob)
        assert strict.post(url).status_code == 403
    assert RoleGrant.objects.get(pk=grant.pk).status == GrantStatus.PENDING
    assert signed_in(bob).post(reverse("console:people_grant_confirm", args=[grant.pk + 99])).status_code == 404


@pytest.mark.django_db
def test_people_grants_decline_and_rule_off(settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    ann, bob = admin("ann"), admin("bob")
    nina, _, _ = services.person_create(actor=ann, username="nina", role="admin", password=STRONG)
    grant = RoleGrant.objects.get(user=nina, status=GrantStatus.PENDING)
    services.person_admin_decline(actor=bob, grant=grant)
    assert not is_admin(nina) and RoleGrant.objects.get(pk=grant.pk).status == GrantStatus.DECLINED
    with pytest.raises(ValidationError, match="already decided"):
        services.person_admin_confirm(actor=bob, grant=RoleGrant.objects.get(pk=grant.pk))
    settings.CLEANLINE_APPROVER_MUST_DIFFER = False
    direct, _, _ = services.person_create(actor=ann, username="direct", role="admin", password=STRONG)
    assert is_admin(direct) and RoleGrant.objects.get(user=direct).status == GrantStatus.GRANTED


@pytest.mark.django_db
def test_people_grants_a_later_role_change_settles_a_waiting_admin_role(settings) -> None:
    """An admin role still waiting is declined when another role is given meanwhile: confirming
    it later would undo that change."""
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    ann, bob = admin("ann"), admin("bob")
    olga = User.objects.create_user("olga", password=STRONG)
    services.person_role_change(actor=ann, user=olga, role="admin")
    grant = RoleGrant.objects.get(user=olga, status=GrantStatus.PENDING)
    services.person_role_change(actor=bob, user=olga, role="viewer")
    assert RoleGrant.objects.get(pk=grant.pk).status == GrantStatus.DECLINED
    with pytest.raises(ValidationError, match="already decided"):
        services.person_admin_confirm(actor=bob, grant=RoleGrant.objects.get(pk=grant.pk))
    assert not is_admin(olga) and olga.groups.filter(name="viewer").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("username", "reason"), [
    ("\u0430dmin", "looks like the existing user 'admin'"),  # Cyrillic а
    ("\u0430dm\u0456n", "looks like the existing user 'admin'"),  # Cyrillic а and і
    ("ADM\u0406N", "looks like the existing user 'admin'"),  # Cyrillic І
    ("ADMIN", "already a user named 'admin'"),
])
def test_people_grants_look_alike_usernames_are_refused(username: str, reason: str) -> None:
    boss = admin("admin")
    with pytest.raises(ValidationError, match=reason):
        services.person_create(actor=boss, username=username, role="viewer", password=STRONG)
    assert User.objects.count() == 1
    assert events("people.refused")[0].parameters["username"] == username


@pytest.mark.django_db
def test_people_grants_usernames_are_stored_nfkc() -> None:
    boss = admin("boss")
    user, _, _ = services.person_create(actor=boss, username="\uff4f\uff4c\uff47\uff41", role="", password=STRONG)
    assert user.username == "olga"  # full-width letters, as NFKC reads them


@pytest.mark.django_db(transaction=True)
def test_people_grants_two_admins_demoting_each_other_at_once_get_an_answer_not_a_500() -> None:
    """Both at the same moment, many times: each change either happens or is refused with a
    reason (the last admin, or a conflict to try again); one active admin always remains."""
    from console.roles import ensure_roles

    ensure_roles()
    for round_ in range(20):
        ann, bob = admin(f"ann{round_}"), admin(f"bob{round_}")
        User.objects.exclude(pk__in=[ann.pk, bob.pk]).update(is_active=False)
        start = threading.Barrier(2)
        outcomes: list[str] = []

        def demote(actor: User, target: User, start: threading.Barrier = start, outcomes: list[str] = outcomes) -> None:
            try:
                start.wait()
                services.person_role_change(actor=actor, user=target, role="operator")
                outcomes.append("done")
            except ValidationError as exc:
                outcomes.append(" ".join(exc.messages))
            except PermissionDenied as exc:  # the other demoted this one first: a 403
                outcomes.append(str(exc))
            except Exception as exc:  # what a 500 would be
                outcomes.append(f"ERROR {type(exc).__name__}: {exc}")
            finally:
                connections.close_all()

        threads = [threading.Thread(target=demote, args=(ann, bob)), threading.Thread(target=demote, args=(bob, ann))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not [o for o in outcomes if o.startswith("ERROR")], outcomes
        assert User.objects.filter(is_active=True, groups__name="admin").exists()
