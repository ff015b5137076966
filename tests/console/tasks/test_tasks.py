"""Celery tasks in the HackSoft manner: sent by the service that makes their row, only once the
transaction that asked for them commits, with their id on the row first; each claims its row,
so that a second delivery does nothing; only a busy table (transient) is retried. Tasks run
eagerly here, with explicit ids standing for the broker's deliveries;
tests/console/tasks/test_worker.py and test_hardening_races.py run them on real workers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.signals import task_prerun
from django.db import transaction

from console import services
from console.models import CleanPlan, Job, JobStatus, SyncStatus, Table
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from console.services.queue import QUEUED_TASKS
from console.tasks import build_clean_plan, run_clean_plan, run_job, sync_table
from tests.console.helpers import ROOT
from tests.helpers import fake_failed_write
from timeline import HudiTable

pytestmark = pytest.mark.django_db
FAILED_WRITE = "20990101000000000"


def requested(table: Table) -> CleanPlan:
    """A plan with the table's own settings (it keeps every file of this table: rows all the same)."""
    return services.plan_request(table=table, user=None, overrides={})


@pytest.fixture
def started() -> Iterator[list[str]]:
    """The ids of the tasks that start (eagerly, here) while the test runs."""
    ids: list[str] = []

    def record(task_id: str, **_: object) -> None:
        ids.append(task_id)

    task_prerun.connect(record, weak=False)
    yield ids
    task_prerun.disconnect(record)


def break_lake(table: Table) -> None:
    (Path(table.path.removeprefix("file:")) / ".hoodie" / "hoodie.properties").unlink()


def test_tasks_services_send_their_task_on_commit_with_its_id_on_the_row(table: Table, started: list[str],
                                                                          django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        plan = requested(table)  # the service queues the plan's build
        services.table_sync_queue(table=table)
    plan.refresh_from_db()
    assert len(callbacks) == 2 and started == []  # nothing sent before the commit
    assert plan.task_id == "" and plan.status == ApprovalStatus.PLANNING
    for send in callbacks:
        send()  # the commit: the row gets the task's id, then the (eager) task runs under it
    plan.refresh_from_db()
    table.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT and table.sync_status == SyncStatus.OK
    assert started == [plan.task_id, table.sync_task_id] and plan.task_id != table.sync_task_id


def test_tasks_service_in_a_rolled_back_transaction_sends_nothing(table: Table, started: list[str],
                                                                  django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            requested(table)
            raise RuntimeError("the request failed after asking for the plan")
    assert callbacks == [] and started == [] and not CleanPlan.objects.exists()


def test_tasks_every_name_the_services_send_is_registered_once_django_starts() -> None:
    """The services send tasks by name (console/services/queue.py): in a process that only
    started Django (the web's: nothing there imports console/tasks.py but console/apps.py), every
    such name is a registered task; a task renamed fails here rather than at its first send."""
    script = ("import django; django.setup(); from console.celery import app; "
              f"print([n for n in {list(QUEUED_TASKS)!r} if n not in app.tasks])")
    found = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings"})
    assert found.returncode == 0 and found.stdout.strip() == "[]", found.stdout + found.stderr


def test_tasks_build_claims_its_plan_and_a_second_delivery_does_nothing(table: Table) -> None:
    plan = requested(table)
    assert build_clean_plan.apply(args=[plan.pk], task_id="build-1").get() == "draft"
    plan.refresh_from_db()
    files = stored_plan(plan).files  # type: ignore[union-attr]
    assert plan.status == ApprovalStatus.DRAFT and plan.task_id == "build-1" and files == plan.files_kept > 0
    assert build_clean_plan.apply(args=[plan.pk], task_id="build-1").get() == "skipped"  # delivered again
    assert stored_plan(plan).files == files  # type: ignore[union-attr]
    other = requested(table)
    CleanPlan.objects.filter(pk=other.pk).update(task_id="build-2")  # claimed by (or sent as) build-2
    assert build_clean_plan.apply(args=[other.pk], task_id="build-3").get() == "skipped"  # a stray copy
    assert CleanPlan.objects.get(pk=other.pk).status == ApprovalStatus.PLANNING
    assert build_clean_plan.apply(args=[other.pk], task_id="build-2").get() == "draft"  # its worker died: again


def test_tasks_sync_claims_its_table_and_a_second_delivery_does_nothing(table: Table) -> None:
    def status() -> tuple[str, str]:
        row = Table.objects.get(pk=table.pk)
        return row.sync_status, row.sync_task_id

    sync_table.apply(args=[table.pk], task_id="sync-1")
    assert status() == (SyncStatus.OK, "sync-1")  # nothing changed on the lake: the claim ended
    break_lake(table)  # from here on, a sync that runs fails the row
    sync_table.apply(args=[table.pk], task_id="sync-1")  # delivered again: it did its work already
    assert status() == (SyncStatus.OK, "sync-1")
    Table.objects.filter(pk=table.pk).update(sync_status=SyncStatus.RUNNING, sync_task_id="sync-2")
    sync_table.apply(args=[table.pk], task_id="sync-3")  # another sync is running
    assert status() == (SyncStatus.RUNNING, "sync-2")
    sync_table.apply(args=[table.pk], task_id="sync-2")  # its own second delivery: its worker died
    assert status() == (SyncStatus.FAILED, "sync-2")
    sync_table.apply(args=[table.pk], task_id="sync-4")  # a new sync after a settled one runs
    assert status() == (SyncStatus.FAILED, "sync-4")


def test_tasks_run_stores_its_id_and_a_second_delivery_does_nothing(table: Table) -> None:
    written = fake_failed_write(Path(table.path.removeprefix("file:")), FAILED_WRITE, markers=True)
    job = Job.objects.create(table=table, kind=Job.Kind.ROLLBACK, target=FAILED_WRITE)
    assert run_job.apply(args=[job.pk], task_id="run-1").get() == JobStatus.COMPLETED
    job.refresh_from_db()
    assert job.task_id == "run-1" and not any(f.exists() for f in written)
    rollbacks = len(HudiTable.open(table.path).timeline.rollbacks())
    assert run_job.apply(args=[job.pk], task_id="run-1").get() == "skipped"  # delivered again
    assert len(HudiTable.open(table.path).timeline.rollbacks()) == rollbacks
    plan = services.plan_build(plan=requested(table))
    assert run_clean_plan.apply(args=[plan.pk], task_id="run-2").get() == "skipped"  # a draft does not run


def test_tasks_busy_table_is_retried_then_the_job_fails_with_the_reason(table: Table, settings) -> None:
    settings.CLEANLINE_BUSY_MAX_RETRIES = 2
    settings.CLEANLINE_BUSY_RETRY_SECONDS = settings.CLEANLINE_BUSY_RETRY_MAX_SECONDS = 0
    job = Job.objects.create(table=table, kind=Job.Kind.ROLLBACK, target=FAILED_WRITE)
    with services.table_lock(table, "restore:99"):
        assert run_job.apply(args=[job.pk], task_id="job-1").get() == "failed"
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "Gave up after 2 retries" in job.error and "restore:99" in job.error


def test_tasks_other_errors_are_not_retried(table: Table) -> None:
    job = Job.objects.create(table=table, kind=Job.Kind.ROLLBACK, target=FAILED_WRITE)
    break_lake(table)
    result = run_job.apply(args=[job.pk], task_id="job-2")
    assert result.state == "FAILURE" and "not a Hudi table" in str(result.result)  # raised, not retried
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.task_id == "job-2" and "not a Hudi table" in job.error
