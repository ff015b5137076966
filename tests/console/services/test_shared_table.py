"""The console on a table shared with Hudi writers: per-table writer options (the table's
concurrency mode and lock), saved only when Cleanline can take that lock, taken by every
change; an approval whose plan the timeline invalidates under the lock becomes STALE."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from console import services
from console.models import AuditEvent, CleanPlan, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION, login, person
from timeline import HudiTable
from timeline.instant import Instant, State
from timeline.locks import STORAGE_BASED_LOCK_PROVIDER, lock_for_table
from timeline.metadata import encode

OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
       "hoodie.write.lock.storage.validity.timeout.secs": "20",
       "hoodie.write.lock.storage.renew.interval.secs": "1",
       "hoodie.write.lock.wait_time_ms": "8000"}


def settings_form(options: dict[str, str]) -> dict[str, str]:
    return {"auto_max_files": "1000", "auto_max_bytes": "1000",
            "write_options": "\n".join(f"{k}={v}" for k, v in options.items())}


@pytest.mark.django_db
def test_live_lake_writer_options_are_saved_only_when_cleanline_can_take_the_lock(table: Table) -> None:
    admin = login("admin")
    dynamo = {**OCC, "hoodie.write.lock.provider": "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"}
    page = admin.post(reverse("console:table_settings", args=[table.pk]), settings_form(dynamo), follow=True)
    assert "DynamoDBBasedLockProvider" in page.content.decode()
    table.refresh_from_db()
    assert table.write_options == {}
    bad = admin.post(reverse("console:table_settings", args=[table.pk]), {**settings_form({}),
                                                                          "write_options": "not an option"},
                     follow=True)
    assert "expected hoodie.KEY=VALUE" in bad.content.decode()
    admin.post(reverse("console:table_settings", args=[table.pk]), settings_form(OCC))
    table.refresh_from_db()
    assert table.write_options == OCC
    assert AuditEvent.objects.filter(action="table.settings.changed").last().parameters["write_options"] == OCC
    page = admin.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert "hoodie.write.lock.provider=" in page  # shown back in the settings form


@pytest.mark.django_db
def test_live_lake_a_savepoint_waits_for_the_writers_lock(table: Table) -> None:
    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1, auto_max_bytes=1,
                                   write_options={**OCC, "hoodie.write.lock.wait_time_ms": "300"})
    table.refresh_from_db()
    lake = HudiTable.open(table.path)
    latest = lake.timeline.commits().completed().last()
    assert latest is not None
    writer = lock_for_table(lake.uri, OCC, owner="a-hudi-writer")
    writer.acquire(5)
    try:
        with pytest.raises(ValidationError, match="a-hudi-writer"):
            services.savepoint_create(table=table, user=person("op", "operator"), instant_time=latest.requested_time,
                                      comment="")
    finally:
        writer.release()
        writer.close()
    assert not HudiTable.open(table.path).timeline.savepoints()
    services.savepoint_create(table=table, user=person("op2", "operator"), instant_time=latest.requested_time,
                              comment="")
    assert HudiTable.open(table.path).timeline.savepoints().completed()


@pytest.mark.django_db(transaction=True)
def test_live_lake_an_approval_the_timeline_invalidates_under_the_lock_becomes_stale(table: Table) -> None:
    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1, auto_max_bytes=1,
                                   write_options=OCC)
    table.refresh_from_db()
    plan = services.plan_build(plan=services.plan_request(table=table, user=person("op", "operator"),
                                                          overrides=SHORT_RETENTION, enqueue=False))  # built here
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    lake = HudiTable.open(table.path)
    writer = lock_for_table(lake.uri, OCC, owner="a-hudi-writer")
    writer.acquire(5)
    approved: list[CleanPlan] = []
    approval = threading.Thread(target=lambda: approved.append(
        services.plan_approve(plan=CleanPlan.objects.get(pk=plan.pk), user=person("boss", "admin"))))
    try:
        approval.start()
        time.sleep(1.5)  # the approval has re-planned and waits for the lock to schedule
        # meanwhile the writer rolls a commit back (a rollback instant after the plan)
        last = lake.timeline.commits().completed().last()
        assert last is not None
        rollback = Instant(lake.new_instant_time(), "rollback", State.REQUESTED)
        folder = Path(lake.base) / ".hoodie" / "timeline"
        (folder / rollback.file_name(2)).write_bytes(encode(
            {"instantToRollback": {"commitTime": last.requested_time, "action": last.action},
             "RollbackRequests": [], "version": 1}, action="rollback", state=State.REQUESTED, layout=2))
    finally:
        writer.release()
        writer.close()
    approval.join(60)
    (result,) = approved
    assert result.status == ApprovalStatus.STALE
    assert any("was requested after the plan" in r for r in result.stale_reasons)
    assert not HudiTable.open(table.path).timeline.cleans()  # nothing was scheduled
    assert AuditEvent.objects.filter(action="clean.plan.stale").exists()
