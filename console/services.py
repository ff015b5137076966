"""Writes: registering and syncing tables. Lake rules stay in `timeline/`; this module only
mirrors what the library reads into the database."""

from __future__ import annotations

import hashlib
from collections import Counter
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from console.models import (
    AuditEvent, CleanPlan, Instant, Job, JobStatus, PlanFile, PlanStatus, SyncStatus, Table, TableLock,
)
from timeline.clean.config import CleanConfig
from timeline.clean.executor import Progress, run_pending_cleans, schedule_clean
from timeline.clean.planner import CleanPlan as LakePlan
from timeline.clean.planner import plan_clean
from timeline.archive import load_archived_timeline
from timeline.exceptions import CleanlineError
from timeline.fsview import FileSystemView
from timeline.instant import Instant as LakeInstant
from timeline.restore import restore
from timeline.rollback import rollback
from timeline.savepoint import create_savepoint, delete_savepoint
from timeline.storage import storage_for
from timeline.table import HudiTable


def _normalised(path: str) -> str:
    storage, base = storage_for(path)
    return storage.uri(base)


def is_allowed(path: str) -> bool:
    """Whether `path` lies under one of CLEANLINE_ALLOWED_ROOTS (compared as URIs)."""
    uri = _normalised(path).rstrip("/") + "/"
    return any(uri.startswith(_normalised(root).rstrip("/") + "/") for root in settings.CLEANLINE_ALLOWED_ROOTS)


def table_register(*, path: str, user: User | None) -> Table:
    """Register the table at `path`. Refused, with nothing written, when the path is outside
    the allowed roots, already registered, not a Hudi table, or unreadable."""
    path = path.strip()
    if not path:
        raise ValidationError("Give the table's base path.")
    if not is_allowed(path):
        roots = ", ".join(settings.CLEANLINE_ALLOWED_ROOTS)
        raise ValidationError(f"{path} is outside the allowed roots ({roots}); see CLEANLINE_ALLOWED_ROOTS.")
    try:
        lake = HudiTable.open(path)
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    if Table.objects.filter(path=lake.uri).exists():
        raise ValidationError(f"{lake.uri} is already registered.")
    table = Table.objects.create(path=lake.uri, registered_by=user, **_table_fields(lake))
    return table


def _table_fields(lake: HudiTable) -> dict[str, Any]:
    config = lake.config
    return {
        "name": config.name, "table_type": config.table_type.value, "table_version": config.version,
        "layout_version": config.layout_version, "partition_fields": list(config.partition_fields),
        "properties": dict(config.props), "metadata_table_enabled": config.metadata_table_enabled,
    }


@dataclass(frozen=True, slots=True)
class SyncResult:
    changed: bool
    created: int
    updated: int
    deleted: int


def fingerprint(lake: HudiTable) -> str:
    """A hash of the active timeline's listing (names, sizes, modification times) and of the
    table config: equal fingerprints mean nothing to sync."""
    digest = hashlib.sha256()
    for (requested, action), states in sorted(lake.timeline.state_files.items()):
        for state, status in sorted(states.items()):
            digest.update(f"{requested}|{action}|{state}|{status.size}|{status.mtime_ms}\n".encode())
    digest.update(repr(sorted(lake.config.props.items())).encode())
    return digest.hexdigest()


def summary(lake: HudiTable, instant: LakeInstant) -> dict[str, int]:
    """Partitions, files, records and bytes an instant's metadata reports."""
    if not instant.is_completed:
        return {}
    content = lake.read_instant(instant) or {}
    if "partitionToWriteStats" in content:
        stats = [s for group in (content.get("partitionToWriteStats") or {}).values() for s in group or ()]
        return {"partitions": len(content.get("partitionToWriteStats") or {}), "files": len(stats),
                "records": sum(s.get("numWrites") or 0 for s in stats),
                "bytes": sum(s.get("totalWriteBytes") or 0 for s in stats)}
    if "totalFilesDeleted" in content:
        return {"partitions": len(content.get("partitionMetadata") or {}), "files": content["totalFilesDeleted"]}
    if "savepointedBy" in content:
        meta = content.get("partitionMetadata") or {}
        return {"partitions": len(meta), "files": sum(len(m.get("savepointDataFile") or ()) for m in meta.values())}
    return {}


def _rows(lake: HudiTable, instants: Iterable[LakeInstant], archived: bool,
          known: Mapping[tuple[str, str], tuple[str, str, bool]]) -> Iterable[tuple[tuple[str, str], dict[str, Any]]]:
    for instant in instants:
        key = (instant.requested_time, instant.action)
        values = (instant.completion_time or "", instant.state.name, archived)
        if known.get(key) == values:
            continue
        yield key, {"completion_time": values[0], "state": values[1], "archived": archived,
                    **({} if archived else summary(lake, instant))}


