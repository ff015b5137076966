"""Safe flows: a plan being made never looks like an empty plan; the savepoint form offers only
writes the library accepts and keeps the user's input when it refuses one."""

from __future__ import annotations

import pytest
from django.urls import reverse

from console import services
from console.models import Table
from tests.console.conftest import login
from tests.console.retention import SHORT_RETENTION
from timeline import HudiTable

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(console_table) -> Table:
    return console_table("sample_table/mor/avro/v9_txns_simple_nometa")


def test_safe_flows_a_plan_being_made_says_so_and_shows_no_empty_totals(table: Table) -> None:
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)
    page = login("viewer").get(reverse("console:plan", args=[table.pk, plan.pk]))
    assert b"The plan is being made" in page.content and b"Files to delete" not in page.content
    assert b"Nothing to delete" not in page.content and b"No file matches" not in page.content
    built = services.plan_build(plan=plan)
    page = login("operator").get(reverse("console:plan", args=[table.pk, built.pk]))
    assert b"The plan is being made" not in page.content and b"Files to delete" in page.content


def test_safe_flows_savepoint_form_offers_accepted_writes_and_keeps_input_on_refusal(table: Table) -> None:
    lake = HudiTable.open(table.path)
    offered = [i.requested_time for i in lake.inspect.savepoint_candidates()]
    admin = login("admin")
    page = admin.get(reverse("console:savepoints", args=[table.pk])).content.decode()
    assert [o for o in offered if f'<option value="{o}"' in page] == offered
    assert page.count("<option value=") == len(offered)
    services.savepoint_create(table=table, user=None, instant_time=offered[0], comment="first")
    refused = admin.post(reverse("console:savepoint_create", args=[table.pk]),
                         {"instant": offered[0], "comment": "my careful comment"})
    body = refused.content.decode()
    assert refused.status_code == 400 and "already savepointed" in body and 'value="my careful comment"' in body
    assert f'<option value="{offered[0]}"' not in body  # savepointed now: no longer offered
