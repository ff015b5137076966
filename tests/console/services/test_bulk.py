"""Bulk actions on the catalog (issue 30): the ticked tables synced, or a clean planned for each
with its own settings, after one confirmation that lists them (nothing is done before it);
operators and admins only, POST with CSRF, every table's request audited as the single ones."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from console.models import AuditEvent, CleanPlan, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import login, person

pytestmark = pytest.mark.django_db


@pytest.fixture
def tables(console_table) -> list[Table]:
    return [console_table(f"sample_table/cow/{name}")
            for name in ("v8_nonpartitioned", "v9_txns_simple_nometa", "v6_nonpartitioned")]


def test_bulk_plans_a_clean_of_each_ticked_table_after_one_confirmation(
        tables: list[Table], django_capture_on_commit_callbacks) -> None:
    operator = login("operator")
    catalog = operator.get(reverse("console:catalog")).content.decode()
    assert catalog.count('form="bulk"') == 3 and 'value="plan"' in catalog
    ticked = [tables[0].pk, tables[2].pk]
    asked = operator.post(reverse("console:bulk"), {"action": "plan", "table": ticked})
    page = asked.content.decode()
    assert asked.status_code == 200 and "Plan a clean of 2 tables?" in page and 'id="bulk-confirm"' in page
    assert tables[0].name in page and tables[2].path in page and tables[1].path not in page
    assert not CleanPlan.objects.exists()  # nothing before the confirmation
    with django_capture_on_commit_callbacks(execute=True):  # the workers' builds run here (eagerly)
        done = operator.post(reverse("console:bulk"), {"action": "plan", "table": ticked, "confirm": "yes"})
    assert done.status_code == 302 and done["Location"] == reverse("console:catalog")
    plans = CleanPlan.objects.order_by("table_id")
    assert [p.table_id for p in plans] == ticked and all(p.status in (ApprovalStatus.DRAFT, ApprovalStatus.FAILED)
                                                         for p in plans)
    assert AuditEvent.objects.filter(action="clean.plan.requested").count() == 2
    assert "2 clean plans requested" in operator.get(reverse("console:catalog")).content.decode()


def test_bulk_syncs_the_ticked_tables(tables: list[Table], django_capture_on_commit_callbacks) -> None:
    admin = login("admin")
    with django_capture_on_commit_callbacks(execute=True):
        admin.post(reverse("console:bulk"), {"action": "sync", "table": [t.pk for t in tables], "confirm": "yes"})
    assert AuditEvent.objects.filter(action="table.sync.requested").count() == 3


def test_bulk_is_for_operators_posted_with_csrf(tables: list[Table]) -> None:
    viewer = login("viewer")
    assert 'form="bulk"' not in viewer.get(reverse("console:catalog")).content.decode()
    assert viewer.post(reverse("console:bulk"), {"action": "sync", "table": [tables[0].pk]}).status_code == 403
    operator = login("operator")
    assert operator.get(reverse("console:bulk")).status_code == 405
    assert operator.post(reverse("console:bulk"), {"action": "drop", "table": [tables[0].pk]}).status_code == 400
    assert operator.post(reverse("console:bulk"), {"action": "plan"}).status_code == 302  # nothing ticked
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(person("csrf-op", "operator"))
    assert guarded.post(reverse("console:bulk"), {"action": "plan", "table": [tables[0].pk],
                                                  "confirm": "yes"}).status_code == 403
    assert not CleanPlan.objects.exists() and not AuditEvent.objects.filter(action="table.sync.requested").exists()
