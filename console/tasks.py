"""Celery tasks, thin (HackSoft style): take an id, claim the row, call a service, record the
result. A task is sent by the service that makes its row (an approved plan's run by the task
that approved it), only once the transaction that asked for it commits and with its id written
on the row first: console/services/queue.py, which also holds the names the tasks are declared
under. Each claims its row with one conditional update, so that a second delivery of it finds
the claim taken or the row settled and does nothing; a task whose worker died is delivered
again (after CLEANLINE_REDELIVERY_SECONDS) and finishes the work. Only a transient condition is
retried: a busy table (TableBusy), with back-off. Any other failure is recorded on the row,
never left live."""

from __future__ import annotations

import logging
from collections.abc import Callable

from celery import Task, shared_task
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Q

from console import permissions, services
from console.models import Archival, CleanPlan, Job, JobStatus, RetentionEstimate, SyncStatus, Table
from console.models_approvals import Approvable, ApprovalStatus
from console.models_compaction import Compaction
from console.models_health import Repair
from console.models_versions import VersionChange, VersionRehearsal
from console.services import approvals, compactions, health, history, versions
from console.services.queue import (
    APPROVE_CLEAN_PLAN,
    BUILD_CLEAN_PLAN,
    CHECK_TABLE_ALERTS,
    ESTIMATE_RETENTION,
    REHEARSE_VERSION_CHANGE,
    RUN_ARCHIVAL,
    RUN_CLEAN_PLAN,
    RUN_COMPACTION,
    RUN_JOB,
    RUN_REPAIR,
    RUN_VERSION_CHANGE,
    SYNC_TABLE,
    enqueue_on_commit,
)
from timeline import CleanlineError

logger = logging.getLogger(__name__)

NOTHING_SYNCED = {"changed": False, "created": 0, "updated": 0, "deleted": 0}


def _reason(exc: BaseException) -> str:
    """The library's errors name what is involved; anything else also says what it is."""
    return str(exc) if isinstance(exc, CleanlineError) else f"{type(exc).__name__}: {exc}"


@shared_task(name=SYNC_TABLE, bind=True, acks_late=True)
def sync_table(self: Task[[int], dict[str, int | bool]], table_id: int) -> dict[str, int | bool]:
    """Mirror one table's timeline into the database; any failure leaves it FAILED with the reason.

    The claim (RUNNING with this task's id) is taken when the table waits for a sync or was
    settled by another sync; this very task finding it RUNNING is its own second delivery after
    its worker died (it syncs again: the sync is an idempotent upsert). A sync another task is
    running, or one this task already settled, is left alone."""
    task_id = self.request.id or ""
    ready = (Q(sync_status__in=(SyncStatus.NEVER, SyncStatus.QUEUED))
             | Q(sync_status__in=(SyncStatus.OK, SyncStatus.FAILED)) & ~Q(sync_task_id=task_id)
             | Q(sync_status=SyncStatus.RUNNING, sync_task_id=task_id))
    table = Table.objects.filter(pk=table_id).first()
    if table is None or not Table.objects.filter(ready, pk=table_id).update(sync_status=SyncStatus.RUNNING,
                                                                             sync_task_id=task_id):
        return dict(NOTHING_SYNCED)
    try:
        result = services.table_sync(table=table)
    except Exception as exc:
        logger.exception("sync of table %s (%s) failed", table_id, table.path)
        services.table_sync_failed(table=table, error=_reason(exc))
        return dict(NOTHING_SYNCED)
    # the table doctor's findings (in full once an interval, the timeline's checks when it changed between)
    health.health_check(table=table, timeline_print=services.sync_fingerprint(table))
    if not result.changed:  # the rows were in sync and the service wrote nothing: the claim ends
        Table.objects.filter(pk=table_id, sync_status=SyncStatus.RUNNING, sync_task_id=task_id).update(
            sync_status=SyncStatus.OK)
    try:  # the history's snapshot, from the Table's fields as the sync left them
        history.snapshot_record(table=table, changed=result.changed)
    except Exception:  # a missing point on a chart must not fail the sync
        logger.exception("history snapshot of table %s failed", table_id)
    return {"changed": result.changed, "created": result.created, "updated": result.updated, "deleted": result.deleted}


