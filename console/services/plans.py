"""Clean plans: request, build, review (approve, reject), run, automatic mode."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Count, DateTimeField, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from console.models import (
    CleanPlan,
    PlanFile,
    PlanStatus,
    Table,
)
from console.services.audit import audit
from console.services.locks import Lease, LockLost, TableBusy, live_lock, table_lock
from console.services.runs import _run_claim, _run_stopped
from console.services.tables import table_services
from timeline import (
    CLEAN_PARTITIONS,
    CleanConfig,
    CleanlineError,
    CleanRefused,
    CleanResult,
    FileStatus,
    HudiTable,
    Maintenance,
    PlanInvalidated,
    Progress,
    engine_for,
    retention_shortfall,
    spark_session,
)
from timeline import CleanPlan as LakePlan

logger = logging.getLogger(__name__)


# In a plan's settings: "false" when the requester allowed less retention than the table's own.
ENFORCE_RETENTION = "cleanline.clean.enforce.retention"

def _config(table: Table, overrides: Mapping[str, Any]) -> CleanConfig:
    return CleanConfig.from_properties(table.properties, **{k: v for k, v in overrides.items() if v not in ("", None)})


def plan_request(*, table: Table, user: User | None, overrides: Mapping[str, Any],
                 automatic: bool = False) -> CleanPlan:
    """Ask for a clean plan with the table's settings and `overrides`; a task builds it. A
    plan keeping less than the table's own settings is refused (the library's retention rule)
    unless `overrides` has `allow_short_retention`; the plan's settings then record it."""
    overrides = dict(overrides)
    allow_short = bool(overrides.pop("allow_short_retention", False))
    try:
        config = _config(table, overrides)
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    shortfall = retention_shortfall(table.properties, config)
    if shortfall is not None and not allow_short:
        raise ValidationError(f"The plan {shortfall}; tick \"allow less retention than the table's settings\" "
                              "to plan it anyway.")
    settings = config.as_properties()
    if allow_short:
        settings[ENFORCE_RETENTION] = "false"
    plan = CleanPlan.objects.create(table=table, requested_by=user, settings=settings,
                                    policy=config.policy.value, automatic=automatic)
    audit(user=user, action="clean.plan.requested", table=table, parameters=plan.settings)
    return plan


def plan_build(*, plan: CleanPlan) -> CleanPlan:
    """Run the library's planner and store the plan file by file as a DRAFT. When the library
    refuses (a retention below the table's settings, a corrupt timeline, ...) the plan is
    FAILED with its reason and audited; other errors propagate."""
    table = plan.table
    try:
        lake = HudiTable.open(table.path)
        config = CleanConfig.from_properties(plan.settings)
        engine = "spark" if _on_spark(table) else "local"
        result = _make_plan(table, lake, config, _enforced(plan), engine)
    except CleanlineError as exc:
        CleanPlan.objects.filter(pk=plan.pk, status=PlanStatus.PLANNING).update(
            status=PlanStatus.FAILED, error=str(exc)[:2000], finished_at=timezone.now())
        audit(user=None, action="clean.plan.failed", table=table, parameters={"plan": plan.pk}, result=str(exc))
        plan.refresh_from_db()
        return plan
    plan_store(plan=plan, result=result, warnings=_warnings(lake))
    CleanPlan.objects.filter(pk=plan.pk).update(engine=engine)
    plan.refresh_from_db()
    audit(user=None, action="clean.plan.built", table=table, parameters={"plan": plan.pk, "engine": engine},
          result=f"{plan.files_to_delete} files ({plan.bytes_to_delete} bytes) to delete")
    return plan


