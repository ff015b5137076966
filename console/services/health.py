"""The table doctor in the console (issue 28): each table's health, checked at sync time and
stored, and repairs of its findings: requested with the plan the library previews (exactly the
changes it makes), approved by the same rule as a clean (`approval_refusal`: a second admin while
CLEANLINE_APPROVER_MUST_DIFFER), run by a Celery task under the table's lock, re-validated by the
library before its first change. Every step is audited (`repair.requested`, `.approved`,
`.rejected`, `.approval.refused`, `.refused`, `.completed`, `.failed`, `.stale`). The findings,
plans and repairs are the library's (`timeline.doctor`); nothing here decides what is wrong."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.utils import timezone

from console.lake import open_table
from console.models import Table
from console.models_approvals import ApprovalStatus
from console.models_health import OPEN_REPAIR, SEVERITY_RANK, Repair, TableHealth
from console.selectors.health import doctor_settings
from console.services.approvals import (
    approval_approve,
    approval_claim,
    approval_refusal,
    approval_reject,
    approval_requested,
)
from console.services.audit import audit
from console.services.history import snapshot_record
from console.services.locks import table_lock
from console.services.tables import (
    SyncResult,
    fingerprint,
    sync_fingerprint,
    table_services,
    table_sync,
    table_sync_after_change,
)
from timeline import CleanlineError, HudiTable
from timeline.doctor import (
    KINDS,
    LISTING_KINDS,
    TIMELINE_KINDS,
    Change,
    RepairInvalidated,
    RepairPlan,
    plan_index_drop,
    plan_index_rebuild,
)

logger = logging.getLogger(__name__)


def health_check(*, table: Table, force: bool = False, lake: HudiTable | None = None,
                 timeline_print: str = "") -> TableHealth:
    """Diagnose the table (`table.inspect.diagnose`, which only reads) and store its findings,
    worst first, as `cleanline doctor --json` prints them. At sync time (`force` false) the whole
    diagnosis runs again once the last one is CLEANLINE_HEALTH_INTERVAL_SECONDS old; before
    that, an unchanged timeline is not diagnosed, and a changed one only by the checks that read
    the timeline (`TIMELINE_KINDS`), the findings of those that list every file (`LISTING_KINDS`:
    orphans, metadata-table drift, clean lag) kept from the last whole diagnosis, whose time
    `checked_at` stays: a table that commits every few minutes is not listed at every sync.
    `timeline_print`: the sync's own hash of the timeline and config (`sync_fingerprint`), which
    spares loading the whole timeline to hash it here. A table the doctor cannot open is stored
    with why; this never raises for the lake's sake (a sync is not failed by its health check)."""
    current = TableHealth.objects.filter(table=table).first()
    now = timezone.now()
    fresh = (not force and current is not None and not current.error and bool(current.fingerprint)
             and now - current.checked_at < timedelta(seconds=settings.CLEANLINE_HEALTH_INTERVAL_SECONDS))
    kept: list[dict[str, Any]] = []
    try:
        lake = lake or open_table(table.path)
        print_ = timeline_print or fingerprint(lake)
        if fresh and current is not None and current.fingerprint == print_:
            return current
        kinds = TIMELINE_KINDS if fresh else None
        if fresh and current is not None:
            kept = [f for f in current.findings if f.get("kind") in LISTING_KINDS]
        found = [f.to_json() for f in lake.inspect.diagnose(kinds=kinds, settings=doctor_settings(table))]
        findings = sorted([*found, *kept], key=_worst_first) if kept else found
        error = ""
    except Exception as exc:  # the library's refusals name the table; anything else says what it is, logged
        if not isinstance(exc, CleanlineError):
            logger.exception("health check of table %s (%s) failed", table.pk, table.path)
        print_, findings, fresh = "", [], False
        error = (str(exc) if isinstance(exc, CleanlineError) else f"{type(exc).__name__}: {exc}")[:2000]
    worst = max((str(f["severity"]) for f in findings), key=lambda s: SEVERITY_RANK.get(s, 0), default="")
    health, _ = TableHealth.objects.update_or_create(table=table, defaults={
        **({} if fresh else {"checked_at": now}), "fingerprint": print_, "findings": findings, "worst": worst,
        "error": error})
    return health


