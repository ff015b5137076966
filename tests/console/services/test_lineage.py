"""The two-person rule by lineage and identity (`console/lineage.py`, asked through
`console.permissions.approval_refusal` by every change that waits for approval; issue 38, items
2 and 5): an admin's operator never has its change approved by him, accounts made by one person
never approve each other's changes, one person's accounts (a verified e-mail address in common,
an identity link an independent admin set on the People page) count as one, and a break-glass
account may request but never approve. Refusals say why and are audited. The OIDC and LDAP
identities of one person, signed in through the real providers: test_lineage_identities.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from console import permissions, services
from console.models import (
    Archival,
    AuditEvent,
    CleanPlan,
    GrantStatus,
    IdentityLink,
    Profile,
    RoleGrant,
    Table,
    UserSource,
)
from console.models_approvals import ApprovalStatus
from console.models_health import Repair
from console.roles import role_name
from console.selectors.approvals import awaiting_decision
from console.services import health
from console.tasks import sync_table
from tests.console.helpers import SHORT_RETENTION, leave_markers, person

pytestmark = pytest.mark.django_db
STRONG = "a long enough password 1"
TABLE = "sample_table/cow/v9_txns_simple_nometa"


@pytest.fixture(autouse=True)
def two_person(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True


def draft(table: Table, user: User | None, *, automatic: bool = False) -> CleanPlan:
    plan = services.plan_build(plan=services.plan_request(table=table, user=user, overrides=SHORT_RETENTION,
                                                          automatic=automatic, enqueue=False))
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    return plan


def created(actor: User, username: str, role: str, email: str = "") -> User:
    """An account `actor` creates on the People page, with a password of their choosing."""
    user, _, _ = services.person_create(actor=actor, username=username, role=role, password=STRONG, email=email)
    return user


def confirmed(by: User, user: User) -> User:
    """`user`'s waiting admin role, confirmed by `by`."""
    services.person_admin_confirm(actor=by, grant=RoleGrant.objects.get(user=user, status=GrantStatus.PENDING))
    return User.objects.get(pk=user.pk)


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def refusals(action: str) -> list[str]:
    return [e.result for e in AuditEvent.objects.filter(action=action).order_by("pk")]


def test_lineage_an_operator_an_admin_created_never_has_a_plan_an_archival_or_a_repair_approved_by_him(
        archivable_table: Table, settings) -> None:
    """The reproduction (issue 38, item 2): an admin creates an operator with a password he
    chose (no confirmation: an operator), asks as it for a clean, an archival and a repair, and
    approves them himself. Each approval is refused, says why, is audited; the pages say why in
    place of the Approve button; an admin outside his lineage approves all three."""
    settings.CLEANLINE_HEALTH_INTERVAL_SECONDS = 0
    table = archivable_table
    mallory, bob = person("mallory", "admin"), person("bob", "admin")
    op = created(mallory, "op", "operator")
    assert role_name(op) == "operator"  # given at once: creating an operator is unchanged
    plan = draft(table, op)
    archival = services.archival_request(table=table, user=op)
    leave_markers(Path(table.path.removeprefix("file:")))
    sync_table.apply(args=[table.pk])
    repair = health.repair_request(table=table, user=op, kind="leftover-markers")
    why = "You created the requester's account or gave it a role (mallory created op or gave it a role)"

    approvals = [(lambda: services.plan_approval_request(plan=plan, user=mallory), "clean.plan.approval.refused"),
                 (lambda: services.archival_approve(archival=archival, user=mallory), "archival.approval.refused"),
                 (lambda: health.repair_approve(repair=repair, user=mallory), "repair.approval.refused")]
    for approve, action in approvals:
        with pytest.raises(ValidationError, match=re.escape(why)):
            approve()
        assert [r.startswith(why) for r in refusals(action)] == [True], action
    assert CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.DRAFT
    assert Archival.objects.get(pk=archival.pk).status == ApprovalStatus.DRAFT
    assert Repair.objects.get(pk=repair.pk).status == ApprovalStatus.DRAFT
    assert awaiting_decision(mallory) == []  # none of the three is his to approve
    pages = [reverse("console:plan", args=[table.pk, plan.pk]),
             reverse("console:archival_detail", args=[table.pk, archival.pk]),
             reverse("console:repair", args=[table.pk, repair.pk])]
    for url in pages:
        page = signed_in(mallory).get(url).content.decode()
        assert 'id="approval-note"' in page and "mallory created op or gave it a role" in page, url

    assert {a.kind for a in awaiting_decision(bob)} == {"clean plan", "archival", "repair"}
    assert services.plan_approval_request(plan=plan, user=bob).status == ApprovalStatus.APPROVING
    assert services.archival_approve(archival=archival, user=bob).decided_by == bob
    assert health.repair_approve(repair=repair, user=bob).decided_by == bob