def plan_store(*, plan: CleanPlan, result: LakePlan, warnings: list[str]) -> None:
    """Store a planner's result: one row per file (in batches), totals and per-partition sums."""
    PlanFile.objects.filter(plan=plan).delete()
    decisions = result.decisions
    for start in range(0, len(decisions), PLAN_BATCH):
        PlanFile.objects.bulk_create([
            PlanFile(plan=plan, partition=d.partition, file_name=d.file_name, path=d.path, size=d.size,
                     delete=d.delete, reason=d.reason[:512], file_id=d.file_id, base_instant=d.base_instant_time)
            for d in decisions[start:start + PLAN_BATCH]], batch_size=PLAN_BATCH)
    doomed = result.files_to_delete
    per_partition: dict[str, list[int]] = {}
    for d in doomed:
        totals = per_partition.setdefault(d.partition, [0, 0])
        totals[0] += 1
        totals[1] += d.size
    ectr = result.earliest_instant_to_retain
    CleanPlan.objects.filter(pk=plan.pk).update(
        status=PlanStatus.DRAFT, earliest_retained=ectr.requested_time if ectr else "",
        last_completed_commit=result.last_completed_commit, incremental=result.incremental,
        files_to_delete=len(doomed), bytes_to_delete=result.bytes_to_delete,
        files_kept=len(decisions) - len(doomed), partitions_with_deletes=len(per_partition),
        partitions_to_delete=list(result.partitions_to_delete), notes=list(result.notes), warnings=warnings,
        partition_summary=[{"partition": p, "files": f, "bytes": b, "reclaimed": 0, "failed": 0}
                           for p, (f, b) in sorted(per_partition.items())])


PLAN_BATCH = 5000


def _on_spark(table: Table) -> bool:
    """Large tables are planned and cleaned by PySpark jobs; small ones in the worker (the
    library's choice, `timeline.engine_for`, with the console's threshold)."""
    return engine_for(table.total_files, settings.CLEANLINE_SPARK_MIN_FILES) == "spark"


def _spark() -> Any:
    return spark_session(master=settings.SPARK_MASTER)


def _maintenance(table: Table, lake: HudiTable) -> Maintenance:
    """The table's services on the engine its size calls for."""
    return table_services(table, lake, spark=_spark() if _on_spark(table) else None)


def _enforced(plan: CleanPlan) -> bool:
    """Whether the plan's retention must meet the table's settings (the default)."""
    return plan.settings.get(ENFORCE_RETENTION, "true") != "false"


def _make_plan(table: Table, lake: HudiTable, config: CleanConfig, enforce_retention: bool,
               engine: str | None = None) -> LakePlan:
    """The planner on `engine` ("local" or "spark"; by default the one the table's size calls for)."""
    on_spark = _on_spark(table) if engine is None else engine == "spark"
    services = table_services(table, lake, spark=_spark() if on_spark else None)
    return services.plan_clean(config, enforce_retention=enforce_retention)


def _run_clean(table: Table, lake: HudiTable, instant: str, progress: Any, sizes: Mapping[str, int]) -> Any:
    return _maintenance(table, lake).run_cleans(instant=instant, progress=progress, sizes=sizes)


def _warnings(lake: HudiTable) -> list[str]:
    warnings = []
    timeline = lake.timeline
    if timeline.savepoints().completed():
        times = ", ".join(i.requested_time for i in timeline.savepoints().completed())
        warnings.append(f"savepoints {times} protect their files")
    if timeline.pending_compactions() or timeline.pending_log_compactions():
        warnings.append("pending compactions protect the slices they read")
    if lake.config.metadata_table_enabled:
        updated = [p for p in CLEAN_PARTITIONS if p in lake.config.metadata_partitions]
        warnings.append(f"the metadata table's {', '.join(updated)} partition(s) are updated with the clean (a "
                        "deltacommit at the clean's time, written before the clean completes)")
    return warnings


def plan_reject(*, plan: CleanPlan, user: User | None, note: str = "") -> CleanPlan:
    if plan.status != PlanStatus.DRAFT:
        raise ValidationError(f"Only a draft plan can be rejected; this one is {plan.status}.")
    if not CleanPlan.objects.filter(pk=plan.pk, status=PlanStatus.DRAFT).update(
            status=PlanStatus.REJECTED, decided_by=user, decided_at=timezone.now(), decision_note=note):
        plan.refresh_from_db()  # an approval claimed it meanwhile
        raise ValidationError(f"Only a draft plan can be rejected; this one is {plan.status}.")
    audit(user=user, action="clean.plan.rejected", table=plan.table, parameters={"plan": plan.pk, "note": note})
    plan.refresh_from_db()
    return plan


def plan_holder(plan: CleanPlan) -> str:
    """What holds the table's lock while the plan's clean runs."""
    return f"clean-plan:{plan.pk}"


