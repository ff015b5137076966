"""The approvals endpoints (`/api/v1/approvals/{kind}/{id}/approve|reject`): any change that waits
for approval decided through the one workflow, with the pages' rules, refusals and audit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase

from console import services
from console.models import Archival, AuditEvent, CleanPlan
from console.models_approvals import ApprovalStatus
from tests.console.helpers import ARCHIVABLE_TABLE, KEEP_FEW, SHORT_RETENTION, person

pytestmark = pytest.mark.django_db


def caller(user: User) -> Any:
    token = services.token_create(actor=user, owner=user, name="ci")[1]
    client = Client()

    def call(path: str, body: dict[str, Any] | None = None) -> Any:
        with TestCase.captureOnCommitCallbacks(execute=True):  # the tasks it queues run (eagerly) as on commit
            return client.post(f"/api/v1{path}", json.dumps(body or {}), content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {token}")

    return call


def test_api_approvals_approve_an_archival_by_the_one_workflow(console_table, settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    table = services.table_settings_update(table=console_table(ARCHIVABLE_TABLE), user=None, auto_clean=False,
                                           auto_max_files=1000, auto_max_bytes=1000, write_options=KEEP_FEW)
    ada, bob = person("ada", "admin"), person("bob", "admin")
    archival = services.archival_request(table=table, user=ada)
    refused = caller(ada)(f"/approvals/archival/{archival.pk}/approve")
    assert refused.status_code == 409 and "approver must differ" in refused.json()["detail"]
    assert AuditEvent.objects.filter(action="archival.approval.refused", username="ada").count() == 1
    approved = caller(bob)(f"/approvals/archival/{archival.pk}/approve", {"writers_stopped": False})
    assert approved.status_code == 202, approved.content
    out = approved.json()
    assert (out["kind"], out["id"], out["table_id"], out["decided_by"]) == ("archival", archival.pk, table.pk, "bob")
    assert out["url"].endswith(f"/tables/{table.pk}/archivals/{archival.pk}")
    assert Archival.objects.get(pk=archival.pk).status == ApprovalStatus.COMPLETED  # its run, eager here
    again = caller(person("cy", "admin"))(f"/approvals/archival/{archival.pk}/approve")
    assert again.status_code == 409 and "this one is completed" in again.json()["detail"]


def test_api_approvals_reject_a_plan_and_unknown_kinds_or_ids_are_not_found(console_table) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    ada = person("ada", "admin")
    plan = services.plan_build(plan=services.plan_request(table=table, user=ada, overrides=SHORT_RETENTION))
    ada_api = caller(ada)
    rejected = ada_api(f"/approvals/clean-plan/{plan.pk}/reject", {"note": "not now"})
    assert rejected.status_code == 200, rejected.content
    assert rejected.json()["status"] == "rejected" and rejected.json()["decision_note"] == "not now"
    assert CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.REJECTED
    assert AuditEvent.objects.filter(action="clean.plan.rejected", table=table).count() == 1
    assert ada_api(f"/approvals/clean-plan/{plan.pk}/reject", {"note": "again"}).status_code == 200  # same
    assert caller(person("bob", "admin"))(f"/approvals/clean-plan/{plan.pk}/reject").status_code == 409
    assert ada_api(f"/approvals/compaction/{plan.pk}/approve").status_code == 404
    assert ada_api(f"/approvals/repair/{plan.pk + 1000}/approve").status_code == 404
    assert caller(person("op", "operator"))(f"/approvals/clean-plan/{plan.pk}/approve").status_code == 403
