"""The console beside live Hudi writers (safe by default): each table's page says which lock its
writers use and where that came from, and the live writers it sees; with no lock known and a
writer live every change is refused until an admin says the writers are stopped, which the plan,
the job and the audit row record."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from console import services
from console.models import AuditEvent, CleanPlan, Job, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION

TABLE = "sample_table/cow/v9_txns_simple_nometa"
LIVE = "20300101000000000"  # requested "in the future": only its fresh heartbeat says it is live
STORAGE_LOCK = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"

pytestmark = pytest.mark.django_db


def base(table: Table) -> Path:
    return Path(table.path.removeprefix("file:"))


def live_writer(table: Table) -> None:
    """A Hudi writer's requested commit whose heartbeat was touched a second ago."""
    folder = base(table) / ".hoodie"
    (folder / "timeline" / f"{LIVE}.commit.requested").write_bytes(b"")
    beat = folder / ".heartbeat" / LIVE
    beat.parent.mkdir(parents=True, exist_ok=True)
    beat.write_bytes(b"")
    os.utime(beat, (time.time() - 1, time.time() - 1))


def admin(name: str) -> Client:
    user = User.objects.create_user(name)
    user.groups.add(Group.objects.get(name="admin"))
    client = Client()
    client.force_login(user)
    return client


def test_writer_lock_overview_shows_the_lock_and_its_source(table: Table, settings) -> None:
    viewer = admin("ada")
    page = viewer.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert 'id="writer-lock"' in page and "none" in page and "none seen" in page

    settings.CLEANLINE_HUDI_OPTIONS = {str(base(table).parent): {
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control", "hoodie.write.lock.provider": STORAGE_LOCK}}
    page = viewer.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert "StorageBasedLockProvider" in page and "from: root setting" in page

    # the table's own "Hudi writer options" (the console's per-table settings) over the root's
    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                   auto_max_bytes=1000, write_options={
                                       "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
                                       "hoodie.write.lock.provider": STORAGE_LOCK})
    page = viewer.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert "StorageBasedLockProvider" in page and "from: option" in page

    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                   auto_max_bytes=1000, write_options={})
    settings.CLEANLINE_HUDI_OPTIONS = {}
    lock_file = base(table) / ".hoodie" / ".locks" / "table_lock.json"
    lock_file.parent.mkdir(parents=True)
    lock_file.write_text(json.dumps({"owner": "hudi-writer-uuid", "expiration": int(time.time() * 1000) - 1000,
                                     "expired": True}))
    page = viewer.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert "StorageBasedLockProvider" in page and "from: found on storage" in page


def test_writer_lock_a_live_writer_with_no_lock_refuses_every_change_until_an_admin_says_stopped(
        table: Table, settings, django_capture_on_commit_callbacks) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = False
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    assert plan.status == ApprovalStatus.DRAFT
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("requested_time").last()
    assert commit is not None
    live_writer(table)
    before = sorted(p.name for p in (base(table) / ".hoodie" / "timeline").iterdir())
    ada = admin("ada")

    overview = ada.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert f"commit {LIVE}" in overview and "every change is refused" in overview
    plan_page = ada.get(reverse("console:plan", args=[table.pk, plan.pk])).content.decode()
    assert 'name="writers_stopped"' in plan_page

    # refused: the approval, a savepoint (the metadata-table drop: the test after the next)
    with django_capture_on_commit_callbacks(execute=True):  # the approval task runs eagerly
        ada.post(reverse("console:plan_approve", args=[table.pk, plan.pk]))
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT and LIVE in plan.error and "writers are stopped" in plan.error
    response = ada.post(reverse("console:savepoint_create", args=[table.pk]), {"instant": commit.requested_time})
    assert response.status_code == 400 and LIVE in response.content.decode()
    assert sorted(p.name for p in (base(table) / ".hoodie" / "timeline").iterdir()) == before

    # with the admin's word: approved and run, recorded on the plan and in the audit log
    with django_capture_on_commit_callbacks(execute=True):  # approval, then the run
        ada.post(reverse("console:plan_approve", args=[table.pk, plan.pk]), {"writers_stopped": "on"})
    plan.refresh_from_db()
    assert plan.writers_stopped and plan.status == ApprovalStatus.COMPLETED, plan.error
    approved = AuditEvent.objects.get(action="clean.plan.approved", table=table)
    assert approved.parameters["writers_stopped"] is True
    assert any("the caller said the writers are stopped" in line for line in approved.parameters["lock"])
    assert AuditEvent.objects.get(action="clean.plan.approval.requested", table=table,
                                  parameters__writers_stopped=True)
    response = ada.post(reverse("console:savepoint_create", args=[table.pk]),
                        {"instant": commit.requested_time, "writers_stopped": "on"})
    assert response.status_code == 302, response.content.decode()[-3000:]
    created = AuditEvent.objects.get(action="savepoint.created", table=table)
    assert created.parameters["writers_stopped"] is True