@shared_task
def sync_all_tables() -> int:
    """The periodic sync (beat): queue a sync of every registered table."""
    tables = list(Table.objects.only("pk"))
    for table in tables:
        services.table_sync_queue(table=table)
    return len(tables)


@shared_task(name=BUILD_CLEAN_PLAN, bind=True, acks_late=True)
def build_clean_plan(self: Task[[int], str], plan_id: int) -> str:
    """Run the planner for a requested plan; any failure leaves the plan FAILED with the reason.

    The plan is claimed by writing this task's id on it while it is PLANNING and carries no
    other task's id: a copy sent for the plan under another id, or any copy once the plan is
    settled, does nothing; a second delivery of this very task (its worker died) plans again."""
    task_id = self.request.id or ""
    if not CleanPlan.objects.filter(pk=plan_id, status=ApprovalStatus.PLANNING, task_id__in=("", task_id)).update(
            task_id=task_id):
        return "skipped"
    plan = CleanPlan.objects.select_related("table").get(pk=plan_id)
    try:
        services.plan_build(plan=plan)
    except Exception as exc:
        logger.exception("planning clean plan %s failed", plan_id)
        CleanPlan.objects.filter(pk=plan_id, status=ApprovalStatus.PLANNING).update(status=ApprovalStatus.FAILED,
                                                                               error=_reason(exc)[:2000])
        return "failed"
    return "draft"


def _retry_while_busy(task: Task[[int], object], exc: services.TableBusy, what: str) -> None:
    """The one back-off for a busy table: retry `task` after CLEANLINE_BUSY_RETRY_SECONDS,
    doubling up to CLEANLINE_BUSY_RETRY_MAX_SECONDS, CLEANLINE_BUSY_MAX_RETRIES times (raises
    Celery's Retry); returns once the retries are spent, for the caller to give up."""
    retries = task.request.retries
    if retries < settings.CLEANLINE_BUSY_MAX_RETRIES:
        countdown = min(settings.CLEANLINE_BUSY_RETRY_SECONDS * 2**retries, settings.CLEANLINE_BUSY_RETRY_MAX_SECONDS)
        logger.info("%s: %s; retry %d in %.1f s", what, exc.messages[0], retries + 1, countdown)
        raise task.retry(countdown=countdown, max_retries=settings.CLEANLINE_BUSY_MAX_RETRIES) from exc


def _run(task: Task[[int], str], row: CleanPlan | Job | Archival, run: Callable[..., CleanPlan | Job | Archival],
         holder: str) -> str:
    """Call the run service of a plan, job or archival, which claims the row under the table
    lock and stores the task's id on it. A busy table is retried with the one back-off
    (`_retry_while_busy`); once its retries are spent the row fails with the reason, unless
    what holds the table is another live run of this very row (a re-delivered copy of this
    task): that run records the outcome. Any other error is not retried: a row the run had not
    claimed yet fails here with the reason."""
    try:
        return str(run(task_id=task.request.id or "").status)
    except services.TableBusy as exc:
        _retry_while_busy(task, exc, holder)
        if exc.holder == holder:
            return "running elsewhere"
        services.run_gave_up(row=row, error=f"Gave up after {task.request.retries} retries: {exc.messages[0]}")
        return "failed"
    except Exception as exc:  # a run that claimed the row marked it FAILED; one that did not yet, here
        services.run_gave_up(row=row, error=_reason(exc), running=False)
        raise