def _check_approvable(plan: CleanPlan, user: User | None) -> None:
    if plan.status not in (PlanStatus.DRAFT, PlanStatus.APPROVING):
        raise ValidationError(f"Only a draft plan can be approved; this one is {plan.status}.")
    if plan.files_to_delete == 0 and not plan.partitions_to_delete:
        raise ValidationError("Nothing to clean: this plan deletes no file, so there is nothing to approve "
                              "(Hudi schedules no clean for it either).")
    if (settings.CLEANLINE_APPROVER_MUST_DIFFER and not plan.automatic and user is not None
            and plan.requested_by_id == user.pk):
        raise ValidationError("The approver must differ from the requester (CLEANLINE_APPROVER_MUST_DIFFER).")


def plan_approval_request(*, plan: CleanPlan, user: User | None) -> CleanPlan:
    """An approval, as the pages and the API ask for it: the same checks as `plan_approve`,
    then the draft is claimed for this approver (DRAFT to APPROVING, one conditional update: of
    simultaneous approvals exactly one wins) and audited; the caller queues the approval task,
    which re-validates the plan on the engine that made it (`plan_approve`) outside the request."""
    _check_approvable(plan, user)
    if plan.status != PlanStatus.DRAFT or not CleanPlan.objects.filter(pk=plan.pk, status=PlanStatus.DRAFT).update(
            status=PlanStatus.APPROVING, decided_by=user, decided_at=timezone.now(), run_token="", error=""):
        plan.refresh_from_db()
        raise ValidationError(f"Plan #{plan.pk} is already being approved (it is {plan.status}).")
    audit(user=user, action="clean.plan.approval.requested", table=plan.table, parameters={"plan": plan.pk})
    plan.refresh_from_db()
    return plan


def plan_approve(*, plan: CleanPlan, user: User | None) -> CleanPlan:
    """Re-validate the draft against the current timeline; if any file it would delete is
    now protected, or the policy now gives another plan, it becomes STALE with the
    difference. Otherwise the requested clean is written to the timeline (APPROVED).

    Exactly one approval wins: under the table lock the plan is claimed (DRAFT to APPROVING)
    by one conditional update before anything is written to the lake; the others get a
    ValidationError. A failure puts the claim back to DRAFT with the error. The plan is
    re-made on the engine that made it (`CleanPlan.engine`)."""
    _check_approvable(plan, user)
    holder = f"clean-plan-approval:{plan.pk}"
    try:
        with table_lock(plan.table, holder) as lease:
            return _approve_claimed(plan, user, lease)
    except TableBusy as exc:
        if exc.holder == holder:
            raise TableBusy(f"Plan #{plan.pk} is already being approved by someone else.", holder=holder) from exc
        raise


def _approve_claimed(plan: CleanPlan, user: User | None, lease: Lease) -> CleanPlan:
    table = plan.table
    # Under the table lock, a plan still APPROVING was claimed by an approval that died.
    if not CleanPlan.objects.filter(pk=plan.pk, status__in=(PlanStatus.DRAFT, PlanStatus.APPROVING)).update(
            status=PlanStatus.APPROVING, run_token=lease.token, decided_by=user, decided_at=timezone.now(), error=""):
        plan.refresh_from_db()
        raise ValidationError(f"Only a draft plan can be approved; this one is {plan.status}.")
    claim = CleanPlan.objects.filter(pk=plan.pk, status=PlanStatus.APPROVING, run_token=lease.token)
    try:
        lake = HudiTable.open(table.path)
        config = CleanConfig.from_properties(plan.settings)
        now_plan = _make_plan(table, lake, config, _enforced(plan), plan.engine or None)
        reasons = _differences(plan, now_plan)
        if reasons:
            claim.update(status=PlanStatus.STALE, stale_reasons=reasons[:200], run_token="")
            audit(user=user, action="clean.plan.stale", table=table, parameters={"plan": plan.pk},
                  result=f"{len(reasons)} differences")
            plan.refresh_from_db()
            return plan
        lease.check(now=True)  # still this approval's table, immediately before the first write
        try:
            instant = table_services(table, lake).schedule_clean(now_plan, config, force=True)
        except PlanInvalidated as exc:  # the timeline re-read under the table's Hudi lock
            claim.update(status=PlanStatus.STALE, stale_reasons=exc.reasons[:200], run_token="")
            audit(user=user, action="clean.plan.stale", table=table, parameters={"plan": plan.pk},
                  result=f"{len(exc.reasons)} differences under the table lock")
            plan.refresh_from_db()
            return plan
        if instant is None:  # the timeline changed so that nothing is left to clean
            raise CleanRefused(f"{table.name}: the plan now deletes nothing; no clean was scheduled")
    except Exception as exc:
        expected = isinstance(exc, (CleanlineError, LockLost))
        message = str(exc) if expected else f"{type(exc).__name__}: {exc}"
        claim.update(status=PlanStatus.DRAFT, run_token="", decided_by=None, decided_at=None, error=message[:2000])
        if not expected:
            logger.exception("approval of clean plan %s failed", plan.pk)
            raise
        raise ValidationError(message) from exc
    if not claim.update(status=PlanStatus.APPROVED, clean_instant=instant.requested_time,
                        progress_total=plan.files_to_delete, run_token=""):
        logger.error("clean plan %s: clean %s was requested but the approval lost its claim", plan.pk,
                     instant.requested_time)
        raise ValidationError(f"Clean {instant.requested_time} was requested on the timeline but this approval lost "
                              "its claim on the plan; run the pending clean from the table's overview.")
    audit(user=user, action="clean.plan.approved", table=table,
          parameters={"plan": plan.pk, "clean": instant.requested_time,
                      "metadata_table_updated": lake.config.metadata_table_enabled})
    plan.refresh_from_db()
    return plan