def table_sync(*, table: Table) -> SyncResult:
    """Make the table's rows equal to the lake: an idempotent upsert keyed by (table,
    requested time, action), rows of instants no longer there removed. An unchanged table
    costs one timeline listing and no writes."""
    lake = HudiTable.open(table.path)
    print_ = fingerprint(lake)
    if print_ == table.timeline_fingerprint and table.sync_status == SyncStatus.OK:
        return SyncResult(False, 0, 0, 0)
    known = {(r[0], r[1]): (r[2], r[3], r[4]) for r in table.instants.values_list(
        "requested_time", "action", "completion_time", "state", "archived")}
    archived = load_archived_timeline(lake) if _has_archive(lake) else ()
    active_keys = {(i.requested_time, i.action) for i in lake.timeline}
    changes = dict(_rows(lake, (i for i in archived if (i.requested_time, i.action) not in active_keys), True, known))
    changes.update(_rows(lake, lake.timeline, False, known))
    present = active_keys | {(i.requested_time, i.action) for i in archived}
    listing = lake.list_partitions()
    sizes = [s.size for files in listing.partitions.values() for s in files]
    layout = _layout_summary(lake.file_system_view(listing=listing))
    stale = [key for key in known if key not in present]
    created = [key for key in changes if key not in known]
    with transaction.atomic():
        if stale:
            for time, action in stale:
                table.instants.filter(requested_time=time, action=action).delete()
        rows = [Instant(table=table, requested_time=t, action=a, **v) for (t, a), v in changes.items()]
        Instant.objects.bulk_create(
            rows, batch_size=2000, update_conflicts=True, unique_fields=["table", "requested_time", "action"],
            update_fields=["completion_time", "state", "archived", "partitions", "files", "records", "bytes"])
        Table.objects.filter(pk=table.pk).update(
            timeline_fingerprint=print_, sync_status=SyncStatus.OK, sync_error="", synced_at=timezone.now(),
            total_bytes=sum(sizes), total_files=len(sizes), layout_summary=layout, **_table_fields(lake))
    table.refresh_from_db()
    return SyncResult(True, len(created), len(changes) - len(created), len(stale))


def _layout_summary(view: FileSystemView) -> dict[str, Any]:
    """For the overview's charts, from the sync's listing: bytes of committed slices per
    partition (largest 30) and how many file groups have how many versions."""
    per_partition: Counter[str] = Counter()
    versions: Counter[int] = Counter()
    for group in view.all_file_groups():
        versions[len(group.slices)] += 1
        for piece in group.slices:
            per_partition[group.partition or "(none)"] += piece.size
    return {"bytes_per_partition": per_partition.most_common(30), "versions": sorted(versions.items())}


def _has_archive(lake: HudiTable) -> bool:
    return lake.storage.exists(lake.path(lake.config.archive_folder))


def table_sync_failed(*, table: Table, error: str) -> None:
    Table.objects.filter(pk=table.pk).update(sync_status=SyncStatus.FAILED, sync_error=error[:2000])




# Audit and locks

def audit(*, user: User | None, action: str, table: Table | None = None,
          parameters: Mapping[str, Any] | None = None, result: str = "") -> AuditEvent:
    """Append one event to the audit log."""
    return AuditEvent.objects.create(user=user, username=user.get_username() if user else "system", action=action,
                                     table=table, parameters=dict(parameters or {}), result=result)


class TableBusy(ValidationError):
    """Another mutating job holds the table."""


@contextmanager
def table_lock(table: Table, holder: str) -> Iterator[None]:
    """Hold the table's lock for `holder` (re-entrant for the same holder, e.g. a re-delivered
    task); anyone else gets TableBusy with who holds it."""
    try:
        with transaction.atomic():
            lock, created = TableLock.objects.get_or_create(table=table, defaults={"holder": holder})
    except IntegrityError:
        lock, created = TableLock.objects.get(table=table), False
    if not created and lock.holder != holder:
        raise TableBusy(f"{table.name} is busy: {lock.holder} has held it since {lock.acquired_at:%Y-%m-%d %H:%M:%S} UTC.")
    try:
        yield
    finally:
        TableLock.objects.filter(table=table, holder=holder).delete()


def check_table_free(table: Table) -> None:
    lock = TableLock.objects.filter(table=table).first()
    if lock is not None:
        raise TableBusy(f"{table.name} is busy: {lock.holder} has held it since {lock.acquired_at:%Y-%m-%d %H:%M:%S} UTC.")


