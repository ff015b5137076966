"""Compactions (issue 41), a kind of the one approval workflow: request ("Schedule" on the Table
services page: the library's plan, `Maintenance.compact()` as a dry run, kept on a `Compaction`
file group by file group; nothing written; refused, audited `compaction.refused`, when there is
nothing to compact or the library refuses the table's merge), approve or reject
(`console.services.approvals`: the two-person rule by lineage, one claim), and run
(`compaction_run`: under the table's lock the plan is made again and written only if it compacts
exactly the approved file slices, else STALE and nothing written; then the library's local engine
runs it, `Maintenance.run_compaction`). Audited: `compaction.requested`, `.approved`, `.rejected`,
`.refused`, `.completed`, `.stale`, `.failed`."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from console.models import Table
from console.models_approvals import ApprovalStatus
from console.models_compaction import OPEN_COMPACTION, Compaction
from console.services.approvals import approval_claim, approval_finish, approval_gave_up, approval_requested
from console.services.audit import audit
from console.services.locks import table_lock
from console.services.tables import table_services, table_sync_after_change
from timeline import CleanlineError
from timeline.services import CompactionResult, CompactionSchedule

logger = logging.getLogger(__name__)

# The engine a compaction runs on: the library runs a requested compaction of any Hudi table with
# its local engine (pyarrow) only (`Maintenance.run_compaction`); its Spark writer compacts only the
# tables it writes itself.
ENGINE = "local"


def plan_json(plan: CompactionSchedule) -> dict[str, Any]:
    """The plan as the page, the API and the run's check read it: file group by file group."""
    return {"instant": plan.instant.requested_time if plan.instant else None, "bytes": plan.bytes,
            "merge_mode": plan.merge.mode.value, "ordering_field": plan.merge.ordering_field or None,
            "reason": plan.reason, "missing_partitions": list(plan.missing_partitions),
            "operations": [{"partition": op.partition, "file_id": op.file_id,
                            "base_instant_time": op.base_instant_time, "base_file": op.base_file,
                            "base_file_bytes": op.base_file_size, "log_files": list(op.log_files),
                            "log_bytes": op.log_bytes} for op in plan.operations],
            "left_out": [{"partition": p, "file_id": f, "why": why} for (p, f), why in sorted(plan.left_out.items())]}


def slices_of(plan: CompactionSchedule) -> list[list[Any]]:
    """The file slices a plan compacts, as `Compaction.expected` keeps the approved ones."""
    return [[op.partition, op.file_id, op.base_instant_time, list(op.log_files)] for op in plan.operations]


def result_json(result: CompactionResult) -> dict[str, Any]:
    return {"instant": result.instant.requested_time, "completion_time": result.instant.completion_time,
            "rolled_back": result.rolled_back.requested_time if result.rolled_back else None,
            "records": sum(f.records for f in result.new_files), "bytes": sum(f.bytes for f in result.new_files),
            "files": [{"partition": f.partition, "file_id": f.file_id, "path": f.path, "records": f.records,
                       "bytes": f.bytes, "log_files": f.log_files, "log_records": f.log_records}
                      for f in result.new_files]}


def _open(table: Table) -> Compaction | None:
    return table.compactions.filter(status__in=OPEN_COMPACTION).first()


def compaction_request(*, table: Table, user: User | None) -> Compaction:
    """Plan a compaction of `table` as Hudi's scheduler does with its default strategy (the
    library's dry run: nothing written) and keep the plan, waiting for another admin's approval.
    Refused, audited `compaction.refused`, when there is nothing to compact (the library's reason)
    or the library refuses the table's merge. One open compaction per table: while one waits, is
    approved or runs, a request gets that one back."""
    found = _open(table)
    if found is not None:
        return found
    try:
        plan = table_services(table).compact()
        if plan.instant is None:
            raise ValidationError(f"Nothing to compact in {table.name}: {plan.reason}")
    except (CleanlineError, ValidationError) as exc:
        reason = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        audit(user=user, action="compaction.refused", table=table, result=reason)
        raise ValidationError(reason) from exc
    try:
        with transaction.atomic():
            change = Compaction.objects.create(table=table, requested_by=user, plan=plan_json(plan), engine=ENGINE)
    except IntegrityError:  # a simultaneous request made the table's open compaction first
        found = _open(table)
        if found is None:
            raise
        return found
    return approval_requested(change=change, user=user, file_groups=len(plan.operations), bytes=plan.bytes)