def table_sync_checked(*, table: Table, full: bool = False) -> SyncResult:
    """A sync run in place of the sync task (the demo lake's build registers and syncs each
    table at once), then what the task does after a sync: the table doctor and a history point,
    so that the table's Health and History are there with it, not after beat's next sync."""
    result = table_sync(table=table, full=full)
    health_check(table=table, timeline_print=sync_fingerprint(table))
    snapshot_record(table=table, changed=result.changed)
    return result


def _worst_first(finding: dict[str, Any]) -> tuple[int, int]:
    """The library's order of findings (`timeline.doctor.diagnose`): worst first, then by kind."""
    kind = str(finding.get("kind"))
    return -SEVERITY_RANK.get(str(finding.get("severity")), 0), KINDS.index(kind) if kind in KINDS else len(KINDS)


def _refused(user: User | None, table: Table, kind: str, reason: str) -> None:
    audit(user=user, action="repair.refused", table=table, parameters={"kind": kind}, result=reason)


def repair_request(*, table: Table, user: User | None, kind: str, index: str = "", action: str = "") -> Repair:
    """Ask for the repair of every finding of `kind`: the library plans it now (exactly the
    changes it makes, with their bytes) and the plan is kept with the request; an admin other
    than the requester (CLEANLINE_APPROVER_MUST_DIFFER) approves exactly that. Refused, and
    audited, when the kind finds nothing or offers no repair Cleanline runs (the reason says who
    must act), or a repair of that kind is already open. With `index` (issue 45): that one index
    partition's `action`, "rebuild" from the data (the plan carries its estimate) or "drop"
    (the plan names the queries that lose it), as `cleanline index rebuild|drop --index`."""
    if Repair.objects.filter(table=table, kind=kind, status__in=OPEN_REPAIR).exists():
        reason = f"A repair of {kind} on {table.name} is already waiting or running."
        _refused(user, table, kind, reason)
        raise ValidationError(reason)
    try:
        if index:
            plan = _index_plan(table, index, action)
        else:
            plan = table_services(table).plan_repair(kind, settings=doctor_settings(table))
    except CleanlineError as exc:
        _refused(user, table, kind, str(exc))
        raise ValidationError(str(exc)) from exc
    if plan.is_empty:
        reason = f"The repair of {kind} on {table.name} changes nothing now."
        _refused(user, table, kind, reason)
        raise ValidationError(reason)
    repair = Repair.objects.create(table=table, kind=kind, plan=plan.to_json(), changes=len(plan.changes),
                                   bytes=plan.bytes, requested_by=user)
    return approval_requested(change=repair, user=user, changes=repair.changes, bytes=repair.bytes)


def _index_plan(table: Table, index: str, action: str) -> RepairPlan:
    """One index partition's rebuild or drop, planned by the library now."""
    lake = open_table(table.path)
    if action == "rebuild":
        return plan_index_rebuild(lake, index, settings=doctor_settings(table))
    if action == "drop":
        return plan_index_drop(lake, index)
    raise CleanlineError(f"unknown index repair {action!r} (rebuild or drop)")


def repair_approval_refusal(user: User | None, repair: Repair) -> str:
    """Why `user` may not approve `repair`, or "": the one workflow's rule."""
    return approval_refusal(user, repair)


def repair_approve(*, repair: Repair, user: User | None, writers_stopped: bool = False, note: str = "") -> Repair:
    """Approve a waiting repair (the one workflow's `approval_approve`: the two-person rule by
    lineage, one conditional claim) and queue its run on commit. `writers_stopped`: the
    approver's word that the table's Hudi writers are stopped (its run then goes on beside a
    live writer when no lock is known)."""
    return approval_approve(change=repair, user=user, writers_stopped=writers_stopped, note=note)


def repair_reject(*, repair: Repair, user: User | None, note: str = "") -> Repair:
    """Refuse a waiting repair (any admin, the requester too; `approval_reject`); audited."""
    return approval_reject(change=repair, user=user, note=note)