# Clean plans

def _config(table: Table, overrides: Mapping[str, Any]) -> CleanConfig:
    return CleanConfig.from_properties(table.properties, **{k: v for k, v in overrides.items() if v not in ("", None)})


def plan_request(*, table: Table, user: User | None, overrides: Mapping[str, Any], automatic: bool = False) -> CleanPlan:
    """Ask for a clean plan with the table's settings and `overrides`; a task builds it."""
    try:
        config = _config(table, overrides)
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    plan = CleanPlan.objects.create(table=table, requested_by=user, settings=config.as_properties(),
                                    policy=config.policy.value, automatic=automatic)
    audit(user=user, action="clean.plan.requested", table=table, parameters=plan.settings)
    return plan


def plan_build(*, plan: CleanPlan) -> CleanPlan:
    """Run the library's planner and store the plan file by file as a DRAFT."""
    table = plan.table
    lake = HudiTable.open(table.path)
    config = CleanConfig.from_properties(plan.settings)
    plan_store(plan=plan, result=_make_plan(table, lake, config), warnings=_warnings(lake, table, config))
    plan.refresh_from_db()
    audit(user=None, action="clean.plan.built", table=table, parameters={"plan": plan.pk},
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
    """Large tables are planned and cleaned by PySpark jobs; small ones in the worker."""
    return 0 < settings.CLEANLINE_SPARK_MIN_FILES <= table.total_files


def _spark() -> Any:
    from timeline.spark.session import spark_session

    return spark_session(master=settings.SPARK_MASTER)


def _make_plan(table: Table, lake: HudiTable, config: CleanConfig) -> LakePlan:
    if _on_spark(table):
        from timeline.spark.clean import plan_clean_spark

        return plan_clean_spark(_spark(), lake.uri, config)
    return plan_clean(lake, config)


def _run_clean(table: Table, lake: HudiTable, instant: str, progress: Any, sizes: Mapping[str, int]) -> Any:
    drop = lake.config.metadata_table_enabled
    if _on_spark(table):
        from timeline.spark.clean import run_pending_cleans_spark

        return run_pending_cleans_spark(_spark(), lake.uri, instant=instant, progress=progress, sizes=sizes,
                                        drop_metadata=drop)
    return run_pending_cleans(lake, instant=instant, progress=progress, sizes=sizes, drop_metadata=drop)


def _warnings(lake: HudiTable, table: Table, config: CleanConfig) -> list[str]:
    warnings = []
    timeline = lake.timeline
    if timeline.savepoints().completed():
        times = ", ".join(i.requested_time for i in timeline.savepoints().completed())
        warnings.append(f"savepoints {times} protect their files")
    if timeline.pending_compactions() or timeline.pending_log_compactions():
        warnings.append("pending compactions protect the slices they read")
    if lake.config.metadata_table_enabled:
        warnings.append("the metadata table is enabled: approving drops it (Hudi writers rebuild it)")
    table_config = CleanConfig.from_properties(table.properties)
    if config.commits_retained < table_config.commits_retained:
        warnings.append(f"retains {config.commits_retained} commits, fewer than the table's configured "
                        f"{table_config.commits_retained}")
    if config.file_versions_retained < table_config.file_versions_retained:
        warnings.append(f"retains {config.file_versions_retained} file versions, fewer than the table's configured "
                        f"{table_config.file_versions_retained}")
    return warnings


def plan_reject(*, plan: CleanPlan, user: User | None, note: str = "") -> CleanPlan:
    if plan.status != PlanStatus.DRAFT:
        raise ValidationError(f"Only a draft plan can be rejected; this one is {plan.status}.")
    CleanPlan.objects.filter(pk=plan.pk).update(status=PlanStatus.REJECTED, decided_by=user,
                                                decided_at=timezone.now(), decision_note=note)
    audit(user=user, action="clean.plan.rejected", table=plan.table, parameters={"plan": plan.pk, "note": note})
    plan.refresh_from_db()
    return plan


def plan_approve(*, plan: CleanPlan, user: User | None) -> CleanPlan:
    """Re-validate the draft against the current timeline; if any file it would delete is
    now protected, or the policy now gives another plan, it becomes STALE with the
    difference. Otherwise the requested clean is written to the timeline (APPROVED)."""
    if plan.status != PlanStatus.DRAFT:
        raise ValidationError(f"Only a draft plan can be approved; this one is {plan.status}.")
    if (settings.CLEANLINE_APPROVER_MUST_DIFFER and not plan.automatic and user is not None
            and plan.requested_by_id == user.pk):
        raise ValidationError("The approver must differ from the requester (CLEANLINE_APPROVER_MUST_DIFFER).")
    table = plan.table
    check_table_free(table)
    lake = HudiTable.open(table.path)
    config = CleanConfig.from_properties(plan.settings)
    now_plan = plan_clean(lake, config)
    reasons = _differences(plan, now_plan)
    if reasons:
        CleanPlan.objects.filter(pk=plan.pk).update(status=PlanStatus.STALE, stale_reasons=reasons[:200],
                                                    decided_by=user, decided_at=timezone.now())
        audit(user=user, action="clean.plan.stale", table=table, parameters={"plan": plan.pk},
              result=f"{len(reasons)} differences")
        plan.refresh_from_db()
        return plan
    try:
        instant = schedule_clean(lake, now_plan, config, drop_metadata=lake.config.metadata_table_enabled, force=True)
    except CleanlineError as exc:
        raise ValidationError(str(exc)) from exc
    CleanPlan.objects.filter(pk=plan.pk).update(status=PlanStatus.APPROVED, decided_by=user, decided_at=timezone.now(),
                                                clean_instant=instant.requested_time,
                                                progress_total=plan.files_to_delete)
    audit(user=user, action="clean.plan.approved", table=table,
          parameters={"plan": plan.pk, "clean": instant.requested_time,
                      "metadata_table_dropped": lake.config.metadata_table_enabled})
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
    """Run an approved plan's clean under the table lock, with progress on the row; re-running
    after a lost worker finishes the same clean."""
    if plan.status not in (PlanStatus.APPROVED, PlanStatus.RUNNING):
        raise ValidationError(f"Only an approved plan runs; this one is {plan.status}.")
    table = plan.table
    with table_lock(table, f"clean-plan:{plan.pk}"):
        CleanPlan.objects.filter(pk=plan.pk).update(status=PlanStatus.RUNNING, task_id=task_id,
                                                    started_at=plan.started_at or timezone.now(), error="")
        sizes = dict(plan.files.filter(delete=True).values_list("path", "size"))
        last = [0.0]

        def progress(p: Progress) -> None:
            if time.monotonic() - last[0] > 0.5 or p.files_done == p.files_total:
                last[0] = time.monotonic()
                CleanPlan.objects.filter(pk=plan.pk).update(progress_done=p.files_done, progress_total=p.files_total,
                                                            progress_bytes=p.bytes_deleted)

        try:
            (result,) = _run_clean(table, HudiTable.open(table.path), plan.clean_instant, progress, sizes)
        except (CleanlineError, ValueError) as exc:
            CleanPlan.objects.filter(pk=plan.pk).update(status=PlanStatus.FAILED, error=str(exc),
                                                        finished_at=timezone.now())
            audit(user=None, action="clean.run.failed", table=table, parameters={"plan": plan.pk}, result=str(exc))
            plan.refresh_from_db()
            return plan
        _record_outcomes(plan, result.metadata)
        CleanPlan.objects.filter(pk=plan.pk).update(partition_summary=_partition_summary(plan))
        CleanPlan.objects.filter(pk=plan.pk).update(
            status=PlanStatus.COMPLETED, finished_at=timezone.now(), progress_done=plan.files_to_delete,
            progress_bytes=result.bytes_deleted)
    audit(user=None, action="clean.run.completed", table=table, parameters={"plan": plan.pk, "clean": plan.clean_instant},
          result=f"{result.deleted} deleted, {result.already_gone} already gone, {result.failed} failed")
    plan.refresh_from_db()
    return plan


def _record_outcomes(plan: CleanPlan, content: Mapping[str, Any]) -> None:
    for partition, meta in (content.get("partitionMetadata") or {}).items():
        for outcome, names in ((PlanFile.Outcome.DELETED, meta.get("successDeleteFiles") or ()),
                               (PlanFile.Outcome.FAILED, meta.get("failedDeleteFiles") or ())):
            names = list(names)
            for start in range(0, len(names), PLAN_BATCH):
                plan.files.filter(delete=True, partition=partition,
                                  file_name__in=names[start:start + PLAN_BATCH]).update(outcome=outcome)


# Savepoints, restores, rollbacks

def savepoint_create(*, table: Table, user: User | None, instant_time: str, comment: str) -> str:
    with table_lock(table, f"savepoint:{instant_time}"):
        try:
            done = create_savepoint(HudiTable.open(table.path), instant_time,
                                    user=user.get_username() if user else "cleanline", comment=comment)
        except CleanlineError as exc:
            audit(user=user, action="savepoint.refused", table=table, parameters={"instant": instant_time},
                  result=str(exc))
            raise ValidationError(str(exc)) from exc
    audit(user=user, action="savepoint.created", table=table, parameters={"instant": instant_time, "comment": comment})
    table_sync(table=table)
    return done.requested_time


def savepoint_delete(*, table: Table, user: User | None, instant_time: str) -> None:
    with table_lock(table, f"savepoint:{instant_time}"):
        try:
            delete_savepoint(HudiTable.open(table.path), instant_time)
        except CleanlineError as exc:
            raise ValidationError(str(exc)) from exc
    audit(user=user, action="savepoint.deleted", table=table, parameters={"instant": instant_time})
    table_sync(table=table)


def job_request(*, table: Table, user: User | None, kind: str, target: str, confirm_name: str | None = None) -> Job:
    """Queue a restore (the table's name typed as confirmation) or a rollback."""
    if kind == Job.Kind.RESTORE and confirm_name != table.name:
        raise ValidationError(f"Type the table's name ({table.name}) to confirm the restore.")
    check_table_free(table)
    job = Job.objects.create(table=table, kind=kind, target=target, requested_by=user)
    audit(user=user, action=f"{kind}.requested", table=table, parameters={"target": target, "job": job.pk})
    return job


def job_run(*, job: Job, task_id: str = "") -> Job:
    """Run a queued restore or rollback under the table lock; a re-run resumes it (the library
    resumes pending restores and rollbacks). A restore is checked afterwards: the latest file
    slices must be those the table had as of the savepoint."""
    table = job.table
    with table_lock(table, f"{job.kind}:{job.pk}"):
        Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, task_id=task_id, error="")
        lake = HudiTable.open(table.path)
        drop = lake.config.metadata_table_enabled
        try:
            if job.kind == Job.Kind.CLEAN:
                (done_clean,) = run_pending_cleans(lake, instant=job.target, drop_metadata=drop)
                result = {"deleted": done_clean.deleted, "already_gone": done_clean.already_gone,
                          "failed": done_clean.failed, "bytes": done_clean.bytes_deleted}
            elif job.kind == Job.Kind.RESTORE:
                expected = _slice_files(lake, as_of=job.target)
                done = restore(lake, job.target, drop_metadata=drop)
                verified = _slice_files(HudiTable.open(table.path), as_of=None) == expected
                result = {"restore": done.requested_time, "verified": verified, "metadata_table_dropped": drop}
            else:
                done = rollback(lake, job.target, drop_metadata=drop)
                result = {"rollback": done.requested_time, "metadata_table_dropped": drop}
        except CleanlineError as exc:
            Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, error=str(exc), finished_at=timezone.now())
            audit(user=None, action=f"{job.kind}.failed", table=table, parameters={"job": job.pk}, result=str(exc))
            job.refresh_from_db()
            return job
        Job.objects.filter(pk=job.pk).update(status=JobStatus.COMPLETED, result=result, finished_at=timezone.now())
    audit(user=None, action=f"{job.kind}.completed", table=table, parameters={"job": job.pk, "target": job.target},
          result=json.dumps(result))
    table_sync(table=table)
    job.refresh_from_db()
    return job


