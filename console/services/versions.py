"""Table version changes (issue 42), a kind of the one approval workflow: rehearse (a worker runs
the library's `Maintenance.rehearse_version_change` on a copy of the table and the report is
kept), request (the preflight's plan and the passing rehearsal it rests on kept on a
`VersionChange`; refused, audited `version.refused`, while the preflight names a blocker or no
rehearsal of this very move passed), approve or reject (`console.services.approvals`: the
two-person rule by lineage, one claim), and run (`version_change_run`: under the table's lock the
change is rehearsed again on a copy of the table as it is now, and only a passing rehearsal lets
`Maintenance.change_version(dry_run=False)` change the table). Audited: `version.rehearsal.requested`,
`version.rehearsed`, `version.requested`, `version.approved`, `version.rejected`,
`version.completed`, `version.stale`, `version.failed`."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from console.lake import open_table
from console.models import Table
from console.models_approvals import ApprovalStatus
from console.models_versions import RehearsalStatus, VersionChange, VersionRehearsal
from console.selectors.versions import open_version_change, passing_rehearsal, plan_json, rehearsal_json
from console.services.approvals import approval_claim, approval_finish, approval_gave_up, approval_requested
from console.services.audit import audit
from console.services.locks import table_lock
from console.services.queue import REHEARSE_VERSION_CHANGE, enqueue_on_commit
from console.services.tables import table_services, table_sync_after_change
from timeline import CleanlineError
from timeline.versions import VERSIONS, VersionChangeRefused

logger = logging.getLogger(__name__)


def _target(table: Table, target: int) -> int:
    """The table's version now, once `target` is one Cleanline moves tables to and not it."""
    if target not in VERSIONS:
        raise ValidationError(f"Table version {target} is not one Cleanline moves tables to "
                              f"({', '.join(map(str, VERSIONS))}).")
    try:
        current = open_table(table.path).version
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    if current == target:
        raise ValidationError(f"{table.name} is at table version {target} already: nothing to change.")
    return current


def version_rehearsal_request(*, table: Table, user: User | None, target: int) -> VersionRehearsal:
    """Ask a worker to rehearse moving `table` to `target` (writes nothing to the table); audited
    `version.rehearsal.requested`. While a rehearsal of the same move is queued or running, that
    one is answered (a double submit rehearses once)."""
    current = _target(table, target)
    found = table.version_rehearsals.filter(from_version=current, target=target,
                                            status__in=(RehearsalStatus.QUEUED, RehearsalStatus.RUNNING)).first()
    if found is not None:
        return found
    rehearsal = VersionRehearsal.objects.create(table=table, from_version=current, target=target, requested_by=user)
    audit(user=user, action="version.rehearsal.requested", table=table,
          parameters={"rehearsal": rehearsal.pk, "from": current, "to": target})
    enqueue_on_commit(REHEARSE_VERSION_CHANGE, rehearsal)
    return rehearsal


def version_rehearsal_run(*, rehearsal: VersionRehearsal, task_id: str = "") -> VersionRehearsal:
    """Run a queued rehearsal (claimed once: a second delivery finds it taken and does nothing):
    the library's rehearsal on a copy of the table, its report kept; PASSED or FAILED, audited
    `version.rehearsed`."""
    if not VersionRehearsal.objects.filter(pk=rehearsal.pk, status=RehearsalStatus.QUEUED).update(
            status=RehearsalStatus.RUNNING, task_id=task_id or rehearsal.task_id):
        rehearsal.refresh_from_db()
        return rehearsal
    table = rehearsal.table
    try:
        report = table_services(table).rehearse_version_change(rehearsal.target)
    except CleanlineError as exc:
        fields: dict[str, Any] = {"status": RehearsalStatus.FAILED, "error": str(exc)[:2000]}
        outcome = str(exc)
    else:
        fields = {"status": RehearsalStatus.PASSED if report.passed else RehearsalStatus.FAILED,
                  "report": rehearsal_json(report)}
        outcome = "passed" if report.passed else "failed: " + "; ".join(
            [*report.refused, *report.timeline_differences, *report.fsview_differences][:5])
    VersionRehearsal.objects.filter(pk=rehearsal.pk).update(finished_at=timezone.now(), **fields)
    audit(user=None, action="version.rehearsed", table=table,
          parameters={"rehearsal": rehearsal.pk, "from": rehearsal.from_version, "to": rehearsal.target},
          result=outcome)
    rehearsal.refresh_from_db()
    return rehearsal