def repair_holder(repair: Repair) -> str:
    """What holds the table's lock while the repair runs."""
    return f"repair:{repair.pk}"


def approved_plan(repair: Repair) -> RepairPlan:
    """The plan as it was approved: exactly the changes previewed (the library runs only
    those, and only where it still finds them)."""
    plan: dict[str, Any] = repair.plan
    return RepairPlan(str(plan.get("table", repair.table.path)), repair.kind, (),
                      tuple(Change(str(c["action"]), str(c["target"]), int(c.get("bytes") or 0), str(c.get("detail")
                                                                                                    or ""))
                            for c in plan.get("changes", [])),
                      tuple(str(n) for n in plan.get("notes", [])))


def _finish(repair: Repair, token: str, status: str, action: str, outcome: str, **fields: Any) -> bool:
    """Settle this run's claim; audited. False if the run lost its claim meanwhile."""
    if not Repair.objects.filter(pk=repair.pk, status=ApprovalStatus.RUNNING, run_token=token).update(
            status=status, finished_at=timezone.now(), **fields):
        return False
    audit(user=None, action=action, table=repair.table, parameters={"repair": repair.pk, "kind": repair.kind},
          result=outcome)
    return True


def repair_run(*, repair: Repair, task_id: str = "") -> Repair:
    """Run an approved repair under the table's lock: claimed (APPROVED, or RUNNING again after a
    lost worker: repairs are idempotent) with one conditional update, then the library re-diagnoses
    the kind under the lock its writers share and changes only what the plan previewed and it
    still finds. A table asking for more than the preview makes it STALE with the reason
    (RepairInvalidated); any other refusal or a change that failed, FAILED. Afterwards the table
    is synced and its health checked again. TableBusy when another run holds the table."""
    table = repair.table
    with table_lock(table, repair_holder(repair)) as lease:
        if not approval_claim(change=repair, to=ApprovalStatus.RUNNING,
                              ready=(ApprovalStatus.APPROVED, ApprovalStatus.RUNNING), run_token=lease.token,
                              task_id=task_id or repair.task_id, started_at=timezone.now()):
            repair.refresh_from_db()
            return repair
        try:
            maintenance = table_services(table, writers_stopped=repair.writers_stopped)
            result = maintenance.repair(approved_plan(repair), settings=doctor_settings(table), dry_run=False)
        except RepairInvalidated as exc:
            _finish(repair, lease.token, ApprovalStatus.STALE, "repair.stale", str(exc), error=str(exc)[:2000])
        except CleanlineError as exc:
            _finish(repair, lease.token, ApprovalStatus.FAILED, "repair.failed", str(exc), error=str(exc)[:2000])
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            _finish(repair, lease.token, ApprovalStatus.FAILED, "repair.failed", reason, error=reason[:2000])
            raise
        else:
            summary = (f"{len(result.done)} change(s) made, {len(result.skipped)} skipped, "
                       f"{len(result.failed)} failed")
            if result.ok:
                _finish(repair, lease.token, ApprovalStatus.COMPLETED, "repair.completed", summary,
                        result=result.to_json())
            else:
                why = "; ".join(f"{c.action} {c.target}: {reason}" for c, reason in result.failed[:5])
                _finish(repair, lease.token, ApprovalStatus.FAILED, "repair.failed", f"{summary}: {why}",
                        result=result.to_json(), error=f"{summary}: {why}"[:2000])
    table_sync_after_change(table=table, files=True)  # a repair may delete files: the figures follow at once
    health_check(table=table, force=True)
    repair.refresh_from_db()
    return repair


def repair_gave_up(*, repair: Repair, error: str) -> bool:
    """A task gave up on an approved repair (its table stayed busy, or it failed before the run
    claimed it): FAILED with the reason and audited, unless a run settled it meanwhile."""
    if not Repair.objects.filter(pk=repair.pk, status=ApprovalStatus.APPROVED).update(
            status=ApprovalStatus.FAILED, error=error[:2000], finished_at=timezone.now()):
        return False
    audit(user=None, action="repair.failed", table=repair.table, parameters={"repair": repair.pk, "kind": repair.kind},
          result=error)
    return True
