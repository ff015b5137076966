"""Archival: request (the library's plan, kept on the row), approve or decline (the two-person
rule of a clean), run on a worker under the table's lock (`Maintenance.archive(expected=...)`:
the timeline must still give the approved instants, else the archival is STALE and nothing is
written). Every step is audited as a clean's are: `archival.requested`, `archival.approved`,
`archival.approval.refused`, `archival.declined`, `archival.refused`, `archival.completed`,
`archival.stale`, `archival.failed`."""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from console.models import OPEN_ARCHIVAL, Archival, Table
from console.models_approvals import ApprovalStatus
from console.selectors.archival import archival_plan, instant_row, plan_summary
from console.services.approvals import approval_approve, approval_reject, approval_requested
from console.services.audit import audit
from console.services.locks import table_lock
from console.services.runs import _run_claim, _run_stopped
from console.services.tables import table_services, table_sync_after_change
from timeline import CleanlineError
from timeline.archive.archiver import ArchivalInvalidated

logger = logging.getLogger(__name__)


def _stopped(writers_stopped: bool) -> dict[str, bool]:
    return {"writers_stopped": True} if writers_stopped else {}


def _open(table: Table) -> Archival | None:
    return table.archivals.filter(status__in=OPEN_ARCHIVAL).first()


def archival_request(*, table: Table, user: User | None) -> Archival:
    """Ask for an archival of what Hudi's archiver would move now (the library's plan with the
    table's writer options): the row keeps the plan's instants and blockers and waits for an
    admin's approval. One open archival per table: while one waits, is approved or runs, a
    request gets that one back (a double submit makes nothing twice). Refused, and audited
    (`archival.refused`), when the library cannot plan or the plan moves nothing."""
    found = _open(table)
    if found is not None:
        return found
    try:
        plan = archival_plan(table)
        if not plan.archivable:
            first = plan.blockers[0].why if plan.blockers else "the active timeline is within the keep counts"
            raise ValidationError(f"Nothing to archive: archival moves no instant of {table.name} now ({first}).")
    except (CleanlineError, ValidationError) as exc:
        reason = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        audit(user=user, action="archival.refused", table=table, result=reason)
        raise ValidationError(reason) from exc
    summary = plan_summary(plan)
    try:
        with transaction.atomic():
            archival = Archival.objects.create(table=table, requested_by=user, plan=summary,
                                               instants=[instant_row(i) for i in plan.instants])
    except IntegrityError:  # a simultaneous request made the table's open archival first
        found = _open(table)
        if found is None:
            raise
        return found
    return approval_requested(change=archival, user=user, first=archival.expected[0], last=archival.expected[-1],
                              active_before=summary["active"], active_after=summary["active_after"])


def archival_approve(*, archival: Archival, user: User | None, writers_stopped: bool = False,
                     note: str = "") -> Archival:
    """Approve an archival waiting for approval (the one workflow's `approval_approve`: the
    two-person rule by lineage, one conditional claim, a second submit of the same approval
    changing nothing); its run is then queued on commit: a worker archives under the table's
    lock, checking the timeline still gives the approved instants."""
    return approval_approve(change=archival, user=user, writers_stopped=writers_stopped, note=note)


def archival_decline(*, archival: Archival, user: User | None, note: str = "") -> Archival:
    """Decline an archival waiting for approval (any admin, its requester too; the one
    workflow's `approval_reject`, audited `archival.declined`)."""
    return approval_reject(change=archival, user=user, note=note)


def archival_holder(archival: Archival) -> str:
    """What holds the table's lock while the archival runs."""
    return f"archival:{archival.pk}"


def archival_run(*, archival: Archival, task_id: str = "") -> Archival:
    """Run an approved archival under the table's lock (and the Hudi lock its writers share,
    which the library takes): `Maintenance.archive(expected=...)` plans again from the timeline
    read under the lock and archives only if it moves exactly the approved instants; otherwise
    the archival is STALE with the library's reason and nothing is written. A copy of the task
    that finds it settled does nothing; one that took the table over from a dead run tries
    again (a run that died part-way leaves a plan that differs: STALE, request again, and the
    next archival finishes what it began, as Hudi's archiver does). The table is synced after."""
    table = archival.table
    resumed = archival.status == ApprovalStatus.RUNNING
    started = Coalesce("started_at", Value(timezone.now(), output_field=DateTimeField()))
    with table_lock(table, archival_holder(archival)) as lease, _run_claim(
            archival, lease, ready=(ApprovalStatus.APPROVED, ApprovalStatus.RUNNING), failed_action="archival.failed",
            task_id=task_id, started_at=started, error="") as mine:
        if mine is None:
            archival.refresh_from_db()
            return archival
        try:
            maintenance = table_services(table, writers_stopped=archival.writers_stopped)
            lease.check(now=True)  # still this run's table, right before the library takes the Hudi lock
            outcome = maintenance.archive(expected=archival.expected, dry_run=False)
        except ArchivalInvalidated as exc:
            reason = str(exc) + (" (an earlier run of this archival stopped part-way)" if resumed else "")
            completed = False
            if mine.update(status=ApprovalStatus.STALE, stale_reason=reason[:2000], finished_at=timezone.now()):
                audit(user=None, action="archival.stale", table=table, parameters={"archival": archival.pk},
                      result=reason)
            else:
                _run_stopped(archival, "archival.stopped", lease, f"lost the table's lock, then: {exc}")
        except CleanlineError as exc:
            if mine.update(status=ApprovalStatus.FAILED, error=str(exc)[:2000], finished_at=timezone.now()):
                audit(user=None, action="archival.failed", table=table, parameters={"archival": archival.pk},
                      result=str(exc))
            else:
                _run_stopped(archival, "archival.stopped", lease, f"lost the table's lock, then: {exc}")
            archival.refresh_from_db()
            return archival
        else:
            done, mdt = outcome.result, outcome.metadata_table
            result = {"archived": len(done.archived) if done else 0,
                      "metadata_table_archived": len(mdt.archived) if mdt else 0,
                      "already_archived": len(done.already_archived) if done else 0,
                      "written": len(done.written) if done else 0, "deleted": len(done.deleted) if done else 0,
                      "active_before": outcome.plan.active_before, "active_after": outcome.plan.active_after,
                      "lock": [decision.describe() for decision in maintenance.decisions]}
            completed = bool(mine.update(status=ApprovalStatus.COMPLETED, result=result, finished_at=timezone.now()))
            if not completed:
                _run_stopped(archival, "archival.stopped", lease, "lost the table's lock to another run; recorded "
                             "nothing")
    if completed:
        audit(user=None, action="archival.completed", table=table,
              parameters={"archival": archival.pk, "lock": result["lock"], **_stopped(archival.writers_stopped)},
              result=f"{result['archived']} instants archived; the active timeline holds {result['active_after']}")
    archival.refresh_from_db()
    if archival.status in (ApprovalStatus.COMPLETED, ApprovalStatus.STALE):
        table_sync_after_change(table=table, files=False)  # the timeline changed: by this run, or under the plan
    return archival
