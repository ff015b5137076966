"""LDAP sign-in against a real OpenLDAP slapd on 127.0.0.1 (tests/console/helpers.py): the user
found by the service account's search and checked by binding as them, created at the first
sign-in with the role their groups map to (CLEANLINE_LDAP_GROUP_ROLES), the role read again at
every sign-in (out of the group: the role is gone), no mapped group: refused and audited, a wrong
password refused and counted by the login throttling (django-axes), StartTLS and LDAPS with the
CA file, and a local account's username never taken over. An admin the directory makes is an
admin at once (no second admin confirms a provider's role) yet the two-person rule and API tokens
hold for them as for anyone: their own plan is approved by another admin only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import Client, TestCase
from django.urls import reverse

from console.models import AuditEvent, CleanPlan, GrantStatus, Profile, RoleGrant
from console.models_approvals import ApprovalStatus
from console.roles import role_name
from tests.console.helpers import LDAP_PASSWORDS as PASSWORDS
from tests.console.helpers import SHORT_RETENTION, Slapd, use_ldap

pytestmark = pytest.mark.django_db
TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"
def sign_in(username: str, password: str, client: Client | None = None) -> Client:
    client = client or Client(REMOTE_ADDR="192.0.2.10")
    client.post(reverse("login"), {"username": username, "password": password})
    return client


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def refusals() -> list[dict[str, str]]:
    return [e.parameters for e in AuditEvent.objects.filter(action="signin.refused").order_by("pk")]


def test_ldap_group_gives_the_role_and_a_user_removed_from_the_group_loses_it_at_next_signin(ldap_on: Slapd) -> None:
    client = sign_in("alice", PASSWORDS["alice"])
    assert signed_in(client)
    alice = User.objects.get(username="alice")
    assert role_name(alice) == "admin" and not alice.has_usable_password()
    assert (alice.email, alice.first_name) == ("alice@example.org", "Alice")
    profile = Profile.objects.get(user=alice)
    assert (profile.source, profile.external_id) == ("ldap", ldap_on.user_dn("alice"))
    assert client.get(reverse("console:people")).status_code == 200  # the admin role works at once
    assert AuditEvent.objects.filter(action="signin.user_created", username="alice").count() == 1

    # out of the admins, into the viewers: viewer at the next sign-in
    ldap_on.set_members("cleanline-admins", [])
    ldap_on.set_members("cleanline-viewers", ["alice", "bob"])
    client = sign_in("alice", PASSWORDS["alice"])
    assert signed_in(client) and role_name(User.objects.get(username="alice")) == "viewer"
    assert client.get(reverse("console:people")).status_code == 403
    changed = AuditEvent.objects.filter(action="signin.role_changed", username="alice").order_by("pk")
    assert [(e.parameters["from"], e.parameters["to"]) for e in changed] == [("", "admin"), ("admin", "viewer")]

    # out of every mapped group: no role, no access
    ldap_on.set_members("cleanline-viewers", ["bob"])
    client = sign_in("alice", PASSWORDS["alice"])
    assert not signed_in(client)
    assert role_name(User.objects.get(username="alice")) == ""
    assert refusals()[-1]["method"] == "ldap" and "no Cleanline role" in refusals()[-1]["reason"]
    assert User.objects.filter(username="alice").count() == 1  # the same user throughout


def test_ldap_highest_mapped_group_wins(ldap_on: Slapd) -> None:
    assert signed_in(sign_in("bob", PASSWORDS["bob"]))  # operators and viewers: operator
    assert role_name(User.objects.get(username="bob")) == "operator"


def test_ldap_user_without_a_mapped_group_is_refused_audited_and_not_created(ldap_on: Slapd) -> None:
    client = sign_in("carol", PASSWORDS["carol"])
    assert not signed_in(client)
    assert not User.objects.filter(username="carol").exists()
    assert refusals() == [{"method": "ldap", "username": "carol", "identity": ldap_on.user_dn("carol"),
                           "reason": refusals()[0]["reason"]}]
    assert "no Cleanline role" in refusals()[0]["reason"]
    page = client.post(reverse("login"), {"username": "carol", "password": PASSWORDS["carol"]})
    assert "no Cleanline role" in page.content.decode()  # the login page says why


def test_ldap_wrong_password_is_refused_and_counted_by_the_login_throttling(ldap_on: Slapd, settings) -> None:
    attacker = Client(REMOTE_ADDR="203.0.113.77")
    answers = [attacker.post(reverse("login"), {"username": "alice", "password": f"guess {n}"}).status_code
               for n in range(settings.AXES_FAILURE_LIMIT)]
    assert answers == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    attempt = AccessAttempt.objects.get(username="alice", ip_address="203.0.113.77")
    assert attempt.failures_since_start == settings.AXES_FAILURE_LIMIT
    # locked out: the right directory password from that address is refused too, and LDAP is not asked
    assert not signed_in(sign_in("alice", PASSWORDS["alice"], attacker))
    assert not User.objects.filter(username="alice").exists()
    assert signed_in(sign_in("alice", PASSWORDS["alice"], Client(REMOTE_ADDR="198.51.100.8")))


def test_ldap_lockout_counts_every_case_and_width_of_a_username_as_one(ldap_on: Slapd, settings) -> None:
    """The directory finds `uid=bob` for `Bob`, `bOb` or `ｂｏｂ` (caseIgnoreMatch): the lockout
    counts them as one name, so that no spelling gets guesses of its own."""
    limit = settings.AXES_FAILURE_LIMIT
    attacker = Client(REMOTE_ADDR="203.0.113.78")
    spellings = ["bob", "Bob", "bOb", "boB", "BOB", "bOB", " Bob"][:limit]
    answers = [attacker.post(reverse("login"), {"username": name, "password": f"guess {n}"}).status_code
               for n, name in enumerate(spellings)]
    assert answers == [200] * (limit - 1) + [429]
    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"bob"}
    # every spelling is locked out with it, the right directory password too, and LDAP is not asked
    for name in ("bob", "BOb", "ＢＯＢ", "bob\u200b"):
        assert not signed_in(sign_in(name, PASSWORDS["bob"], attacker)), name
    assert not User.objects.filter(username="bob").exists()
    assert signed_in(sign_in("BOb", PASSWORDS["bob"], Client(REMOTE_ADDR="198.51.100.8")))  # elsewhere: bob
    assert User.objects.get().username == "bob"


def test_ldap_starttls_and_ldaps_with_the_ca_file_and_refused_without_it(settings, directory: Slapd) -> None:
    directory.set_members("cleanline-admins", ["alice"])
    for env in (directory.env(CLEANLINE_LDAP_START_TLS="true", CLEANLINE_LDAP_CA_FILE=str(directory.ca_file)),
                directory.env(CLEANLINE_LDAP_SERVER_URI=directory.ldaps_uri,
                              CLEANLINE_LDAP_CA_FILE=str(directory.ca_file))):
        use_ldap(settings, env)
        assert signed_in(sign_in("alice", PASSWORDS["alice"])), env
    # a server certificate that the CA file does not vouch for: nothing is sent, nobody signs in
    other_ca = directory.folder / "other-ca.pem"
    other_ca.write_text(Path("/etc/ssl/certs/ca-certificates.crt").read_text())
    use_ldap(settings, directory.env(CLEANLINE_LDAP_START_TLS="true", CLEANLINE_LDAP_CA_FILE=str(other_ca)))
    assert not signed_in(sign_in("alice", PASSWORDS["alice"]))


def test_ldap_username_of_a_local_account_is_not_taken_over(ldap_on: Slapd) -> None:
    ldap_on.set_members("cleanline-admins", ["alice", "dave"])
    local = User.objects.create_user("dave", password="the local dave's own password")
    client = sign_in("dave", PASSWORDS["dave"])
    assert not signed_in(client)
    assert not Profile.objects.filter(user=local).exists() and role_name(local) == ""
    assert "There is already a user named 'dave'" in refusals()[-1]["reason"]
    assert signed_in(sign_in("dave", "the local dave's own password"))  # the local account still works


def api(client: Client, token: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One call to /api/v1 with `token`; the tasks it queues run (eagerly) as on commit."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return getattr(client, method.lower())("/api/v1" + path, json.dumps(body or {}),
                                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def token_of(client: Client) -> str:
    """A token created on the tokens page by the user signed in on `client` (shown once)."""
    page = client.post(reverse("console:token_create"), {"name": "laptop"})
    assert page.status_code == 200, page.content
    return str(page.context["secret"])


def test_ldap_admin_is_admin_at_once_and_the_two_person_rule_and_tokens_hold_for_them(ldap_on: Slapd, settings,
                                                                                         console_table) -> None:
    assert settings.CLEANLINE_APPROVER_MUST_DIFFER  # a local promotion to admin would wait for a second admin
    table = console_table(TABLE)
    ldap_on.set_members("cleanline-admins", ["alice", "dave"])
    alice_session = sign_in("alice", PASSWORDS["alice"])
    assert signed_in(alice_session)
    alice = User.objects.get(username="alice")
    # the directory's admin role is given at the first sign-in, confirmed by nobody: the provider's word
    assert alice.has_perm("console.approve_clean")
    assert list(RoleGrant.objects.filter(user=alice).values_list("role", "status", "requested_by", "decided_by")) == [
        ("admin", GrantStatus.GRANTED, None, None)]

    alice_token = token_of(alice_session)
    created = api(alice_session, alice_token, "POST", f"/tables/{table.pk}/plans", SHORT_RETENTION)
    assert created.status_code == 202, created.content
    plan_id = created.json()["id"]
    assert CleanPlan.objects.get(pk=plan_id).status == ApprovalStatus.DRAFT
    assert AuditEvent.objects.get(action="clean.plan.requested", table=table).parameters["api_token"] == "laptop"
    refused = api(Client(), alice_token, "POST", f"/tables/{table.pk}/plans/{plan_id}/approve")
    assert refused.status_code == 409 and "approver must differ" in refused.json()["detail"]
    assert CleanPlan.objects.get(pk=plan_id).status == ApprovalStatus.DRAFT

    dave_session = sign_in("dave", PASSWORDS["dave"])
    assert signed_in(dave_session) and Profile.objects.get(user__username="dave").source == "ldap"
    approved = api(Client(), token_of(dave_session), "POST", f"/tables/{table.pk}/plans/{plan_id}/approve")
    assert approved.status_code == 202 and approved.json()["status"] == "approving", approved.content
    assert CleanPlan.objects.get(pk=plan_id).status == ApprovalStatus.COMPLETED  # the approval task ran (eagerly)
    assert AuditEvent.objects.get(action="clean.plan.approved", table=table).username == "dave"
