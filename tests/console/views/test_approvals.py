"""The approvals queue (issue 30): what waits for one user's decision, oldest first, on its
page, the dashboard's card, the header's badge and `GET /api/v1/plans?status=awaiting`; a plan
that needs approval reaches its approvers through the alert channels (e-mail, also to each
admin who may approve it, and webhooks) with a link, and the alert resolves once it is decided."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from console import services
from console.models import Alert, AlertKind, CleanPlan, Table
from console.models_approvals import ApprovalStatus
from console.models_health import Repair
from console.selectors import awaiting_decision
from console.services import health
from tests.console.helpers import SHORT_RETENTION, Sinks, person

pytestmark = pytest.mark.django_db


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def draft(table: Table, user: Any, overrides: dict[str, Any] | None = None) -> CleanPlan:
    return services.plan_build(plan=services.plan_request(table=table, user=user,
                                                          overrides=overrides or SHORT_RETENTION, enqueue=False))


def test_approvals_queue_lists_what_waits_for_this_user_oldest_first(table: Table) -> None:
    ada, bob, cyd = person("ada", "admin"), person("bob", "operator"), person("cyd", "admin")
    viewer = person("vic", "viewer")
    first, second = draft(table, ada), draft(table, bob)
    nothing = draft(table, bob, {"policy": "KEEP_LATEST_COMMITS", "commits_retained": table.instants.count()})
    assert first.files_to_delete and second.files_to_delete and nothing.deletes_nothing
    assert [a.change for a in awaiting_decision(cyd)] == [first, second]  # oldest first; nothing to approve: not listed
    assert [a.change for a in awaiting_decision(ada)] == [second]          # her own plan waits for another admin
    assert awaiting_decision(bob) == [] == awaiting_decision(viewer)     # their roles approve nothing
    services.person_role_change(actor=ada, user=viewer, role="admin")    # waits for a second admin
    assert [a.kind for a in awaiting_decision(cyd)] == ["clean plan", "clean plan", "admin role"]
    assert [a.kind for a in awaiting_decision(ada)] == ["clean plan"]    # she asked for it
    services.person_role_change(actor=ada, user=bob, role="viewer")     # bob now comes from ada: his plan is not hers
    assert awaiting_decision(ada) == []                                 # to approve (console.lineage)

    page = signed_in(cyd).get(reverse("console:approvals")).content.decode()
    plan_urls = [reverse("console:plan", args=[table.pk, p.pk]) for p in (first, second)]
    assert page.index(plan_urls[0]) < page.index(plan_urls[1]) and "make vic an admin" in page
    assert reverse("console:plan", args=[table.pk, nothing.pk]) not in page
    assert 'id="approvals-badge"' in page and ">3</span>" in page        # the header's badge, on every page
    home = signed_in(cyd).get(reverse("console:home")).content.decode()
    assert 'id="approvals-card"' in home and plan_urls[0] in home and 'id="approvals-badge"' in home
    quiet = signed_in(viewer).get(reverse("console:approvals")).content.decode()
    assert 'id="approvals-empty"' in quiet and 'id="approvals-badge"' not in quiet
    services.plan_reject(plan=first, user=cyd)
    assert [a.change for a in awaiting_decision(cyd)][:1] == [second]


def test_approvals_api_plans_awaiting_is_the_tokens_users_queue(table: Table) -> None:
    ada, cyd = person("ada", "admin"), person("cyd", "admin")
    first, second = draft(table, ada), draft(table, person("bob", "operator"))

    tokens = {u.pk: services.token_create(actor=u, owner=u, name="ci")[1] for u in (ada, cyd)}

    def ids(user: Any, **query: str) -> list[int]:
        answer = Client().get("/api/v1/plans", query, HTTP_AUTHORIZATION=f"Bearer {tokens[user.pk]}")
        assert answer.status_code == 200, answer.content
        return [p["id"] for p in answer.json()["items"]]

    assert ids(cyd, status="awaiting") == [first.pk, second.pk]
    assert ids(ada, status="awaiting") == [second.pk]
    assert ids(ada, status="draft") == [second.pk, first.pk]  # every table's plans, newest first
    assert ids(ada) == [second.pk, first.pk]
    bogus = Client().get("/api/v1/plans", {"status": "bogus"}, HTTP_AUTHORIZATION=f"Bearer {tokens[ada.pk]}")
    assert bogus.status_code == 400 and "awaiting" in bogus.json()["detail"]


def test_approvals_a_plan_needing_approval_notifies_its_approvers_with_a_link(
        table: Table, sinks: Sinks, settings, django_capture_on_commit_callbacks) -> None:
    settings.CLEANLINE_URL = "https://cleanline.example.com"
    ada, cyd = person("ada", "admin"), person("cyd", "admin")
    for user, address in ((ada, "ada@cleanline.test"), (cyd, "cyd@cleanline.test")):
        user.email = address
        user.save()
    with django_capture_on_commit_callbacks(execute=True):  # the worker's build: the check is queued on commit
        plan = draft(table, ada)
    alert = Alert.objects.get(kind=AlertKind.APPROVAL_WAITING, resolved_at=None)
    link = f"https://cleanline.example.com{reverse('console:plan', args=[table.pk, plan.pk])}"
    assert alert.key == f"plan:{plan.pk}" and link in alert.message and "requested by ada" in alert.message
    (mail,) = sinks.mails_of(alert)
    (recipients,) = [r for r, m in sinks.mails if m is mail]
    assert recipients == ["ops@cleanline.test", "lead@cleanline.test", "cyd@cleanline.test"]  # not ada: her plan
    assert link in mail.get_content() and "waits for approval" in mail["Subject"]
    (hook,) = sinks.hooks_of(alert)
    assert link in hook["text"]
    with django_capture_on_commit_callbacks(execute=True):
        draft(table, ada, {"policy": "KEEP_LATEST_COMMITS",  # deletes nothing: no notice
                           "commits_retained": table.instants.count()})
    assert Alert.objects.filter(kind=AlertKind.APPROVAL_WAITING).count() == 1
    services.plan_reject(plan=plan, user=cyd)
    from console.alerts import check_alerts

    check_alerts()
    alert.refresh_from_db()
    assert alert.resolved_at is not None and sinks.counts() == (1, 1)  # decided: resolved, sent once


def test_approvals_queue_holds_repairs_and_archivals_for_their_approvers(archivable_table: Table) -> None:
    ada, cyd, bob = person("ada", "admin"), person("cyd", "admin"), person("bob", "operator")
    table = archivable_table
    repair = Repair.objects.create(table=table, kind="orphan_files", changes=2, bytes=300, requested_by=bob,
                                   plan={"changes": []})
    archival = services.archival_request(table=table, user=ada)
    plan = draft(table, bob)
    Repair.objects.create(table=table, kind="markers", status=ApprovalStatus.COMPLETED, requested_by=bob)  # decided
    assert [(a.kind, a.pk) for a in awaiting_decision(cyd)] == [
        ("repair", repair.pk), ("archival", archival.pk), ("clean plan", plan.pk)]  # oldest first
    assert [a.kind for a in awaiting_decision(ada)] == ["repair", "clean plan"]  # her archival waits for another
    assert awaiting_decision(bob) == []  # an operator approves nothing

    page = signed_in(cyd).get(reverse("console:approvals")).content.decode()
    urls = [reverse("console:repair", args=[table.pk, repair.pk]),
            reverse("console:archival_detail", args=[table.pk, archival.pk]),
            reverse("console:plan", args=[table.pk, plan.pk])]
    assert page.index(urls[0]) < page.index(urls[1]) < page.index(urls[2])
    assert ">3</span>" in page and "300 B" in page  # the badge; what the repair deletes
    home = signed_in(cyd).get(reverse("console:home")).content.decode()
    assert all(url in home for url in urls)  # the dashboard's card: the oldest three

    token = services.token_create(actor=cyd, owner=cyd, name="ci")[1]
    answer = Client().get("/api/v1/approvals", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200, answer.content
    items = answer.json()["items"]
    assert [(i["kind"], i["id"], i["table_id"]) for i in items] == [
        ("repair", repair.pk, table.pk), ("archival", archival.pk, table.pk), ("clean plan", plan.pk, table.pk)]
    assert items[0]["url"].endswith(urls[0]) and items[0]["requested_by"] == "bob" and items[0]["bytes"] == 300

    health.repair_reject(repair=repair, user=cyd)
    services.archival_decline(archival=archival, user=cyd)
    assert [a.kind for a in awaiting_decision(cyd)] == ["clean plan"]
    assert Client().get("/api/v1/approvals").status_code == 401
