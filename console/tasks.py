"""Celery tasks: thin, take an id, claim the row, call a service, record the result."""

from __future__ import annotations

from celery import shared_task
from django.core.exceptions import ValidationError
from django.db import transaction

from console import services
from console.models import CleanPlan, Job, JobStatus, PlanStatus, SyncStatus, Table
from timeline.exceptions import CleanlineError


@shared_task(bind=True, acks_late=True)
def sync_table(self, table_id: int) -> dict[str, int | bool]:  # type: ignore[no-untyped-def]
    """Mirror one table's timeline into the database."""
    table = Table.objects.filter(pk=table_id).first()
    if table is None:
        return {"changed": False, "created": 0, "updated": 0, "deleted": 0}
    Table.objects.filter(pk=table_id).update(sync_status=SyncStatus.RUNNING, sync_task_id=self.request.id or "")
    try:
        result = services.table_sync(table=table)
    except CleanlineError as exc:
        services.table_sync_failed(table=table, error=str(exc))
        return {"changed": False, "created": 0, "updated": 0, "deleted": 0}
    return {"changed": result.changed, "created": result.created, "updated": result.updated, "deleted": result.deleted}


@shared_task
def sync_all_tables() -> int:
    """The periodic sync (beat): queue a sync of every registered table."""
    ids = list(Table.objects.values_list("pk", flat=True))
    for table_id in ids:
        enqueue_sync(table_id)
    return len(ids)


def enqueue_sync(table_id: int) -> None:
    """Queue a sync once the current transaction commits, recording the task id on the row."""

    def send() -> None:
        result = sync_table.delay(table_id)
        Table.objects.filter(pk=table_id).update(sync_status=SyncStatus.QUEUED, sync_task_id=result.id or "")

    transaction.on_commit(send)


@shared_task(bind=True, acks_late=True)
def build_clean_plan(self, plan_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run the planner for a requested plan; a failure leaves the plan FAILED with the reason."""
    plan = CleanPlan.objects.filter(pk=plan_id).select_related("table").first()
    if plan is None or plan.status != PlanStatus.PLANNING:
        return "skipped"
    CleanPlan.objects.filter(pk=plan_id).update(task_id=self.request.id or "")
    try:
        services.plan_build(plan=plan)
    except CleanlineError as exc:
        CleanPlan.objects.filter(pk=plan_id).update(status=PlanStatus.FAILED, error=str(exc))
        return "failed"
    return "draft"


@shared_task(bind=True, acks_late=True)
def run_clean_plan(self, plan_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run an approved plan's clean. Re-delivered after a lost worker, it finishes the clean."""
    plan = CleanPlan.objects.filter(pk=plan_id).select_related("table").first()
    if plan is None or plan.status not in (PlanStatus.APPROVED, PlanStatus.RUNNING):
        return "skipped"
    return str(services.plan_run(plan=plan, task_id=self.request.id or "").status)


def enqueue(task: object, *args: object) -> None:
    """Queue a task once the current transaction commits."""
    transaction.on_commit(lambda: task.delay(*args))  # type: ignore[attr-defined]


@shared_task(bind=True, acks_late=True)
def run_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run a queued restore or rollback; re-delivered after a lost worker, it resumes."""
    job = Job.objects.filter(pk=job_id).select_related("table").first()
    if job is None or job.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
        return "skipped"
    return str(services.job_run(job=job, task_id=self.request.id or "").status)


@shared_task
def auto_clean_tables() -> int:
    """Automatic mode (beat): plan every table that has it on; approved plans are run."""
    started = 0
    for table in Table.objects.filter(auto_clean=True):
        try:
            plan = services.auto_clean(table=table)
        except (CleanlineError, ValidationError) as exc:
            services.audit(user=None, action="clean.auto.failed", table=table, result=str(exc))
            continue
        if plan is not None and plan.status == PlanStatus.APPROVED:
            run_clean_plan.delay(plan.pk)
            started += 1
    return started
