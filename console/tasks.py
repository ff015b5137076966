"""Celery tasks: thin, take an id, claim the row, call a service, record the result. A task
never leaves its row in a live state: any failure is recorded on it."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from console import services
from console.models import CleanPlan, Job, JobStatus, PlanStatus, SyncStatus, Table
from timeline import CleanlineError

logger = logging.getLogger(__name__)


def _reason(exc: BaseException) -> str:
    """The library's errors name what is involved; anything else also says what it is."""
    return str(exc) if isinstance(exc, CleanlineError) else f"{type(exc).__name__}: {exc}"


@shared_task(bind=True, acks_late=True)
def sync_table(self, table_id: int) -> dict[str, int | bool]:  # type: ignore[no-untyped-def]
    """Mirror one table's timeline into the database; any failure leaves it FAILED with the reason."""
    table = Table.objects.filter(pk=table_id).first()
    if table is None:
        return {"changed": False, "created": 0, "updated": 0, "deleted": 0}
    Table.objects.filter(pk=table_id).update(sync_status=SyncStatus.RUNNING, sync_task_id=self.request.id or "")
    try:
        result = services.table_sync(table=table)
    except Exception as exc:
        logger.exception("sync of table %s (%s) failed", table_id, table.path)
        services.table_sync_failed(table=table, error=_reason(exc))
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
    """Queue a sync once the current transaction commits, recording the task id on the row.
    The row says QUEUED before the task is sent: a task that finishes first is not overwritten."""

    def send() -> None:
        Table.objects.filter(pk=table_id).update(sync_status=SyncStatus.QUEUED)
        result = sync_table.delay(table_id)
        Table.objects.filter(pk=table_id, sync_status=SyncStatus.QUEUED).update(sync_task_id=result.id or "")

    transaction.on_commit(send)


@shared_task(bind=True, acks_late=True)
def build_clean_plan(self, plan_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run the planner for a requested plan; any failure leaves the plan FAILED with the reason."""
    plan = CleanPlan.objects.filter(pk=plan_id).select_related("table").first()
    if plan is None or plan.status != PlanStatus.PLANNING:
        return "skipped"
    CleanPlan.objects.filter(pk=plan_id).update(task_id=self.request.id or "")
    try:
        services.plan_build(plan=plan)
    except Exception as exc:
        logger.exception("planning clean plan %s failed", plan_id)
        CleanPlan.objects.filter(pk=plan_id, status=PlanStatus.PLANNING).update(status=PlanStatus.FAILED,
                                                                               error=_reason(exc)[:2000])
        return "failed"
    return "draft"


def _table_busy(task, row: CleanPlan | Job, holder: str, exc: services.TableBusy) -> str:  # type: ignore[no-untyped-def]
    """The row's table is busy: retry with back-off (CLEANLINE_BUSY_RETRY_SECONDS, doubling up
    to CLEANLINE_BUSY_RETRY_MAX_SECONDS, CLEANLINE_BUSY_MAX_RETRIES times). Then the row fails
    with the reason, unless what holds the table is another live run of this very row (a
    re-delivered copy of this task): that run records the outcome."""
    retries = task.request.retries
    if retries < settings.CLEANLINE_BUSY_MAX_RETRIES:
        countdown = min(settings.CLEANLINE_BUSY_RETRY_SECONDS * 2**retries, settings.CLEANLINE_BUSY_RETRY_MAX_SECONDS)
        logger.info("%s: %s; retry %d in %.1f s", holder, exc.messages[0], retries + 1, countdown)
        raise task.retry(countdown=countdown, max_retries=settings.CLEANLINE_BUSY_MAX_RETRIES)
    if exc.holder == holder:
        return "running elsewhere"
    services.run_gave_up(row=row, error=f"Gave up after {retries} retries: {exc.messages[0]}")
    return "failed"


@shared_task(bind=True, acks_late=True)
def run_clean_plan(self, plan_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run an approved plan's clean. Re-delivered after a lost worker, it finishes the clean;
    while the table is busy it is retried, then the plan fails with the reason."""
    plan = CleanPlan.objects.filter(pk=plan_id).select_related("table").first()
    if plan is None or plan.status not in (PlanStatus.APPROVED, PlanStatus.RUNNING):
        return "skipped"
    try:
        return str(services.plan_run(plan=plan, task_id=self.request.id or "").status)
    except services.TableBusy as exc:
        return _table_busy(self, plan, services.plan_holder(plan), exc)
    except Exception as exc:  # a run that claimed the plan marked it FAILED; one that did not yet, here
        services.run_gave_up(row=plan, error=_reason(exc), running=False)
        raise


def enqueue(task: object, *args: object) -> None:
    """Queue a task once the current transaction commits."""
    transaction.on_commit(lambda: task.delay(*args))  # type: ignore[attr-defined]


@shared_task(bind=True, acks_late=True)
def run_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run a queued restore, rollback or pending clean; re-delivered after a lost worker, it
    resumes; while the table is busy it is retried, then the job fails with the reason."""
    job = Job.objects.filter(pk=job_id).select_related("table").first()
    if job is None or job.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
        return "skipped"
    try:
        return str(services.job_run(job=job, task_id=self.request.id or "").status)
    except services.TableBusy as exc:
        return _table_busy(self, job, services.job_holder(job), exc)
    except Exception as exc:  # a run that claimed the job marked it FAILED; one that did not yet, here
        services.run_gave_up(row=job, error=_reason(exc), running=False)
        raise


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