def _slice_files(lake: HudiTable, *, as_of: str | None) -> set[tuple[str, str]]:
    return {(s.partition, name) for s in lake.file_system_view(as_of=as_of).latest_slices()
            if s.base_file is not None for name in [s.base_file.name]}


def table_settings_update(*, table: Table, user: User | None, auto_clean: bool, auto_max_files: int,
                          auto_max_bytes: int) -> Table:
    Table.objects.filter(pk=table.pk).update(auto_clean=auto_clean, auto_max_files=auto_max_files,
                                             auto_max_bytes=auto_max_bytes)
    audit(user=user, action="table.settings.changed", table=table,
          parameters={"auto_clean": auto_clean, "auto_max_files": auto_max_files, "auto_max_bytes": auto_max_bytes})
    table.refresh_from_db()
    return table


def auto_clean(*, table: Table) -> CleanPlan | None:
    """Automatic mode: plan with the table's settings; a plan within the table's thresholds
    is approved automatically (and recorded so), a larger one waits for an admin. One clean
    at a time: nothing is planned while a plan of the table is open or the table is busy."""
    open_states = (PlanStatus.PLANNING, PlanStatus.DRAFT, PlanStatus.APPROVED, PlanStatus.RUNNING)
    if table.clean_plans.filter(status__in=open_states).exists() or TableLock.objects.filter(table=table).exists():
        return None
    plan = plan_build(plan=plan_request(table=table, user=None, overrides={}, automatic=True))
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