@shared_task(name=APPROVE_CLEAN_PLAN, bind=True, acks_late=True)
def approve_clean_plan(self: Task[[int], str], plan_id: int) -> str:
    """Re-validate a plan claimed for approval (APPROVING) on the engine that made it, outside
    the request: STALE with the differences, or APPROVED with its clean requested on the
    timeline, then run. A plan no longer being approved is left alone; the approver must still
    be active and allowed to approve (else the claim goes back to DRAFT); a busy table is retried
    with back-off; any failure puts the claim back to DRAFT with the reason, never leaves it
    APPROVING."""
    plan = CleanPlan.objects.select_related("decided_by", "table").filter(pk=plan_id).first()
    if plan is None or plan.status != ApprovalStatus.APPROVING:
        return "nothing to approve"
    approver = plan.decided_by

    def back_to_draft(reason: str) -> None:
        CleanPlan.objects.filter(pk=plan_id, status=ApprovalStatus.APPROVING).update(
            status=ApprovalStatus.DRAFT, decided_by=None, decided_at=None, run_token="", error=reason[:2000])

    if not plan.automatic and (approver is None or not approver.is_active
                               or not approver.has_perm(permissions.APPROVE)):
        back_to_draft("The approver is gone or may no longer approve: approve again.")
        return "refused"
    try:
        plan = services.plan_approve(plan=plan, user=approver)
    except services.TableBusy as exc:
        _retry_while_busy(self, exc, f"approval of plan {plan_id}")
        back_to_draft(f"Approval gave up: {exc.messages[0]}")
        return "busy"
    except ValidationError as exc:  # the approval put the claim back to DRAFT with the reason
        back_to_draft("; ".join(exc.messages))
        return "refused"
    except Exception as exc:
        back_to_draft(_reason(exc))
        raise
    if plan.status == ApprovalStatus.APPROVED:
        enqueue_on_commit(RUN_CLEAN_PLAN, plan)
    return str(plan.status)


@shared_task(name=RUN_CLEAN_PLAN, bind=True, acks_late=True)
def run_clean_plan(self: Task[[int], str], plan_id: int) -> str:
    """Run an approved plan's clean. Re-delivered after a lost worker, it finishes the clean;
    while the table is busy it is retried, then the plan fails with the reason."""
    plan = CleanPlan.objects.filter(pk=plan_id).select_related("table").first()
    if plan is None or plan.status not in (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING):
        return "skipped"
    return _run(self, plan, lambda **claim: services.plan_run(plan=plan, **claim), services.plan_holder(plan))


@shared_task(name=RUN_JOB, bind=True, acks_late=True)
def run_job(self: Task[[int], str], job_id: int) -> str:
    """Run a queued restore, rollback or pending clean; re-delivered after a lost worker, it
    resumes; while the table is busy it is retried, then the job fails with the reason."""
    job = Job.objects.filter(pk=job_id).select_related("table").first()
    if job is None or job.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
        return "skipped"
    return _run(self, job, lambda **claim: services.job_run(job=job, **claim), services.job_holder(job))


def _run_approved(task: Task[[int], str], change: Approvable | None, run: Callable[..., Approvable],
                  gave_up: Callable[[str], bool], holder: str) -> str:
    """Run an approved change whose run claims it under the table's lock (a repair, a version
    change): none left to run is skipped; the approver must still be active and allowed to approve
    (else it fails with the reason); a busy table is retried with the one back-off, then the change
    fails with the reason (unless what holds the table is another live run of this very change);
    any other error fails it here if its run had not claimed it yet."""
    if change is None or change.status not in (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING):
        return "skipped"
    approver = change.decided_by
    if approver is None or not approver.is_active or not approver.has_perm(permissions.APPROVE):
        gave_up("The approver is gone or may no longer approve.")
        return "refused"
    try:
        return str(run(task_id=task.request.id or "").status)
    except services.TableBusy as exc:
        _retry_while_busy(task, exc, holder)
        if exc.holder == holder:
            return "running elsewhere"
        gave_up(f"Gave up after {task.request.retries} retries: {exc.messages[0]}")
        return "failed"
    except Exception as exc:  # a run that claimed it marked it FAILED; one that did not yet, here
        gave_up(_reason(exc))
        raise


@shared_task(name=RUN_REPAIR, bind=True, acks_late=True)
def run_repair(self: Task[[int], str], repair_id: int) -> str:
    """Run an approved repair of the table doctor's findings (console.services.health), as
    `_run_approved` runs every approved change."""
    repair = Repair.objects.filter(pk=repair_id).select_related("table", "decided_by").first()
    if repair is None:
        return "skipped"
    return _run_approved(self, repair, lambda **claim: health.repair_run(repair=repair, **claim),
                         lambda error: health.repair_gave_up(repair=repair, error=error), health.repair_holder(repair))