def test_lineage_accounts_one_admin_made_never_approve_each_other_even_through_accounts_made_in_between(
        console_table) -> None:
    """Mallory makes an admin (a second admin confirms it), that admin makes an operator: the
    operator's plan is refused to Mallory, and to every account Mallory made (siblings come from
    one person). The admin who only confirmed, and accounts from elsewhere, approve."""
    table = console_table(TABLE)
    mallory, bob = person("mallory", "admin"), person("bob", "admin")
    m2 = confirmed(bob, created(mallory, "m2", "admin"))
    sibling = confirmed(bob, created(mallory, "sibling", "admin"))
    o3 = created(m2, "o3", "operator")
    carol = confirmed(mallory, created(bob, "carol", "admin"))  # confirmed by mallory: no lineage of hers
    plan = draft(table, o3)
    reasons = {user.username: permissions.approval_refusal(user, o3.pk) for user in (mallory, m2, sibling, bob, carol)}
    assert reasons["mallory"].startswith("You created the requester's account or gave it a role (mallory created m2 "
                                         "or gave it a role; m2 created o3 or gave it a role)")
    assert reasons["m2"].startswith("You created the requester's account or gave it a role (m2 created o3")
    assert reasons["sibling"].startswith("Your account and the requester's come from the same person (mallory) "
                                         "(mallory created sibling or gave it a role; mallory created m2")
    assert reasons["bob"] == reasons["carol"] == ""
    # the other way round: the account a requester made never approves the requester's change
    assert permissions.approval_refusal(o3, mallory.pk).startswith(
        "This account was created or given its role by the requester (m2 created o3")
    with pytest.raises(ValidationError, match="come from the same person"):
        services.plan_approval_request(plan=plan, user=sibling)
    assert services.plan_approval_request(plan=plan, user=carol).status == ApprovalStatus.APPROVING
    # a cycle (bob gives mallory a role back) ends the walk; bob now comes from mallory's lineage too
    services.person_role_change(actor=bob, user=mallory, role="admin")
    assert permissions.approval_refusal(bob, o3.pk).startswith("You created the requester's account")
    assert permissions.approval_refusal(carol, o3.pk).startswith("Your account and the requester's come from")
    # taking every role away gives nothing: no lineage
    eve, dora = person("eve", "admin"), person("dora", "operator")
    services.person_role_change(actor=eve, user=dora, role="")
    assert permissions.approval_refusal(eve, dora.pk) == ""


def test_lineage_an_admin_role_waits_for_an_admin_outside_the_lineage_of_its_asker_and_its_user() -> None:
    """Confirming an admin role is an approval too: the account the asker made (or one of the
    same person) does not confirm the role the asker asked for."""
    mallory, bob = person("mallory", "admin"), person("bob", "admin")
    sock = created(mallory, "sock", "operator")
    sock.groups.set(bob.groups.all())  # an admin by other means: still mallory's
    pending = created(mallory, "pending", "admin")
    grant = RoleGrant.objects.get(user=pending, status=GrantStatus.PENDING)
    with pytest.raises(ValidationError, match="This account was created or given its role by the requester"):
        services.person_admin_confirm(actor=sock, grant=grant)
    refused = AuditEvent.objects.get(action="people.refused")
    assert refused.parameters["change"] == "confirm admin" and "mallory created sock" in refused.parameters["reason"]
    assert grant not in [a.grant for a in awaiting_decision(sock)]
    assert grant in [a.grant for a in awaiting_decision(bob)]
    confirm = ">Confirm</button>"
    assert confirm not in signed_in(sock).get(reverse("console:people")).content.decode()
    assert confirm in signed_in(bob).get(reverse("console:people")).content.decode()
    assert confirmed(bob, pending).groups.filter(name="admin").exists()


