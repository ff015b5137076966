"""Claiming a plan, job or archival for one run, and giving up on it, shared by plans,
operations and archivals. A clean plan or an archival is an approvable change: its claim and its
giving up go through the one workflow's conditional update (`approvals.approval_claim`), as a
repair's run does; a restore or rollback job (not approvable) is claimed the same way on its own
model."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from console.models import Archival, CleanPlan, Job, JobStatus
from console.models_approvals import Approvable, ApprovalStatus
from console.services.approvals import approval_claim
from console.services.audit import audit
from console.services.locks import Lease

logger = logging.getLogger(__name__)


Run = CleanPlan | Job | Archival


def _kind(row: Run) -> str:
    return "plan" if isinstance(row, CleanPlan) else "archival" if isinstance(row, Archival) else "job"


def _claim(row: Run, to: str, ready: tuple[str, ...], **fields: Any) -> bool:
    """Move `row` from one of the `ready` states to `to` by one conditional update, with `fields`
    (of simultaneous claims exactly one is True): an approvable change through the one workflow's
    `approval_claim`, a job on its own model."""
    if isinstance(row, Approvable):
        return approval_claim(change=row, to=ApprovalStatus(to), ready=tuple(ApprovalStatus(s) for s in ready),
                              **fields)
    return bool(Job.objects.filter(pk=row.pk, status__in=ready).update(status=JobStatus(to), **fields))


@contextmanager
def _run_claim(row: Run, lease: Lease, *, ready: tuple[str, ...], failed_action: str,
               **fields: Any) -> Iterator[QuerySet[Any] | None]:
    """Claim a plan, job or archival for this run (status RUNNING with the run's lock token) by one
    conditional update, under the table lock. Yields the row's queryset, through which only
    this run's updates land, or None when an earlier run settled it (COMPLETED, FAILED): then
    there is nothing to do. An unexpected error marks the row FAILED with the reason (never
    left RUNNING) and is raised again."""
    model = type(row)
    if not _claim(row, "running", ready, run_token=lease.token, **fields):
        yield None
        return
    mine = model.objects.filter(pk=row.pk, status="running", run_token=lease.token)
    try:
        yield mine
    except Exception as exc:
        logger.exception("%s %s failed", model.__name__, row.pk)
        error = f"{type(exc).__name__}: {exc}"
        if mine.update(status="failed", error=error[:2000], finished_at=timezone.now()):
            audit(user=None, action=failed_action, table=row.table, parameters={_kind(row): row.pk},
                  result=error)
        raise


def _run_stopped(row: Run, action: str, lease: Lease, reason: str) -> None:
    """This run lost the table to another (its lock expired): it records nothing more."""
    logger.warning("%s %s: %s", type(row).__name__, row.pk, reason)
    audit(user=None, action=action, table=row.table, parameters={_kind(row): row.pk, "token": lease.token},
          result=reason)


def run_gave_up(*, row: Run, error: str, running: bool = True) -> bool:
    """A task gave up on a plan, job or archival (its table stayed busy, or it failed before
    claiming it): the row fails with the reason and an audit event, unless a run settled it
    meanwhile (or, with `running` false, a run claimed it). False if nothing changed."""
    ready: tuple[ApprovalStatus | JobStatus | ApprovalStatus, ...]
    if isinstance(row, CleanPlan):
        ready, action = (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING), "clean.run.failed"
    elif isinstance(row, Archival):
        ready, action = (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING), "archival.failed"
    else:
        ready, action = (JobStatus.QUEUED, JobStatus.RUNNING), f"{row.kind}.failed"
    ready = ready if running else ready[:1]
    if not _claim(row, "failed", ready, error=error[:2000], finished_at=timezone.now()):
        return False
    audit(user=None, action=action, table=row.table, parameters={_kind(row): row.pk}, result=error)
    return True