def compaction_holder(change: Compaction) -> str:
    """What holds the table's lock while the compaction runs."""
    return f"compaction:{change.pk}"


def _finish(change: Compaction, token: str, status: ApprovalStatus, action: str, outcome: str,
            **fields: Any) -> None:
    approval_finish(change=change, token=token, to=status, what=action.removeprefix("compaction."), outcome=outcome,
                    **fields)


def _changed(table: Table) -> str:
    return (f"{table.name} changed since the compaction was planned: the plan now compacts other file slices; "
            "nothing was written (schedule it again).")


def compaction_run(*, compaction: Compaction, task_id: str = "") -> Compaction:
    """Run an approved compaction under the table's lock: claimed once; the library plans again
    and, only when that plan compacts exactly the approved file slices, writes it
    (`compact(dry_run=False)`, under the Hudi lock its writers share) and runs it with its local
    engine (`run_compaction`: new base files, the metadata table kept exact, the commit). A table
    that changed makes it STALE with nothing written; a refusal or failure of the library, FAILED
    (a run that stopped part-way leaves a requested plan Hudi resumes). TableBusy when another run
    holds the table."""
    table = compaction.table
    with table_lock(table, compaction_holder(compaction)) as lease:
        if not approval_claim(change=compaction, to=ApprovalStatus.RUNNING,
                              ready=(ApprovalStatus.APPROVED, ApprovalStatus.RUNNING), run_token=lease.token,
                              task_id=task_id or compaction.task_id, started_at=timezone.now()):
            compaction.refresh_from_db()
            return compaction
        try:
            maintenance = table_services(table, writers_stopped=compaction.writers_stopped)
            if slices_of(maintenance.compact()) != compaction.expected:
                _finish(compaction, lease.token, ApprovalStatus.STALE, "compaction.stale", _changed(table),
                        error=_changed(table))
            else:
                lease.check(now=True)  # still this run's table, right before the library takes the Hudi lock
                written = maintenance.compact(dry_run=False)
                if written.instant is None or slices_of(written) != compaction.expected:
                    reason = _changed(table) if written.instant is None else (
                        f"{table.name} changed while the plan was written: compaction {written.instant.requested_time} "
                        "of other file slices is requested on the timeline (Hudi's writers or `cleanline compaction "
                        "run` run it); the approved one was not run.")
                    _finish(compaction, lease.token, ApprovalStatus.STALE, "compaction.stale", reason, error=reason)
                else:
                    result = result_json(maintenance.run_compaction(instant=written.instant.requested_time))
                    _finish(compaction, lease.token, ApprovalStatus.COMPLETED, "compaction.completed",
                            f"compaction {result['instant']}: {len(result['files'])} new base files", result=result)
        except CleanlineError as exc:
            _finish(compaction, lease.token, ApprovalStatus.FAILED, "compaction.failed", str(exc),
                    error=str(exc)[:2000])
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            _finish(compaction, lease.token, ApprovalStatus.FAILED, "compaction.failed", reason, error=reason[:2000])
            raise
    compaction.refresh_from_db()
    if compaction.is_completed:
        table_sync_after_change(table=table, files=True)
    return compaction


def compaction_gave_up(*, compaction: Compaction, error: str) -> bool:
    """A task gave up on an approved compaction: the one workflow's `approval_gave_up`."""
    return approval_gave_up(change=compaction, error=error)