def test_lineage_accounts_sharing_a_verified_email_are_one_person(console_table) -> None:
    """A verified e-mail address in common (ignoring case) makes two accounts one person: a
    local one (set by an admin), an LDAP one (the directory's), an OIDC one only with
    email_verified true at its last sign-in."""
    table = console_table(TABLE)
    ann, bob = person("ann", "admin"), person("bob", "admin")
    User.objects.filter(pk=ann.pk).update(email="Ann@Example.org")
    ann2 = person("ann2", "admin")
    User.objects.filter(pk=ann2.pk).update(email="ann@example.ORG")
    plan = draft(table, ann)
    why = "The requester's account is another account of yours (ann2 and ann share a verified e-mail address)"
    with pytest.raises(ValidationError, match=re.escape(why)):
        services.plan_approval_request(plan=plan, user=ann2)
    assert refusals("clean.plan.approval.refused")[0].startswith(why)

    sso = person("ann-sso", "admin")
    User.objects.filter(pk=sso.pk).update(email="ann@example.org")
    profile = Profile.objects.create(user=sso, source=UserSource.OIDC, external_id="issuer ann", email_verified=False)
    assert permissions.approval_refusal(sso, ann.pk) == ""  # an address the provider did not verify links nothing
    Profile.objects.filter(pk=profile.pk).update(email_verified=True)
    assert permissions.approval_refusal(sso, ann.pk).startswith("The requester's account is another account of yours")
    Profile.objects.filter(pk=profile.pk).update(source=UserSource.LDAP, email_verified=False)
    assert permissions.approval_refusal(sso, ann.pk).startswith("The requester's account is another account of yours")
    page = signed_in(bob).get(reverse("console:people")).content.decode()
    assert 'id="shared-emails"' in page and "ann, ann-sso, ann2" in page
    assert services.plan_approval_request(plan=plan, user=bob).status == ApprovalStatus.APPROVING


def test_lineage_an_identity_link_makes_one_person_and_only_an_admin_outside_it_links_or_unlinks(
        console_table) -> None:
    table = console_table(TABLE)
    ann, bob, carol = person("ann", "admin"), person("bob", "admin"), person("carol", "admin")
    zed = person("zed", "admin")  # ann's other account, with another e-mail address
    plan = draft(table, ann)
    assert permissions.approval_refusal(zed, ann.pk) == ""
    with pytest.raises(ValidationError, match="Nobody links or unlinks their own account"):
        services.person_link(actor=ann, username="zed", other_username="ann")
    sock = created(ann, "sock", "admin")
    confirmed(bob, sock)
    with pytest.raises(ValidationError, match="This account was created or given its role by ann"):
        services.person_link(actor=User.objects.get(pk=sock.pk), username="ann", other_username="zed")
    with pytest.raises(ValidationError, match="There is no user named 'nobody'"):
        services.person_link(actor=bob, username="ann", other_username="nobody")
    link = services.person_link(actor=bob, username="zed", other_username="ann")
    assert (link.user, link.other, link.linked_by) == (ann, zed, bob)  # the lower id first
    with pytest.raises(ValidationError, match="already linked"):
        services.person_link(actor=carol, username="ann", other_username="zed")
    why = "The requester's account is another account of yours (zed and ann are linked as one person (by bob))"
    with pytest.raises(ValidationError, match=re.escape(why)):
        services.plan_approval_request(plan=plan, user=zed)
    # what the linked accounts made is one person's too: zed never approves the change of ann's sock
    assert permissions.approval_refusal(zed, sock.pk).startswith("You created the requester's account")

    with pytest.raises(ValidationError, match="Nobody links or unlinks their own account"):
        services.person_unlink(actor=zed, link=link)
    services.person_unlink(actor=carol, link=link)
    assert not IdentityLink.objects.exists() and permissions.approval_refusal(zed, ann.pk) == ""
    actions = list(AuditEvent.objects.filter(action__startswith="people.").values_list("action", flat=True)
                   .order_by("pk"))
    assert actions[-4:] == ["people.identity.linked", "people.refused", "people.refused", "people.identity.unlinked"]
    assert [e.parameters["change"] for e in AuditEvent.objects.filter(action="people.refused").order_by("pk")] == [
        "link", "link", "link", "link", "unlink"]
    assert AuditEvent.objects.get(action="people.identity.unlinked").parameters["linked_by"] == "bob"