@shared_task(name=RUN_ARCHIVAL, bind=True, acks_late=True)
def run_archival(self: Task[[int], str], archival_id: int) -> str:
    """Run an approved archival under the table's lock, where the library checks the timeline
    still gives the approved instants (else STALE, nothing written); while the table is busy it
    is retried, then the archival fails with the reason."""
    archival = Archival.objects.filter(pk=archival_id).select_related("table").first()
    if archival is None or archival.status not in (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING):
        return "skipped"
    return _run(self, archival, lambda **claim: services.archival_run(archival=archival, **claim),
                services.archival_holder(archival))


@shared_task(name=ESTIMATE_RETENTION, bind=True, acks_late=True)
def estimate_retention(self: Task[[int], str], estimate_id: int) -> str:
    """Compute a what-if retention estimate (it only reads the table: no lock); a failure
    leaves it FAILED with the reason."""
    estimate = RetentionEstimate.objects.filter(pk=estimate_id).select_related("table").first()
    if estimate is None or estimate.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
        return "skipped"
    try:
        return services.estimate_run(estimate=estimate, task_id=self.request.id or "").status
    except Exception as exc:
        logger.exception("retention estimate %s failed", estimate_id)
        RetentionEstimate.objects.filter(pk=estimate_id, status=JobStatus.RUNNING).update(
            status=JobStatus.FAILED, error=_reason(exc)[:2000])
        return "failed"


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
        if plan is not None and plan.status == ApprovalStatus.APPROVED:
            enqueue_on_commit(RUN_CLEAN_PLAN, plan)
            started += 1
    return started


@shared_task
def expire_approvals() -> int:
    """Changes waiting for approval longer than CLEANLINE_APPROVAL_EXPIRY_DAYS go stale, audited
    (console.services.approvals): how many."""
    return approvals.approvals_expire()


@shared_task
def check_alerts() -> int:
    """The periodic alert check (console.alerts): returns how many alerts fired."""
    from console.alerts import check_alerts as check

    return check()


@shared_task(name=CHECK_TABLE_ALERTS, acks_late=True)
def check_table_alerts(table_id: int) -> int:
    """One table's alert rules checked now (a plan waiting for approval notifies its approvers)."""
    from console.alerts import check_table_now

    return check_table_now(table_id)


@shared_task(name=REHEARSE_VERSION_CHANGE, bind=True, acks_late=True)
def rehearse_version_change(self: Task[[int], str], rehearsal_id: int) -> str:
    """Rehearse a table version change on a copy of the table (console.services.versions): the
    report is kept on the rehearsal; the table is not written."""
    rehearsal = VersionRehearsal.objects.filter(pk=rehearsal_id).select_related("table").first()
    if rehearsal is None:
        return "skipped"
    return str(versions.version_rehearsal_run(rehearsal=rehearsal, task_id=self.request.id or "").status)


@shared_task(name=RUN_VERSION_CHANGE, bind=True, acks_late=True)
def run_version_change(self: Task[[int], str], change_id: int) -> str:
    """Run an approved table version change under the table's lock, after its rehearsal on a copy
    of the table as it is now passes (console.services.versions), as `_run_approved` runs every
    approved change."""
    change = VersionChange.objects.filter(pk=change_id).select_related("table", "decided_by").first()
    if change is None:
        return "skipped"
    return _run_approved(self, change, lambda **claim: versions.version_change_run(change=change, **claim),
                         lambda error: versions.version_change_gave_up(change=change, error=error),
                         versions.version_change_holder(change))


@shared_task(name=RUN_COMPACTION, bind=True, acks_late=True)
def run_compaction(self: Task[[int], str], compaction_id: int) -> str:
    """Run an approved compaction under the table's lock with the library's local engine, once the
    plan made again still compacts the approved file slices (console.services.compactions), as
    `_run_approved` runs every approved change."""
    change = Compaction.objects.filter(pk=compaction_id).select_related("table", "decided_by").first()
    if change is None:
        return "skipped"
    return _run_approved(self, change, lambda **claim: compactions.compaction_run(compaction=change, **claim),
                         lambda error: compactions.compaction_gave_up(compaction=change, error=error),
                         compactions.compaction_holder(change))