def version_change_request(*, table: Table, user: User | None, target: int) -> VersionChange:
    """Ask for moving `table` to `target`: the library's plan (a dry run: the preflight and the
    steps) is kept with the newest passing rehearsal of this very move, and the change waits for
    another admin's approval. Refused, audited `version.refused`, while the preflight names a
    blocker, or when no rehearsal of the move passed. One open version change per table: while
    one waits, is approved or runs, a request gets that one back."""
    found = open_version_change(table)
    if found is not None:
        return found
    try:
        current = _target(table, target)
        plan = table_services(table).change_version(target)
        if plan.refused:
            raise ValidationError(f"Moving {table.name} to table version {target} is refused now: "
                                  + "; ".join(plan.refused))
        rehearsal = passing_rehearsal(table, current, target)
        if rehearsal is None:
            raise ValidationError(f"No rehearsal of moving {table.name} from table version {current} to {target} "
                                  "passed: rehearse it first.")
    except (CleanlineError, ValidationError) as exc:
        reason = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        audit(user=user, action="version.refused", table=table, parameters={"to": target}, result=reason)
        raise ValidationError(reason) from exc
    try:
        with transaction.atomic():
            change = VersionChange.objects.create(table=table, requested_by=user, from_version=current, target=target,
                                                  plan=plan_json(plan), rehearsal=rehearsal)
    except IntegrityError:  # a simultaneous request made the table's open change first
        found = open_version_change(table)
        if found is None:
            raise
        return found
    return approval_requested(change=change, user=user, to=target, rehearsal=rehearsal.pk, **{"from": current})


def version_change_holder(change: VersionChange) -> str:
    """What holds the table's lock while the change runs."""
    return f"version-change:{change.pk}"


def _finish(change: VersionChange, token: str, status: ApprovalStatus, action: str, outcome: str,
            **fields: Any) -> None:
    approval_finish(change=change, token=token, to=status, what=action.removeprefix("version."), outcome=outcome,
                    **fields)


def version_change_run(*, change: VersionChange, task_id: str = "") -> VersionChange:
    """Run an approved version change under the table's lock: claimed once (APPROVED, or RUNNING
    again after a lost worker: the library finishes an interrupted change first); the table must
    still be at the version it was requested from (else STALE); the change is rehearsed again on
    a copy of the table as it is now, and only a passing rehearsal lets the library change the
    table (`change_version(dry_run=False)`, one Hudi step at a time). A rehearsal that fails, or a
    blocker the preflight now names, leaves the table as it was (FAILED or STALE, with the
    report). TableBusy when another run holds the table."""
    table = change.table
    with table_lock(table, version_change_holder(change)) as lease:
        if not approval_claim(change=change, to=ApprovalStatus.RUNNING,
                              ready=(ApprovalStatus.APPROVED, ApprovalStatus.RUNNING), run_token=lease.token,
                              task_id=task_id or change.task_id, started_at=timezone.now()):
            change.refresh_from_db()
            return change
        result: dict[str, Any] = {}
        try:
            maintenance = table_services(table, writers_stopped=change.writers_stopped)
            now = open_table(table.path).version
            if now != change.from_version:
                reason = (f"{table.name} is at table version {now} now, not {change.from_version} as requested: "
                          "request the change again.")
                _finish(change, lease.token, ApprovalStatus.STALE, "version.stale", reason, error=reason)
            else:
                report = maintenance.rehearse_version_change(change.target)
                result["rehearsal"] = rehearsal_json(report)
                if not report.passed:
                    reason = ("The rehearsal on a copy of the table as it is now failed; the table was not changed: "
                              + "; ".join([*report.refused, *report.timeline_differences,
                                           *report.fsview_differences][:5] or ["see the rehearsal's report"]))
                    _finish(change, lease.token, ApprovalStatus.FAILED, "version.failed", reason, result=result,
                            error=reason[:2000])
                else:
                    lease.check(now=True)  # still this run's table, right before the library takes the Hudi lock
                    done = maintenance.change_version(change.target, dry_run=False)
                    result["plan"] = plan_json(done)
                    _finish(change, lease.token, ApprovalStatus.COMPLETED, "version.completed",
                            f"moved from table version {done.current} to {done.target}", result=result)
        except VersionChangeRefused as exc:
            _finish(change, lease.token, ApprovalStatus.STALE, "version.stale", str(exc), result=result,
                    error=str(exc)[:2000])
        except CleanlineError as exc:
            _finish(change, lease.token, ApprovalStatus.FAILED, "version.failed", str(exc), result=result,
                    error=str(exc)[:2000])
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            _finish(change, lease.token, ApprovalStatus.FAILED, "version.failed", reason, result=result,
                    error=reason[:2000])
            raise
    change.refresh_from_db()
    if change.is_completed:
        table_sync_after_change(table=table, files=False)
    return change


def version_change_gave_up(*, change: VersionChange, error: str) -> bool:
    """A task gave up on an approved change: the one workflow's `approval_gave_up`."""
    return approval_gave_up(change=change, error=error)