def test_writer_lock_the_api_takes_the_override_and_the_job_records_it(table: Table,
                                                                        django_capture_on_commit_callbacks) -> None:
    user = User.objects.create_user("api-admin")
    user.groups.add(Group.objects.get(name="admin"))
    _, secret = services.token_create(actor=user, owner=user, name="ci")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("requested_time").last()
    assert commit is not None
    live_writer(table)
    savepoints = f"/api/v1/tables/{table.pk}/savepoints"
    refused = api.post(savepoints, {"instant": commit.requested_time}, content_type="application/json")
    assert refused.status_code == 409 and LIVE in refused.json()["detail"]
    made = api.post(savepoints, {"instant": commit.requested_time, "writers_stopped": True},
                    content_type="application/json")
    assert made.status_code == 201, made.content
    assert AuditEvent.objects.get(action="savepoint.created", table=table).parameters["writers_stopped"] is True

    restore = f"/api/v1/tables/{table.pk}/restore"
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post(restore, {"savepoint": commit.requested_time, "confirm": table.name},
                         content_type="application/json")
    # refused when asked, not by the job once it runs: no job, the refusal audited
    assert first.status_code in (400, 409) and LIVE in first.json()["detail"], first.content
    assert not Job.objects.exists()
    refused_audit = AuditEvent.objects.get(action="restore.refused", table=table)
    assert LIVE in refused_audit.result
    with django_capture_on_commit_callbacks(execute=True):
        second = api.post(restore, {"savepoint": commit.requested_time, "confirm": table.name,
                                    "writers_stopped": True}, content_type="application/json")
    job = Job.objects.get(pk=second.json()["id"])
    # the admin's word is on the job; the restore's own rule still keeps the live write
    assert job.writers_stopped and "still being written" in job.error
    requested = AuditEvent.objects.filter(action="restore.requested", table=table).order_by("pk").last()
    assert requested is not None and requested.parameters["writers_stopped"] is True
    assert not CleanPlan.objects.exists()


def test_writer_lock_a_live_writer_with_no_lock_refuses_the_metadata_table_drop_until_an_admin_says_stopped(
        console_table) -> None:  # type: ignore[no-untyped-def]
    table = console_table("sample_table/cow/v9_txns_simple_meta")
    live_writer(table)
    metadata = base(table) / ".hoodie" / "metadata"
    before = sorted(str(p) for p in metadata.rglob("*"))
    ada = admin("ada")
    drop = reverse("console:metadata_table_drop", args=[table.pk])
    refused = ada.post(drop, {"confirm": table.name}, follow=True).content.decode()
    assert "no lock it shares with Cleanline is known" in refused and "nothing was changed" in refused
    assert LIVE in AuditEvent.objects.get(action="metadata_table.drop.failed", table=table).result
    assert sorted(str(p) for p in metadata.rglob("*")) == before
    assert not AuditEvent.objects.filter(action="metadata_table.dropped", table=table).exists()

    done = ada.post(drop, {"confirm": table.name, "writers_stopped": "on"}, follow=True).content.decode()
    assert "was dropped" in done and not metadata.exists()
    dropped = AuditEvent.objects.get(action="metadata_table.dropped", table=table)
    assert dropped.parameters["writers_stopped"] is True
