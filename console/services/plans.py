"""Clean plans: request, build, review (approve, reject), run, automatic mode."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import DateTimeField, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from console.lake import open_stored_plan, open_table
from console.models import CleanPlan, Table
from console.models_approvals import ApprovalStatus
from console.selectors.tables import instant_count
from console.services.approvals import (
    approval_approve,
    approval_claim,
    approval_refusal,
    approval_reject,
    approval_requested,
)
from console.services.audit import audit
from console.services.locks import Lease, LockLost, TableBusy, live_lock, table_lock
from console.services.queue import BUILD_CLEAN_PLAN, check_alerts_on_commit, enqueue_on_commit
from console.services.refusals import Refused
from console.services.runs import _run_claim, _run_stopped
from console.services.tables import table_services, table_sync_after_change
from timeline import (
    CleanConfig,
    CleanlineError,
    CleanRefused,
    CleanResult,
    HudiTable,
    Maintenance,
    PlanInvalidated,
    Progress,
)
from timeline.clean.config import retention_bound_refusal
from timeline.clean.retention import retention_shortfall
from timeline.internal.engine import engine_for, spark_session
from timeline.internal.plan_store import StoredPlan, StoreError, compare_stored
from timeline.mdt.listing import ListingSource
from timeline.mdt.writer import CLEAN_PARTITIONS

logger = logging.getLogger(__name__)


# In a plan's settings: "false" when the requester allowed less retention than the table's own.
ENFORCE_RETENTION = "cleanline.clean.enforce.retention"

def _config(table: Table, overrides: Mapping[str, Any]) -> CleanConfig:
    return CleanConfig.from_properties(table.properties, **{k: v for k, v in overrides.items() if v not in ("", None)})


def plan_request(*, table: Table, user: User | None, overrides: Mapping[str, Any],
                 automatic: bool = False, enqueue: bool = True) -> CleanPlan:
    """Ask for a clean plan with the table's settings and `overrides`; a task, queued on
    commit, builds it. A plan keeping less than the table's own settings is refused (the
    library's retention rule) unless `overrides` has `allow_short_retention`; the plan's
    settings then record it. `enqueue=False`: no task is queued, the caller builds the plan
    itself (`plan_build`: automatic mode, tests)."""
    overrides = dict(overrides)
    allow_short = bool(overrides.pop("allow_short_retention", False))
    listing = _listing(table, str(overrides.pop("listing", "") or "auto"))
    out_of_bounds = retention_bound_refusal(overrides, instants=instant_count(table),
                                           table_props=table.properties)
    if out_of_bounds is not None:
        raise ValidationError(f"Refused: {out_of_bounds}.")
    try:
        config = _config(table, overrides)
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    shortfall = retention_shortfall(table.properties, config)
    if shortfall is not None and not allow_short:
        raise Refused(f"The plan {shortfall}; tick \"allow less retention than the table's settings\" to plan it "
                      "anyway.", api=f'The plan {shortfall}; send "allow_short_retention": true to plan it anyway.')
    settings = config.as_properties()
    if allow_short:
        settings[ENFORCE_RETENTION] = "false"
    plan = CleanPlan.objects.create(table=table, requested_by=user, settings=settings,
                                    policy=config.policy.value, automatic=automatic, listing=listing)
    approval_requested(change=plan, user=user, **plan.settings, listing=listing)
    if enqueue:
        enqueue_on_commit(BUILD_CLEAN_PLAN, plan)
    return plan


def _listing(table: Table, listing: str) -> str:
    """Where the planner lists the table from (issue 29): auto (the metadata table when it is
    valid, storage otherwise: Hudi's choice), metadata or storage; metadata is refused for a table
    without a metadata table to list it through."""
    try:
        wanted = ListingSource(listing)
    except ValueError as exc:
        raise ValidationError(f"Unknown listing {listing!r}: choose auto, metadata or storage.") from exc
    if wanted is ListingSource.METADATA and not table.metadata_table_enabled:
        raise ValidationError(f"{table.name} has no metadata table to list it through: choose auto or storage.")
    return wanted.value


def plans_request(*, tables: list[Table], user: User | None) -> tuple[list[CleanPlan], list[str]]:
    """A clean plan of each of `tables` with its own settings (the catalog's bulk action, one
    confirmation), each as `plan_request` makes it (audited, built by a worker); a table whose
    plan is refused is named with the reason, the others are planned."""
    plans, refusals = [], []
    for table in tables:
        try:
            plans.append(plan_request(table=table, user=user, overrides={}))
        except ValidationError as exc:
            refusals.append(f"{table.name}: {'; '.join(exc.messages)}")
    return plans, refusals


def plan_build(*, plan: CleanPlan) -> CleanPlan:
    """Run the library's planner into the plan's folder of the plan store (the engine writes
    the file decisions there as Parquet) and keep its totals and per-partition sums as a
    DRAFT. When the library refuses (a retention below the table's settings, a corrupt
    timeline, ...) the plan is FAILED with its reason and audited; other errors propagate."""
    table = plan.table
    folder = plan_folder(plan)
    try:
        lake = open_table(table.path)
        config = CleanConfig.from_properties(plan.settings)
        engine = "spark" if _on_spark(table) else "local"
        stored = _make_plan(table, lake, config, _enforced(plan), folder, engine, plan.listing)
    except CleanlineError as exc:
        CleanPlan.objects.filter(pk=plan.pk, status=ApprovalStatus.PLANNING).update(
            status=ApprovalStatus.FAILED, error=str(exc)[:2000], finished_at=timezone.now())
        audit(user=None, action="clean.plan.failed", table=table, parameters={"plan": plan.pk}, result=str(exc))
        plan.refresh_from_db()
        return plan
    plan_store(plan=plan, stored=stored, warnings=_warnings(lake))
    CleanPlan.objects.filter(pk=plan.pk).update(engine=engine, listing_used=stored.listing)
    plan.refresh_from_db()
    audit(user=None, action="clean.plan.built", table=table, parameters={"plan": plan.pk, "engine": engine},
          result=f"{plan.files_to_delete} files ({plan.bytes_to_delete} bytes) to delete")
    if not plan.automatic and not plan.deletes_nothing:  # it waits for an admin: tell the approvers
        check_alerts_on_commit(table)
    return plan


def plan_folder(plan: CleanPlan, suffix: str = "") -> str:
    """The plan's folder in the plan store (CLEANLINE_PLAN_STORE)."""
    return f"{settings.CLEANLINE_PLAN_STORE.rstrip('/')}/table-{plan.table_id}/plan-{plan.pk}{suffix}"


def plan_store(*, plan: CleanPlan, stored: StoredPlan, warnings: list[str]) -> None:
    """Keep a stored plan's totals and per-partition sums on the plan (its files stay in the store)."""
    ectr = stored.earliest_instant_to_retain
    with_deletes = [s for s in stored.sums if s.deletes]
    CleanPlan.objects.filter(pk=plan.pk).update(
        status=ApprovalStatus.DRAFT, store=stored.uri, earliest_retained=ectr.requested_time if ectr else "",
        last_completed_commit=stored.last_completed_commit, incremental=stored.incremental,
        files_to_delete=stored.files_to_delete, bytes_to_delete=stored.bytes_to_delete,
        files_kept=stored.files_kept, partitions_with_deletes=len(with_deletes),
        partitions_to_delete=list(stored.partitions_to_delete), notes=list(stored.notes), warnings=warnings,
        partition_summary=[{"partition": s.partition, "files": s.deletes, "bytes": s.bytes_to_delete, "reclaimed": 0,
                            "failed": 0} for s in with_deletes])


def _on_spark(table: Table) -> bool:
    """Large tables are planned and cleaned by PySpark jobs; small ones in the worker (the
    library's choice, `timeline.internal.engine.engine_for`, with the console's threshold)."""
    return engine_for(table.total_files, settings.CLEANLINE_SPARK_MIN_FILES) == "spark"


def _spark() -> Any:
    return spark_session(master=settings.SPARK_MASTER)


def _maintenance(table: Table, lake: HudiTable, *, writers_stopped: bool = False) -> Maintenance:
    """The table's services on the engine its size calls for."""
    return table_services(table, lake, spark=_spark() if _on_spark(table) else None, writers_stopped=writers_stopped)


def _enforced(plan: CleanPlan) -> bool:
    """Whether the plan's retention must meet the table's settings (the default)."""
    return bool(plan.settings.get(ENFORCE_RETENTION, "true") != "false")


def _make_plan(table: Table, lake: HudiTable, config: CleanConfig, enforce_retention: bool, folder: str,
               engine: str | None = None, listing: str = "auto") -> StoredPlan:
    """The planner on `engine` ("local" or "spark"; by default the one the table's size calls
    for), listing the table from `listing` (the plan's choice), writing the plan's files into the
    plan store at `folder`."""
    on_spark = _on_spark(table) if engine is None else engine == "spark"
    services = table_services(table, lake, spark=_spark() if on_spark else None)
    return services.plan_clean_stored(config, folder, enforce_retention=enforce_retention, listing=listing)


def _run_clean(table: Table, lake: HudiTable, instant: str, progress: Any, stored: StoredPlan | None, *,
               writers_stopped: bool = False) -> Any:
    """Run the clean; the local engine takes the files' sizes from the plan's store (a status
    call per file spared), Spark's executors read them as they delete."""
    services = _maintenance(table, lake, writers_stopped=writers_stopped)
    sizes = stored.sizes() if stored is not None and services.spark is None else None
    return services.run_cleans(instant=instant, progress=progress, sizes=sizes)


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
    """Reject a draft plan (the one workflow's `approval_reject`)."""
    return approval_reject(change=plan, user=user, note=note)


def plan_holder(plan: CleanPlan) -> str:
    """What holds the table's lock while the plan's clean runs."""
    return f"clean-plan:{plan.pk}"


def _check_approvable(plan: CleanPlan, user: User | None) -> None:
    """The worker's check before it writes the clean: the plan is still a draft (or claimed for
    approval) and the one workflow would let `user` approve it (`approvals.approval_refusal`,
    the two-person rule's refusal audited)."""
    if plan.status not in (ApprovalStatus.DRAFT, ApprovalStatus.APPROVING):
        raise ValidationError(f"Only a draft plan can be approved; this one is {plan.status}.")
    refusal = approval_refusal(user, plan)
    if refusal:
        if not plan.deletes_nothing:
            audit(user=user, action="clean.plan.approval.refused", table=plan.table, parameters={"plan": plan.pk},
                  result=refusal)
        raise ValidationError(refusal)


def plan_approval_request(*, plan: CleanPlan, user: User | None, writers_stopped: bool = False,
                          note: str = "") -> CleanPlan:
    """An approval, as the pages and the API ask for it (the one workflow's `approval_approve`):
    the draft is claimed for this approver (DRAFT to APPROVING, one conditional update: of
    simultaneous approvals exactly one wins) and audited; then the approval task is queued on
    commit, which re-validates the plan on the engine that made it (`plan_approve`) outside the
    request.
    `writers_stopped`: the approver's word that the table's Hudi writers are stopped, recorded on
    the plan (its approval and run then go on beside a live writer when no lock is known)."""
    return approval_approve(change=plan, user=user, writers_stopped=writers_stopped, note=note)


def plan_approve(*, plan: CleanPlan, user: User | None, writers_stopped: bool = False) -> CleanPlan:
    """Re-validate the draft against the current timeline; if any file it would delete is
    now protected, or the policy now gives another plan, it becomes STALE with the
    difference. Otherwise the requested clean is written to the timeline (APPROVED).

    Exactly one approval wins: under the table lock the plan is claimed (DRAFT to APPROVING)
    by one conditional update before anything is written to the lake; the others get a
    ValidationError. A failure puts the claim back to DRAFT with the error. The plan is
    re-made on the engine that made it (`CleanPlan.engine`). `writers_stopped` as in
    `plan_approval_request` (a plan claimed by such a request keeps what it said)."""
    _check_approvable(plan, user)
    draft = CleanPlan.objects.filter(pk=plan.pk, status=ApprovalStatus.DRAFT)
    if writers_stopped and draft.update(writers_stopped=True):
        plan.writers_stopped = True
    holder = f"clean-plan-approval:{plan.pk}"
    try:
        with table_lock(plan.table, holder) as lease:
            return _approve_claimed(plan, user, lease)
    except TableBusy as exc:
        if exc.holder == holder:
            raise TableBusy(f"Plan #{plan.pk} is already being approved by someone else.", holder=holder) from exc
        raise


def _approve_claimed(plan: CleanPlan, user: User | None, lease: Lease) -> CleanPlan:
    """The approval itself; the plan re-made for the check is dropped from the store after."""
    try:
        return _approve_checked(plan, user, lease)
    finally:
        StoredPlan.remove(plan_folder(plan, "-check"))


def _approve_checked(plan: CleanPlan, user: User | None, lease: Lease) -> CleanPlan:
    table = plan.table
    # Under the table lock, a plan still APPROVING was claimed by an approval that died.
    if not approval_claim(change=plan, to=ApprovalStatus.APPROVING,
                          ready=(ApprovalStatus.DRAFT, ApprovalStatus.APPROVING), run_token=lease.token,
                          decided_by=user, decided_at=timezone.now(), error=""):
        plan.refresh_from_db()
        raise ValidationError(f"Only a draft plan can be approved; this one is {plan.status}.")
    claim = CleanPlan.objects.filter(pk=plan.pk, status=ApprovalStatus.APPROVING, run_token=lease.token)
    plan.refresh_from_db()
    if plan.clean_instant:  # an approval that died after recording its clean's time
        adopted = _adopt_recorded_clean(plan, user, claim)
        if adopted is not None:
            return adopted
    try:
        lake = open_table(table.path)
        config = CleanConfig.from_properties(plan.settings)
        stored = open_stored_plan(plan.store)
        now_plan = _make_plan(table, lake, config, _enforced(plan), plan_folder(plan, "-check"), plan.engine or None,
                              plan.listing_used or "storage")  # listed as the plan was
        reasons = compare_stored(stored, now_plan)
        if reasons:
            claim.update(status=ApprovalStatus.STALE, stale_reasons=reasons[:200], run_token="")
            audit(user=user, action="clean.plan.stale", table=table, parameters={"plan": plan.pk},
                  result=f"{len(reasons)} differences")
            plan.refresh_from_db()
            return plan
        lease.check(now=True)  # still this approval's table, immediately before the first write
        try:
            # the clean's time is on the row before its file is on the timeline: an approval
            # that dies in between is found again and adopted by the next delivery
            scheduler = table_services(table, lake, writers_stopped=plan.writers_stopped)
            instant = scheduler.schedule_clean(
                now_plan.to_clean_plan(), config, force=True,
                before_write=lambda time_: _record_clean_time(claim, time_))
        except PlanInvalidated as exc:  # the timeline re-read under the table's Hudi lock
            claim.update(status=ApprovalStatus.STALE, stale_reasons=exc.reasons[:200], run_token="")
            audit(user=user, action="clean.plan.stale", table=table, parameters={"plan": plan.pk},
                  result=f"{len(exc.reasons)} differences under the table lock")
            plan.refresh_from_db()
            return plan
        if instant is None:  # the timeline changed so that nothing is left to clean
            raise CleanRefused(f"{table.name}: the plan now deletes nothing; no clean was scheduled")
    except Exception as exc:
        expected = isinstance(exc, (CleanlineError, LockLost))
        message = str(exc) if expected else f"{type(exc).__name__}: {exc}"
        claim.update(status=ApprovalStatus.DRAFT, run_token="", decided_by=None, decided_at=None, error=message[:2000])
        if not expected:
            logger.exception("approval of clean plan %s failed", plan.pk)
            raise
        raise ValidationError(message) from exc
    if not claim.update(status=ApprovalStatus.APPROVED, clean_instant=instant.requested_time,
                        progress_total=plan.files_to_delete, run_token=""):
        logger.error("clean plan %s: clean %s was requested but the approval lost its claim", plan.pk,
                     instant.requested_time)
        raise ValidationError(f"Clean {instant.requested_time} was requested on the timeline but this approval lost "
                              "its claim on the plan; run the pending clean from the table's overview.")
    audit(user=user, action="clean.plan.approved", table=table,
          parameters={"plan": plan.pk, "clean": instant.requested_time,
                      "metadata_table_updated": lake.config.metadata_table_enabled,
                      "lock": [decision.describe() for decision in scheduler.decisions],
                      **({"writers_stopped": True} if plan.writers_stopped else {})})
    plan.refresh_from_db()
    return plan


def _record_clean_time(claim: Any, requested_time: str) -> None:
    if not claim.update(clean_instant=requested_time):
        raise LockLost("the approval lost its claim on the plan before writing its clean")


def _adopt_recorded_clean(plan: CleanPlan, user: User | None, claim: Any) -> CleanPlan | None:
    """A redelivered approval whose first delivery recorded its clean's time: if that clean is
    on the timeline, the first delivery wrote it and died before the plan said APPROVED, so the
    plan is approved with it (a second clean is never requested); if it is not, the write never
    happened and the approval starts again (None)."""
    lake = open_table(plan.table.path)
    written = next((i for i in lake.timeline.cleans() if i.requested_time == plan.clean_instant), None)
    if written is None:
        claim.update(clean_instant="")
        return None
    if not claim.update(status=ApprovalStatus.APPROVED, progress_total=plan.files_to_delete, run_token=""):
        raise ValidationError("This approval lost its claim on the plan.")
    audit(user=user, action="clean.plan.approved", table=plan.table,
          parameters={"plan": plan.pk, "clean": plan.clean_instant, "adopted": True,
                      "metadata_table_updated": lake.config.metadata_table_enabled})
    plan.refresh_from_db()
    return plan


def plan_run(*, plan: CleanPlan, task_id: str = "") -> CleanPlan:
    """Run an approved plan's clean under the table lock, with progress on the row. The run
    claims the plan first: a copy that finds it already settled does nothing; one that took
    the table over from a dead run finishes the same clean (the library resumes it); one that
    lost the table to another run (it stopped heartbeating) stops and records nothing."""
    if plan.status not in (ApprovalStatus.APPROVED, ApprovalStatus.RUNNING):
        raise ValidationError(f"Only an approved plan runs; this one is {plan.status}.")
    table = plan.table
    started = Coalesce("started_at", Value(timezone.now(), output_field=DateTimeField()))
    with table_lock(table, plan_holder(plan)) as lease, _run_claim(
            plan, lease, ready=(ApprovalStatus.APPROVED, ApprovalStatus.RUNNING), failed_action="clean.run.failed",
            task_id=task_id, started_at=started, error="") as mine:
        if mine is None:
            plan.refresh_from_db()
            return plan
        stored = _readable_store(plan)
        last = [0.0]

        def progress(p: Progress) -> None:
            lease.check(now=p.files_done == p.files_total)  # before the completed clean is written
            if time.monotonic() - last[0] > 0.5 or p.files_done == p.files_total:
                last[0] = time.monotonic()
                mine.update(progress_done=p.files_done, progress_total=p.files_total, progress_bytes=p.bytes_deleted)

        try:
            result, bytes_deleted = _clean_of_plan(table, plan, progress, stored)
            lease.check(now=True)
        except LockLost as exc:
            _run_stopped(plan, "clean.run.stopped", lease, str(exc))
            plan.refresh_from_db()
            return plan
        except (CleanlineError, ValueError) as exc:
            if not lease.owned():
                _run_stopped(plan, "clean.run.stopped", lease, f"lost the table's lock, then: {exc}")
            elif mine.update(status=ApprovalStatus.FAILED, error=str(exc), finished_at=timezone.now()):
                audit(user=None, action="clean.run.failed", table=table, parameters={"plan": plan.pk}, result=str(exc))
            plan.refresh_from_db()
            return plan
        sums = stored.write_outcomes(result.outcomes) if stored is not None else {}
        if bytes_deleted is None:
            bytes_deleted = sum(deleted for deleted, _, _ in sums.values())
        mine.update(partition_summary=_partition_summary(plan, sums))
        completed = mine.update(status=ApprovalStatus.COMPLETED, finished_at=timezone.now(),
                                progress_done=plan.files_to_delete, progress_bytes=bytes_deleted)
    if not completed:
        _run_stopped(plan, "clean.run.stopped", lease, "lost the table's lock to another run; recorded nothing more")
    else:
        audit(user=None, action="clean.run.completed", table=table,
              parameters={"plan": plan.pk, "clean": plan.clean_instant},
              result=f"{result.deleted} deleted, {result.already_gone} already gone, {result.failed} failed")
        table_sync_after_change(table=table, files=True)  # the dashboard shows the clean at once (issue 30)
    plan.refresh_from_db()
    return plan


def _readable_store(plan: CleanPlan) -> StoredPlan | None:
    """The plan's store for sizes and outcomes; None when it cannot be read (a plan made before
    plan stores, a store removed by hand). The clean is on the timeline already and runs all
    the same: sizes then come from listings, and the report from the completed clean."""
    try:
        return open_stored_plan(plan.store) if plan.store else None
    except StoreError as exc:
        logger.warning("plan %s: its plan store cannot be read (%s); running its clean without it", plan.pk, exc)
        return None


def _clean_of_plan(table: Table, plan: CleanPlan, progress: Any,
                   stored: StoredPlan | None) -> tuple[CleanResult, int | None]:
    """Run the plan's pending clean; if an earlier run already completed it on the timeline
    (and died before recording so), its metadata is the result (bytes then come from the
    plan's rows: None)."""
    lake = open_table(table.path)
    done = next((i for i in lake.timeline.cleans().completed() if i.requested_time == plan.clean_instant), None)
    if done is not None:
        return CleanResult.from_report(done, lake.inspect.clean_report(done)), None
    (result,) = _run_clean(table, lake, plan.clean_instant, progress, stored, writers_stopped=plan.writers_stopped)
    return result, result.bytes_deleted


def auto_clean(*, table: Table) -> CleanPlan | None:
    """Automatic mode: plan with the table's settings; a plan within the table's thresholds
    is approved automatically (and recorded so), a larger one waits for an admin. One clean
    at a time: nothing is planned while a plan of the table is open or the table is busy."""
    open_states = (ApprovalStatus.PLANNING, ApprovalStatus.DRAFT, ApprovalStatus.APPROVING, ApprovalStatus.APPROVED,
                   ApprovalStatus.RUNNING)
    if table.clean_plans.filter(status__in=open_states).exists() or live_lock(table) is not None:
        return None
    plan = plan_build(plan=plan_request(table=table, user=None, overrides={}, automatic=True, enqueue=False))
    if plan.status != ApprovalStatus.DRAFT:  # the library refused it: FAILED with the reason
        return plan
    if plan.deletes_nothing:
        CleanPlan.objects.filter(pk=plan.pk).update(status=ApprovalStatus.REJECTED, decision_note="nothing to clean")
        plan.refresh_from_db()
        return plan
    if plan.files_to_delete <= table.auto_max_files and plan.bytes_to_delete <= table.auto_max_bytes:
        plan = plan_approve(plan=plan, user=None)
        if plan.status == ApprovalStatus.APPROVED:
            audit(user=None, action="clean.plan.auto-approved", table=table,
                  parameters={"plan": plan.pk, "files": plan.files_to_delete, "bytes": plan.bytes_to_delete})
    else:  # over the table's thresholds: it waits for an admin
        check_alerts_on_commit(table)
    return plan


def _partition_summary(plan: CleanPlan, sums: Mapping[str, tuple[int, int, int]]) -> list[dict[str, Any]]:
    """Per partition: files and bytes planned, bytes reclaimed (deleted or already gone) and
    files failed, from the run's outcomes."""
    summary = []
    for row in plan.partition_summary:
        deleted, gone, failed = sums.get(row["partition"], (0, 0, 0))
        summary.append(dict(row, reclaimed=deleted + gone, failed=failed))
    return summary
