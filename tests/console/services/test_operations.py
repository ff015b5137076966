"""Savepoints, restores and rollbacks from the console: services, pages, audit, locks."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from console import services
from console.models import AuditEvent, Job, JobStatus, Table
from tests.console.helpers import login
from tests.helpers import fake_failed_write, rows
from timeline import HudiTable

pytestmark = pytest.mark.django_db


def path_of(table: Table) -> Path:
    return Path(table.path.removeprefix("file:"))


def commits(table: Table) -> list[str]:
    return [i.requested_time for i in HudiTable.open(table.path).timeline.commits().completed()]


def test_operations_savepoint_create_restore_preview_and_restore(table: Table,
                                                                 django_capture_on_commit_callbacks) -> None:
    operator, admin = login("operator"), login("admin")
    k = commits(table)[2]
    expected = rows(path_of(table), k)
    operator.post(reverse("console:savepoint_create", args=[table.pk]), {"instant": k, "comment": "before"})
    page = operator.get(reverse("console:savepoints", args=[table.pk]))
    assert k.encode() in page.content and b"before" in page.content
    preview = operator.get(reverse("console:restore", args=[table.pk, k]))
    assert b"Rolls back" in preview.content and b"Restore</button>" not in preview.content
    assert operator.post(reverse("console:restore_run", args=[table.pk]),
                         {"target": k, "confirm": table.name}).status_code == 403
    wrong = admin.post(reverse("console:restore_run", args=[table.pk]), {"target": k, "confirm": "nope"})
    assert wrong.status_code == 302 and not Job.objects.exists()
    rolled_back = len(HudiTable.open(table.path).inspect.restore_preview(k).instants)
    with django_capture_on_commit_callbacks(execute=True):
        done = admin.post(reverse("console:restore_run", args=[table.pk]), {"target": k, "confirm": table.name})
    job = Job.objects.get()
    assert done.status_code == 302 and job.status == JobStatus.COMPLETED and job.result["verified"] is True
    assert job.progress_done == job.progress_total == rolled_back > 0  # the instants rolled back
    assert rows(path_of(table)) == expected
    assert b"Checked: the table" in admin.get(reverse("console:job", args=[table.pk, job.pk])).content
    logged = list(AuditEvent.objects.filter(table=table).values_list("action", flat=True))
    assert {"savepoint.created", "restore.requested", "restore.completed"} <= set(logged)


def test_operations_savepoint_delete_needs_admin_and_typed_time(table: Table) -> None:
    k = commits(table)[1]
    services.savepoint_create(table=table, user=None, instant_time=k, comment="x")
    assert login("operator").post(reverse("console:savepoint_delete", args=[table.pk, k]),
                                  {"confirm": k}).status_code == 403
    admin = login("admin")
    admin.post(reverse("console:savepoint_delete", args=[table.pk, k]), {"confirm": "no"})
    assert HudiTable.open(table.path).timeline.savepoints()
    admin.post(reverse("console:savepoint_delete", args=[table.pk, k]), {"confirm": k})
    assert not HudiTable.open(table.path).timeline.savepoints()
    assert AuditEvent.objects.filter(action="savepoint.deleted").exists()


def test_operations_failed_write_rolled_back_from_the_page(table: Table, django_capture_on_commit_callbacks) -> None:
    path = path_of(table)
    before = rows(path)
    written = fake_failed_write(path, "20990101000000000", markers=True)
    admin = login("admin")
    page = admin.get(reverse("console:failed_writes", args=[table.pk]))
    assert b"20990101000000000" in page.content
    admin.post(reverse("console:rollback_run", args=[table.pk]), {"target": "20990101000000000"})
    assert not Job.objects.exists() and all(f.exists() for f in written)  # not typed: nothing queued
    with django_capture_on_commit_callbacks(execute=True):
        admin.post(reverse("console:rollback_run", args=[table.pk]),
                   {"target": "20990101000000000", "confirm": "20990101000000000"})
    job = Job.objects.get(kind="rollback")
    assert job.status == JobStatus.COMPLETED and not any(f.exists() for f in written)
    assert rows(path) == before


def test_operations_lock_conflict_and_refusals_are_clear(table: Table) -> None:
    k = commits(table)[1]
    with services.table_lock(table, "clean-plan:99"):
        with pytest.raises(services.TableBusy, match="busy: clean-plan:99"):
            services.savepoint_create(table=table, user=None, instant_time=k, comment="")
        with pytest.raises(services.TableBusy):
            services.job_request(table=table, user=None, kind="restore", target=k, confirm_name=table.name)
    with pytest.raises(ValidationError, match="not a completed commit"):
        services.savepoint_create(table=table, user=None, instant_time="19990101000000000", comment="")
    assert AuditEvent.objects.filter(action="savepoint.refused").exists()


def test_operations_audit_page_filters(table: Table) -> None:
    services.savepoint_create(table=table, user=None, instant_time=commits(table)[1], comment="")
    viewer = login("viewer")
    page = viewer.get(reverse("console:audit"), {"action": "savepoint"})
    assert b"savepoint.created" in page.content
    assert b"savepoint.created" not in viewer.get(reverse("console:audit"), {"action": "restore"}).content


def test_operations_automatic_mode_approves_small_plans_and_leaves_large_ones(
        table: Table, django_capture_on_commit_callbacks) -> None:
    from console.models import ApprovalStatus, CleanPlan
    from console.tasks import auto_clean_tables
    from timeline import HudiTable
    from timeline.config import update_config

    admin = login("admin")
    admin.post(reverse("console:table_settings", args=[table.pk]),
               {"auto_clean": "on", "auto_max_files": "1", "auto_max_bytes": "10"})
    table.refresh_from_db()
    assert table.auto_clean and AuditEvent.objects.filter(action="table.settings.changed").exists()
    # the table itself retains one commit (as a Hudi writer configured it), and the console syncs it
    lake = HudiTable.open(table.path)
    update_config(lake.storage, lake.base, {"hoodie.clean.commits.retained": "1"})
    services.table_sync(table=table)
    table.refresh_from_db()
    assert table.properties["hoodie.clean.commits.retained"] == "1"
    assert auto_clean_tables() == 0  # the plan is above the thresholds: it waits for an admin
    plan = CleanPlan.objects.get()
    assert plan.automatic and plan.status == ApprovalStatus.DRAFT and plan.requested_by is None
    assert services.auto_clean(table=table) is None  # one open plan at a time
    services.plan_reject(plan=plan, user=None)
    Table.objects.filter(pk=table.pk).update(auto_max_files=10**6, auto_max_bytes=10**12)
    with django_capture_on_commit_callbacks(execute=True) as sent:
        assert auto_clean_tables() == 1
    assert len(sent) == 1  # the approved plan's run, sent on commit (eager: it ran)
    latest = CleanPlan.objects.order_by("-pk").first()
    assert latest is not None and latest.status == ApprovalStatus.COMPLETED
    assert AuditEvent.objects.filter(action="clean.plan.auto-approved").exists()


def test_operations_pending_clean_left_on_the_timeline_runs_from_the_page(
        table: Table, django_capture_on_commit_callbacks) -> None:
    from timeline.clean.config import CleanConfig
    from timeline.clean.executor import schedule_clean
    from timeline.clean.planner import plan_clean

    lake = HudiTable.open(table.path)
    config = CleanConfig(commits_retained=1)
    pending = schedule_clean(lake, plan_clean(lake, config), config)
    services.table_sync(table=table)
    admin = login("admin")
    assert pending.requested_time.encode() in admin.get(reverse("console:overview", args=[table.pk])).content
    with django_capture_on_commit_callbacks(execute=True):
        admin.post(reverse("console:clean_run_pending", args=[table.pk, pending.requested_time]))
    job = Job.objects.get(kind="clean")
    assert job.status == JobStatus.COMPLETED and job.result["deleted"] > 0
    assert job.progress_done == job.progress_total == job.result["deleted"] + job.result["already_gone"]
    assert not HudiTable.open(table.path).timeline.cleans().pending()
