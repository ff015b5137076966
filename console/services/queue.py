"""Enqueue on commit: the one way the console sends a Celery task. The service that makes or
claims a row sends the task that works on it (views and the API only call services); the
task goes once the transaction that asked for it commits, so nothing is sent for a row that a
rolled-back transaction made and the task never runs before its row is visible. The task's id
(and the given fields) is written on its row first: a copy delivered under another id finds
the row claimed (console/tasks.py).

Services name a task by its name in Celery's registry instead of importing console/tasks.py,
which imports the services: the registry is the seam. console/tasks.py declares its tasks under
these names, and console/apps.py imports it so that every process (the web's too) has them."""

from __future__ import annotations

from celery.utils import uuid
from django.db import transaction

from console.celery import app
from console.models import Job, RetentionEstimate, Table
from console.models_approvals import Approvable
from console.models_versions import VersionRehearsal

SYNC_TABLE = "console.tasks.sync_table"
BUILD_CLEAN_PLAN = "console.tasks.build_clean_plan"
APPROVE_CLEAN_PLAN = "console.tasks.approve_clean_plan"
RUN_CLEAN_PLAN = "console.tasks.run_clean_plan"
RUN_JOB = "console.tasks.run_job"
ESTIMATE_RETENTION = "console.tasks.estimate_retention"
RUN_REPAIR = "console.tasks.run_repair"
RUN_ARCHIVAL = "console.tasks.run_archival"
REHEARSE_VERSION_CHANGE = "console.tasks.rehearse_version_change"
RUN_VERSION_CHANGE = "console.tasks.run_version_change"
RUN_COMPACTION = "console.tasks.run_compaction"
CHECK_TABLE_ALERTS = "console.tasks.check_table_alerts"
QUEUED_TASKS = (SYNC_TABLE, BUILD_CLEAN_PLAN, APPROVE_CLEAN_PLAN, RUN_CLEAN_PLAN, RUN_JOB, ESTIMATE_RETENTION,
                RUN_REPAIR, RUN_ARCHIVAL, CHECK_TABLE_ALERTS, REHEARSE_VERSION_CHANGE, RUN_VERSION_CHANGE,
                RUN_COMPACTION)


def enqueue_on_commit(task: str, row: Table | Job | RetentionEstimate | Approvable | VersionRehearsal,
                      **fields: object) -> None:
    """Send the task named `task` for `row` once the current transaction commits (at once
    outside one), its id written on the row first (a table's `sync_task_id`, else `task_id`),
    with `fields`."""
    task_id = uuid()
    model, pk = type(row), row.pk
    id_field = "sync_task_id" if model is Table else "task_id"

    def send() -> None:
        model._default_manager.filter(pk=pk).update(**{id_field: task_id}, **fields)
        app.tasks[task].apply_async((pk,), task_id=task_id)

    transaction.on_commit(send)


def check_alerts_on_commit(table: Table) -> None:
    """Check the table's alert rules once the current transaction commits (a plan now waiting
    for approval notifies its approvers at once, not at beat's next check). The task claims no
    row, so no id is written."""
    pk = table.pk
    transaction.on_commit(lambda: app.tasks[CHECK_TABLE_ALERTS].apply_async((pk,)))