def _differences(plan: CleanPlan, now_plan: LakePlan) -> list[str]:
    """Why a stored plan is no longer what the planner gives, file by file."""
    stored = dict(plan.files.filter(delete=True).values_list("path", "reason"))
    now = {d.path: d for d in now_plan.decisions}
    reasons = [f"{path}: now kept ({now[path].reason})" if path in now and not now[path].delete
               else f"{path}: no longer in the table's listing" for path in stored
               if path not in now or not now[path].delete]
    reasons += [f"{d.path}: would now also be deleted ({d.reason})" for d in now_plan.files_to_delete
                if d.path not in stored]
    return reasons


def plan_run(*, plan: CleanPlan, task_id: str = "") -> CleanPlan:
    """Run an approved plan's clean under the table lock, with progress on the row. The run
    claims the plan first: a copy that finds it already settled does nothing; one that took
    the table over from a dead run finishes the same clean (the library resumes it); one that
    lost the table to another run (it stopped heartbeating) stops and records nothing."""
    if plan.status not in (PlanStatus.APPROVED, PlanStatus.RUNNING):
        raise ValidationError(f"Only an approved plan runs; this one is {plan.status}.")
    table = plan.table
    started = Coalesce("started_at", Value(timezone.now(), output_field=DateTimeField()))
    with table_lock(table, plan_holder(plan)) as lease, _run_claim(
            plan, lease, ready=(PlanStatus.APPROVED, PlanStatus.RUNNING), failed_action="clean.run.failed",
            task_id=task_id, started_at=started, error="") as mine:
        if mine is None:
            plan.refresh_from_db()
            return plan
        sizes = dict(plan.files.filter(delete=True).values_list("path", "size"))
        last = [0.0]

        def progress(p: Progress) -> None:
            lease.check(now=p.files_done == p.files_total)  # before the completed clean is written
            if time.monotonic() - last[0] > 0.5 or p.files_done == p.files_total:
                last[0] = time.monotonic()
                mine.update(progress_done=p.files_done, progress_total=p.files_total, progress_bytes=p.bytes_deleted)

        try:
            result, bytes_deleted = _clean_of_plan(table, plan, progress, sizes)
            lease.check(now=True)
        except LockLost as exc:
            _run_stopped(plan, "clean.run.stopped", lease, str(exc))
            plan.refresh_from_db()
            return plan
        except (CleanlineError, ValueError) as exc:
            if not lease.owned():
                _run_stopped(plan, "clean.run.stopped", lease, f"lost the table's lock, then: {exc}")
            elif mine.update(status=PlanStatus.FAILED, error=str(exc), finished_at=timezone.now()):
                audit(user=None, action="clean.run.failed", table=table, parameters={"plan": plan.pk}, result=str(exc))
            plan.refresh_from_db()
            return plan
        _record_outcomes(plan, result)
        if bytes_deleted is None:
            bytes_deleted = plan.files.filter(delete=True, outcome=PlanFile.Outcome.DELETED).aggregate(
                total=Sum("size"))["total"] or 0
        mine.update(partition_summary=_partition_summary(plan))
        completed = mine.update(status=PlanStatus.COMPLETED, finished_at=timezone.now(),
                                progress_done=plan.files_to_delete, progress_bytes=bytes_deleted)
    if not completed:
        _run_stopped(plan, "clean.run.stopped", lease, "lost the table's lock to another run; recorded nothing more")
    else:
        audit(user=None, action="clean.run.completed", table=table,
              parameters={"plan": plan.pk, "clean": plan.clean_instant},
              result=f"{result.deleted} deleted, {result.already_gone} already gone, {result.failed} failed")
    plan.refresh_from_db()
    return plan


