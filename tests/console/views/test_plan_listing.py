"""Where a plan lists the table from (issue 29): the plan form and the API take listing
auto|metadata|storage (auto by default: the metadata table when it is valid, as Hudi does), the
planner lists from there, and the plan page says which listing the plan used."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from console import services
from console.models import CleanPlan, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION, login, person

pytestmark = pytest.mark.django_db

WITH_MDT = "sample_table/cow/v9_txns_simple_meta"
WITHOUT_MDT = "sample_table/mor/avro/v9_txns_simple_nometa"
FORM = {"commits_retained": "1", "allow_short_retention": "on"}


def plan_from_form(table: Table, capture, client: Client | None = None,  # type: ignore[no-untyped-def]
                   **fields: str) -> CleanPlan:
    with capture(execute=True):
        response = (client or login("operator")).post(reverse("console:plan_request", args=[table.pk]), FORM | fields)
    assert response.status_code == 302, response.content
    return CleanPlan.objects.filter(table=table).latest("pk")


@pytest.mark.parametrize(("listing", "used"), [("", "metadata"), ("auto", "metadata"), ("metadata", "metadata"),
                                               ("storage", "storage")])
def test_plan_listing_from_the_form_on_a_table_with_a_metadata_table(
        console_table, django_capture_on_commit_callbacks, listing: str, used: str) -> None:
    table = console_table(WITH_MDT)
    plan = plan_from_form(table, django_capture_on_commit_callbacks, **({"listing": listing} if listing else {}))
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    assert (plan.listing, plan.listing_used) == (listing or "auto", used)
    assert any("metadata table" in note for note in plan.notes) == (used == "metadata")
    page = login("viewer").get(reverse("console:plan", args=[table.pk, plan.pk])).content.decode()
    listing_row = page.split('id="plan-listing">')[1].split("</dd>")[0]
    assert ("through the metadata table" in listing_row) == (used == "metadata")
    assert ("from storage" in listing_row) == (used == "storage")


def test_plan_listing_through_the_metadata_table_plans_what_storage_plans(
        console_table, django_capture_on_commit_callbacks) -> None:
    """On a fixture whose metadata table lists what storage holds, both listings give one plan,
    and a plan listed through the metadata table is approved (re-made from the same listing) and
    runs."""
    table = console_table(WITH_MDT)
    operator = login("operator")
    meta = plan_from_form(table, django_capture_on_commit_callbacks, operator, listing="metadata")
    storage = plan_from_form(table, django_capture_on_commit_callbacks, operator, listing="storage")
    assert (meta.files_to_delete, meta.bytes_to_delete) == (storage.files_to_delete, storage.bytes_to_delete)
    plan = services.plan_run(plan=services.plan_approve(plan=meta, user=person("boss", "admin")))
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_done == plan.files_to_delete


def test_plan_listing_refuses_the_metadata_table_of_a_table_without_one(console_table) -> None:
    table = console_table(WITHOUT_MDT)
    response = login("operator").post(reverse("console:plan_request", args=[table.pk]), FORM | {"listing": "metadata"})
    assert b"has no metadata table to list it through" in response.content
    assert not CleanPlan.objects.exists()
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    assert (plan.listing, plan.listing_used) == ("auto", "storage")  # auto: storage, as Hudi lists it


def test_plan_listing_through_the_api(console_table) -> None:
    table = console_table(WITH_MDT)
    owner = person("olga", "operator")
    token = services.token_create(actor=owner, owner=owner, name="ci")[1]
    api = Client(headers={"Authorization": f"Bearer {token}"})
    url = f"/api/v1/tables/{table.pk}/plans"
    answer = api.post(url, {"commits_retained": 1, "allow_short_retention": True, "listing": "storage"},
                      content_type="application/json")
    assert answer.status_code == 202 and answer.json()["listing"] == "storage"
    assert CleanPlan.objects.get(pk=answer.json()["id"]).listing == "storage"
    default = api.post(url, {"commits_retained": 1, "allow_short_retention": True}, content_type="application/json")
    assert default.status_code == 202 and default.json()["listing"] == "auto"
    bad = api.post(url, {"listing": "everywhere"}, content_type="application/json")
    assert bad.status_code in (400, 422) and CleanPlan.objects.count() == 2
