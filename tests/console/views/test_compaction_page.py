"""Compactions on the Table services page (console/views_compaction.py): "Schedule" for operators
and admins, the compaction's page with its plan file group by file group and the approval (the one
decide view), the approvals queue holding it, and the run's outcome on the page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, TestCase
from django.urls import reverse

from console.models_compaction import Compaction
from tests.console.helpers import person

pytestmark = pytest.mark.django_db

TABLE = "quickstart_trips_table/mor/avro/v6_trips_8i1u"


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_compaction_schedule_page_queue_and_approval(table: Any) -> None:
    ada, bob = client_of(person("ada", "operator")), client_of(person("bob", "admin"))
    services = reverse("console:table_services", args=[table.pk])
    assert b">Schedule a compaction</button>" in ada.get(services).content
    assert b">Schedule a compaction</button>" not in client_of(person("vera", "viewer")).get(services).content
    with TestCase.captureOnCommitCallbacks(execute=True):
        asked = ada.post(reverse("console:compaction_request", args=[table.pk]))
    change = Compaction.objects.get(table=table)
    assert asked.url == reverse("console:compaction", args=[table.pk, change.pk])
    page = ada.get(asked.url).content.decode()
    assert change.operations[0]["file_id"] in page and "nothing written yet" in page
    assert "You requested this compaction" in page and "Approve and compact" not in page
    assert change.summary in bob.get(reverse("console:approvals")).content.decode()
    assert "Approve and compact" in bob.get(asked.url).content.decode()
    with TestCase.captureOnCommitCallbacks(execute=True):
        bob.post(reverse("console:compaction_approve", args=[table.pk, change.pk]))
    change.refresh_from_db()
    assert change.is_completed, change.error
    done = ada.get(asked.url).content.decode()
    assert "completed:" in done and "1 new base file," in done and change.result["files"][0]["path"] in done