def _clean_of_plan(table: Table, plan: CleanPlan, progress: Any,
                   sizes: Mapping[str, int]) -> tuple[CleanResult, int | None]:
    """Run the plan's pending clean; if an earlier run already completed it on the timeline
    (and died before recording so), its metadata is the result (bytes then come from the
    plan's rows: None)."""
    lake = HudiTable.open(table.path)
    done = next((i for i in lake.timeline.cleans().completed() if i.requested_time == plan.clean_instant), None)
    if done is not None:
        return CleanResult.from_report(done, lake.inspect.clean_report(done)), None
    (result,) = _run_clean(table, lake, plan.clean_instant, progress, sizes)
    return result, result.bytes_deleted


_OUTCOMES = {FileStatus.DELETED: PlanFile.Outcome.DELETED, FileStatus.GONE: PlanFile.Outcome.GONE,
             FileStatus.FAILED: PlanFile.Outcome.FAILED}


def _record_outcomes(plan: CleanPlan, result: CleanResult) -> None:
    """Each planned file's outcome: deleted by this clean, already gone, or failed."""
    names: dict[tuple[FileStatus, str], list[str]] = {}
    for o in result.outcomes:
        if not o.is_bootstrap:
            names.setdefault((o.status, o.partition), []).append(o.file_name)
    for (status, partition), found in names.items():
        for start in range(0, len(found), PLAN_BATCH):
            plan.files.filter(delete=True, partition=partition,
                              file_name__in=found[start:start + PLAN_BATCH]).update(outcome=_OUTCOMES[status])


def auto_clean(*, table: Table) -> CleanPlan | None:
    """Automatic mode: plan with the table's settings; a plan within the table's thresholds
    is approved automatically (and recorded so), a larger one waits for an admin. One clean
    at a time: nothing is planned while a plan of the table is open or the table is busy."""
    open_states = (PlanStatus.PLANNING, PlanStatus.DRAFT, PlanStatus.APPROVING, PlanStatus.APPROVED,
                   PlanStatus.RUNNING)
    if table.clean_plans.filter(status__in=open_states).exists() or live_lock(table) is not None:
        return None
    plan = plan_build(plan=plan_request(table=table, user=None, overrides={}, automatic=True))
    if plan.status != PlanStatus.DRAFT:  # the library refused it: FAILED with the reason
        return plan
    if plan.files_to_delete == 0 and not plan.partitions_to_delete:
        CleanPlan.objects.filter(pk=plan.pk).update(status=PlanStatus.REJECTED, decision_note="nothing to clean")
        plan.refresh_from_db()
        return plan
    if plan.files_to_delete <= table.auto_max_files and plan.bytes_to_delete <= table.auto_max_bytes:
        plan = plan_approve(plan=plan, user=None)
        if plan.status == PlanStatus.APPROVED:
            audit(user=None, action="clean.plan.auto-approved", table=table,
                  parameters={"plan": plan.pk, "files": plan.files_to_delete, "bytes": plan.bytes_to_delete})
    return plan


def _partition_summary(plan: CleanPlan) -> list[dict[str, Any]]:
    """Per partition: files and bytes planned, bytes reclaimed and files failed (after a run)."""
    return [dict(row, reclaimed=row["reclaimed"] or 0) for row in plan.files.filter(delete=True).values(
        "partition").annotate(files=Count("id"), bytes=Sum("size"),
                              reclaimed=Sum("size", filter=Q(outcome__in=("deleted", "gone"))),
                              failed=Count("id", filter=Q(outcome="failed"))).order_by("partition")]