def test_lineage_break_glass_accounts_may_request_but_never_approve(console_table, settings) -> None:
    table = console_table(TABLE)
    settings.CLEANLINE_BREAK_GLASS_USERS = ["root"]
    root, bob = person("root", "admin"), person("bob", "admin")
    mine, theirs, automatic = draft(table, root), draft(table, bob), draft(table, None, automatic=True)
    for plan in (theirs, automatic):
        with pytest.raises(ValidationError, match="Break-glass accounts may request but never approve"):
            services.plan_approval_request(plan=plan, user=root)
    assert refusals("clean.plan.approval.refused") == [permissions.BREAK_GLASS] * 2
    assert awaiting_decision(root) == []
    page = signed_in(root).get(reverse("console:plan", args=[table.pk, automatic.pk])).content.decode()
    assert "Break-glass accounts may request but never approve" in page and "Approve and run" not in page
    waiting = created(bob, "nina", "admin")
    with pytest.raises(ValidationError, match="Break-glass accounts"):
        services.person_admin_confirm(actor=root, grant=RoleGrant.objects.get(user=waiting))
    assert services.plan_approval_request(plan=mine, user=bob).status == ApprovalStatus.APPROVING


def test_lineage_rule_off_leaves_every_approval_to_the_roles(console_table, settings) -> None:
    table = console_table(TABLE)
    settings.CLEANLINE_APPROVER_MUST_DIFFER, settings.CLEANLINE_BREAK_GLASS_USERS = False, ["mallory"]
    mallory = person("mallory", "admin")
    op = created(mallory, "op", "operator")
    assert permissions.approval_refusal(mallory, op.pk) == "" == permissions.approval_refusal(mallory, mallory.pk)
    assert services.plan_approval_request(plan=draft(table, op), user=mallory).status == ApprovalStatus.APPROVING


def test_lineage_people_links_views_get_405_viewers_403_no_role_404_csrf_enforced() -> None:
    ann, bob = person("ann", "admin"), person("bob", "admin")
    zed = person("zed", "admin")
    create = reverse("console:people_link")
    page = signed_in(bob).get(reverse("console:people")).content.decode()
    assert 'id="identity-link"' in page and 'id="identity-links"' not in page
    for url in (create, reverse("console:people_unlink", args=[1])):
        assert signed_in(bob).get(url).status_code == 405
        for role in ("viewer", "operator"):
            assert signed_in(person(f"{role}-{len(url)}", role)).post(url).status_code == 403
        assert signed_in(User.objects.create_user(f"none-{len(url)}")).post(url).status_code == 404
        strict = Client(enforce_csrf_checks=True)
        strict.force_login(bob)
        assert strict.post(url, {"username": "ann", "other": "zed"}).status_code == 403
    assert not IdentityLink.objects.exists()
    assert signed_in(bob).post(reverse("console:people_unlink", args=[99])).status_code == 404

    answer = signed_in(bob).post(create, {"username": "ann", "other": "zed"}, follow=True)
    assert "ann and zed are now one person" in answer.content.decode()
    link = IdentityLink.objects.get()
    assert 'id="identity-links"' in answer.content.decode() and f'data-link="{link.pk}"' in answer.content.decode()
    answer = signed_in(zed).post(reverse("console:people_unlink", args=[link.pk]), follow=True)
    assert "Nobody links or unlinks their own account" in answer.content.decode() and IdentityLink.objects.exists()
    answer = signed_in(bob).post(reverse("console:people_unlink", args=[link.pk]), follow=True)
    assert "no longer linked" in answer.content.decode() and not IdentityLink.objects.exists()
    assert ann.pk < zed.pk
