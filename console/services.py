"""Writes: registering and syncing tables. Lake rules stay in `timeline/`; this module only
mirrors what the library reads into the database."""

from __future__ import annotations

import hashlib
from collections import Counter
import json
import logging
import math
import secrets
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections, transaction
from django.db.models import Count, DateTimeField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from console.models import (
    AuditEvent, CleanPlan, Instant, Job, JobStatus, PlanFile, PlanStatus, SyncStatus, Table, TableLock,
)
from timeline import (
    CleanConfig, CleanlineError, CleanRefused, CleanResult, FileSystemView, HudiTable, Maintenance, Progress,
    UnsupportedLocationError, parse_location, spark_session, within_roots,
)
from timeline import CleanPlan as LakePlan
from timeline import Instant as LakeInstant

logger = logging.getLogger(__name__)


def is_allowed(path: str) -> bool:
    """Whether `path` lies under one of CLEANLINE_ALLOWED_ROOTS: parsed and matched on whole
    resolved segments (symbolic links followed) before any storage object exists or any
    request is sent. Raises UnsupportedLocationError for a scheme the library does not open."""
    return within_roots(path, settings.CLEANLINE_ALLOWED_ROOTS)


def _resolved_location(path: str) -> str:
    """The path to open: local paths resolved (a symbolic link is registered as its target,
    so that swapping the link later cannot point the table elsewhere); URIs as given."""
    scheme, resolved = parse_location(path)
    return resolved if scheme == "file" else path


def table_register(*, path: str, user: User | None) -> Table:
    """Register the table at `path`. Refused, with nothing written and no request sent to a
    store, when the path is outside the allowed roots or has an unknown scheme; refused with
    nothing written when it is already registered, not a Hudi table, or unreadable."""
    path = path.strip()
    if not path:
        raise ValidationError("Give the table's base path.")
    try:
        allowed = is_allowed(path)
    except UnsupportedLocationError as exc:
        raise ValidationError(str(exc)) from exc
    if not allowed:
        roots = ", ".join(settings.CLEANLINE_ALLOWED_ROOTS)
        raise ValidationError(f"{path} is outside the allowed roots ({roots}); see CLEANLINE_ALLOWED_ROOTS.")
    try:
        lake = HudiTable.open(_resolved_location(path))
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
                "records": sum(_number(s.get("numWrites")) for s in stats),
                "bytes": sum(_number(s.get("totalWriteBytes")) for s in stats)}
    if "totalFilesDeleted" in content:
        return {"partitions": len(content.get("partitionMetadata") or {}),
                "files": _number(content["totalFilesDeleted"])}
    if "savepointedBy" in content:
        meta = content.get("partitionMetadata") or {}
        return {"partitions": len(meta), "files": sum(len(m.get("savepointDataFile") or ()) for m in meta.values())}
    return {}


def _number(value: Any) -> int:
    """A count from instant metadata; what is not a number (e.g. "lots" written by hand) counts as 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return 0
    return 0


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
    lake.ensure_intact()  # a corrupt instant fails the sync, as it stops planning and mutations
    print_ = fingerprint(lake)
    if print_ == table.timeline_fingerprint and table.sync_status == SyncStatus.OK:
        return SyncResult(False, 0, 0, 0)
    known = {(r[0], r[1]): (r[2], r[3], r[4]) for r in table.instants.values_list(
        "requested_time", "action", "completion_time", "state", "archived")}
    archived = lake.inspect.archived_instants() if _has_archive(lake) else ()
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
    """Another run holds the table's lock (and is alive: it heartbeats). `holder` says what."""

    def __init__(self, message: str, *, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class LockLost(Exception):
    """This run's table lock expired and another run took the table over: stop, write nothing."""


def _expired(now: datetime) -> Q:
    """Locks free to take over at `now` (a lock without expiry was left by an older version)."""
    return Q(expires_at__isnull=True) | Q(expires_at__lte=now)


def _expiry() -> timedelta:
    return timedelta(seconds=settings.CLEANLINE_LOCK_EXPIRY_SECONDS)


def _busy(table: Table, lock: TableLock) -> TableBusy:
    beat = f", last heartbeat {lock.heartbeat_at:%H:%M:%S} UTC" if lock.heartbeat_at else ""
    return TableBusy(f"{table.name} is busy: {lock.holder} has held it since {lock.acquired_at:%Y-%m-%d %H:%M:%S} "
                     f"UTC{beat}.", holder=lock.holder)


class Lease:
    """One run's hold on a table's lock: a random token, a heartbeat that pushes the expiry
    forward, and `lost` once another run took the table over after an expiry."""

    def __init__(self, table: Table, holder: str, token: str) -> None:
        self.table, self.holder, self.token = table, holder, token
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = time.monotonic()

    @staticmethod
    def interval() -> float:
        """Seconds between heartbeats: a quarter of the expiry, at most 10."""
        return max(0.1, min(10.0, settings.CLEANLINE_LOCK_EXPIRY_SECONDS / 4))

    def owned(self) -> bool:
        """Beat: push the expiry forward if this run still owns the lock; False once it lost it."""
        now = timezone.now()
        self._last = time.monotonic()
        if not TableLock.objects.filter(table_id=self.table.pk, token=self.token).update(
                heartbeat_at=now, expires_at=now + _expiry()):
            self.lost.set()
        return not self.lost.is_set()

    def check(self, *, now: bool = False) -> None:
        """Raise LockLost if another run took the table; beats first when one is due (or `now`)."""
        if not self.lost.is_set() and (now or time.monotonic() - self._last >= self.interval()):
            self.owned()
        if self.lost.is_set():
            raise LockLost(f"{self.table.name}: the lock of {self.holder} (run {self.token[:8]}) expired and another "
                           "run took the table over; this run stopped")

    def start(self) -> None:
        """Beat on a thread of its own while the run works. Not inside a transaction: another
        connection would not see the lock row (and SQLite would wait for this one's writes)."""
        if not transaction.get_connection().in_atomic_block:
            self._thread = threading.Thread(target=self._beat, name=f"cleanline-lock-{self.table.pk}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval()):
                try:
                    if not self.owned():
                        logger.warning("%s: lost the lock of %s (run %s)", self.table.name, self.holder, self.token)
                        return
                except Exception:  # the database hiccupped: the next beat tries again
                    logger.exception("%s: heartbeat of %s failed", self.table.name, self.holder)
        finally:
            connections.close_all()  # this thread's connections only


_held = threading.local()


def _acquire(table: Table, holder: str) -> Lease:
    """Take the table's lock for a new run: insert it, or take over an expired one with one
    conditional update (of two takers exactly one wins). A live lock raises TableBusy."""
    token = secrets.token_hex(16)
    for _ in range(5):
        now = timezone.now()
        fields = {"holder": holder, "token": token, "acquired_at": now, "heartbeat_at": now,
                  "expires_at": now + _expiry()}
        current = TableLock.objects.filter(table=table).first()
        if current is None:
            try:
                with transaction.atomic():
                    TableLock.objects.create(table=table, **fields)
                return Lease(table, holder, token)
            except IntegrityError:
                continue  # another run inserted it first: look again
        if current.expires_at is not None and current.expires_at > now:
            raise _busy(table, current)
        if TableLock.objects.filter(pk=current.pk, token=current.token).filter(_expired(now)).update(**fields):
            logger.warning("%s: %s took over the expired lock of %s", table.name, holder, current.holder)
            audit(user=None, action="table.lock.taken-over", table=table,
                  parameters={"holder": holder, "token": token, "previous_holder": current.holder,
                              "previous_token": current.token,
                              "previous_heartbeat": current.heartbeat_at.isoformat() if current.heartbeat_at else None})
            return Lease(table, holder, token)
    lock = TableLock.objects.filter(table=table).first()
    raise _busy(table, lock) if lock is not None else TableBusy(f"{table.name} is busy: its lock keeps changing hands.")


@contextmanager
def table_lock(table: Table, holder: str) -> Iterator[Lease]:
    """Hold the table's lock for one run of `holder` (a random token per run, a heartbeat while
    it works, free for another run once it stops heartbeating for CLEANLINE_LOCK_EXPIRY_SECONDS).
    Re-entrant for the same holder on the same thread only: a re-delivered copy of a task is
    another run and gets TableBusy while the first is alive. Released by its owner only."""
    held: dict[int, Lease] = _held.__dict__.setdefault("leases", {})
    outer = held.get(table.pk)
    if outer is not None and outer.holder == holder:
        yield outer
        return
    lease = _acquire(table, holder)
    held[table.pk] = lease
    lease.start()
    try:
        yield lease
    finally:
        lease.stop()
        if outer is None:
            held.pop(table.pk, None)
        else:
            held[table.pk] = outer
        TableLock.objects.filter(table_id=table.pk, token=lease.token).delete()


def live_lock(table: Table) -> TableLock | None:
    """The table's lock if a run holds it and heartbeats; an expired one counts as free."""
    return TableLock.objects.filter(table=table).exclude(_expired(timezone.now())).first()


def check_table_free(table: Table) -> None:
    lock = live_lock(table)
    if lock is not None:
        raise _busy(table, lock)


def table_lock_break(*, table: Table, user: User | None, token: str) -> None:
    """Remove the table's lock with `token` once it has expired (its run stopped heartbeating);
    a live lock is refused. Audited with the holder, token and age."""
    now = timezone.now()
    lock = TableLock.objects.filter(table=table, token=token).first() if token else None
    if lock is None:
        raise ValidationError("That lock is no longer held; nothing to break.")
    if lock.expires_at is not None and lock.expires_at > now:
        raise ValidationError(f"{lock.holder} still heartbeats (last {lock.heartbeat_at or lock.acquired_at:%H:%M:%S} "
                              "UTC): only an expired lock can be broken.")
    deleted, _ = TableLock.objects.filter(pk=lock.pk, token=token).filter(_expired(now)).delete()
    if not deleted:
        raise ValidationError("The lock changed meanwhile; look again.")
    audit(user=user, action="table.lock.broken", table=table,
          parameters={"holder": lock.holder, "token": lock.token, "acquired_at": lock.acquired_at.isoformat(),
                      "last_heartbeat": lock.heartbeat_at.isoformat() if lock.heartbeat_at else None,
                      "age_seconds": int((now - lock.acquired_at).total_seconds())})


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
    return spark_session(master=settings.SPARK_MASTER)


def _maintenance(table: Table, lake: HudiTable) -> Maintenance:
    """The table's services on the engine its size calls for."""
    return lake.maintenance(spark=_spark() if _on_spark(table) else None)


def _make_plan(table: Table, lake: HudiTable, config: CleanConfig) -> LakePlan:
    return _maintenance(table, lake).plan_clean(config)


def _run_clean(table: Table, lake: HudiTable, instant: str, progress: Any, sizes: Mapping[str, int]) -> Any:
    return _maintenance(table, lake).run_cleans(instant=instant, progress=progress, sizes=sizes,
                                                drop_metadata=lake.config.metadata_table_enabled)


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


def plan_approve(*, plan: CleanPlan, user: User | None) -> CleanPlan:
    """Re-validate the draft against the current timeline; if any file it would delete is
    now protected, or the policy now gives another plan, it becomes STALE with the
    difference. Otherwise the requested clean is written to the timeline (APPROVED).

    Exactly one approval wins: under the table lock the plan is claimed (DRAFT to APPROVING)
    by one conditional update before anything is written to the lake; the others get a
    ValidationError. A failure puts the claim back to DRAFT with the error."""
    if plan.status not in (PlanStatus.DRAFT, PlanStatus.APPROVING):
        raise ValidationError(f"Only a draft plan can be approved; this one is {plan.status}.")
    if plan.files_to_delete == 0 and not plan.partitions_to_delete:
        raise ValidationError("Nothing to clean: this plan deletes no file, so there is nothing to approve "
                              "(Hudi schedules no clean for it either).")
    if (settings.CLEANLINE_APPROVER_MUST_DIFFER and not plan.automatic and user is not None
            and plan.requested_by_id == user.pk):
        raise ValidationError("The approver must differ from the requester (CLEANLINE_APPROVER_MUST_DIFFER).")
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
        now_plan = lake.maintenance().plan_clean(config)
        reasons = _differences(plan, now_plan)
        if reasons:
            claim.update(status=PlanStatus.STALE, stale_reasons=reasons[:200], run_token="")
            audit(user=user, action="clean.plan.stale", table=table, parameters={"plan": plan.pk},
                  result=f"{len(reasons)} differences")
            plan.refresh_from_db()
            return plan
        lease.check(now=True)  # still this approval's table, immediately before the first write
        instant = lake.maintenance().schedule_clean(now_plan, config, force=True,
                                                    drop_metadata=lake.config.metadata_table_enabled)
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


def _kind(row: CleanPlan | Job) -> str:
    return "plan" if isinstance(row, CleanPlan) else "job"


@contextmanager
def _run_claim(row: CleanPlan | Job, lease: Lease, *, ready: tuple[str, ...], failed_action: str,
               **fields: Any) -> Iterator[QuerySet[Any] | None]:
    """Claim a plan or job for this run (status RUNNING with the run's lock token) by one
    conditional update, under the table lock. Yields the row's queryset, through which only
    this run's updates land, or None when an earlier run settled it (COMPLETED, FAILED): then
    there is nothing to do. An unexpected error marks the row FAILED with the reason (never
    left RUNNING) and is raised again."""
    model = type(row)
    if not model.objects.filter(pk=row.pk, status__in=ready).update(status="running", run_token=lease.token, **fields):
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


def _run_stopped(row: CleanPlan | Job, action: str, lease: Lease, reason: str) -> None:
    """This run lost the table to another (its lock expired): it records nothing more."""
    logger.warning("%s %s: %s", type(row).__name__, row.pk, reason)
    audit(user=None, action=action, table=row.table, parameters={_kind(row): row.pk, "token": lease.token},
          result=reason)


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
        _record_outcomes(plan, result.metadata)
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
        content = lake.read_instant(done) or {}
        meta = (content.get("partitionMetadata") or {}).values()
        return CleanResult(done, sum(len(m.get("successDeleteFiles") or ()) for m in meta), 0,
                           sum(len(m.get("failedDeleteFiles") or ()) for m in meta), 0, content), None
    (result,) = _run_clean(table, lake, plan.clean_instant, progress, sizes)
    return result, result.bytes_deleted


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
            done = HudiTable.open(table.path).maintenance().create_savepoint(instant_time,
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
            HudiTable.open(table.path).maintenance().delete_savepoint(instant_time)
        except CleanlineError as exc:
            raise ValidationError(str(exc)) from exc
    audit(user=user, action="savepoint.deleted", table=table, parameters={"instant": instant_time})
    table_sync(table=table)


def job_request(*, table: Table, user: User | None, kind: str, target: str, confirm_name: str | None = None) -> Job:
    """Queue a restore (the table's name typed as confirmation) or the rollback of a failed
    write (its instant time typed; anything but a failed write is refused, as is a rollback
    plan naming a path outside the table)."""
    if kind == Job.Kind.RESTORE and confirm_name != table.name:
        raise ValidationError(f"Type the table's name ({table.name}) to confirm the restore.")
    if kind == Job.Kind.ROLLBACK:
        if confirm_name != target:
            raise ValidationError(f"Type the failed write's instant time ({target}) to confirm the rollback.")
        try:
            HudiTable.open(table.path).maintenance().preview_rollback(target)
        except CleanlineError as exc:
            audit(user=user, action="rollback.refused", table=table, parameters={"target": target}, result=str(exc))
            raise ValidationError(str(exc)) from exc
    check_table_free(table)
    job = Job.objects.create(table=table, kind=kind, target=target, requested_by=user)
    audit(user=user, action=f"{kind}.requested", table=table, parameters={"target": target, "job": job.pk})
    return job


def run_gave_up(*, row: CleanPlan | Job, error: str, running: bool = True) -> bool:
    """A task gave up on a plan or job (its table stayed busy, or it failed before claiming
    it): the row fails with the reason and an audit event, unless a run settled it meanwhile
    (or, with `running` false, a run claimed it). False if nothing changed."""
    if isinstance(row, CleanPlan):
        ready, action = (PlanStatus.APPROVED, PlanStatus.RUNNING), "clean.run.failed"
    else:
        ready, action = (JobStatus.QUEUED, JobStatus.RUNNING), f"{row.kind}.failed"
    ready = ready if running else ready[:1]
    if not type(row).objects.filter(pk=row.pk, status__in=ready).update(
            status="failed", error=error[:2000], finished_at=timezone.now()):
        return False
    audit(user=None, action=action, table=row.table, parameters={_kind(row): row.pk}, result=error)
    return True


def job_holder(job: Job) -> str:
    """What holds the table's lock while the job runs."""
    return f"{job.kind}:{job.pk}"


def job_run(*, job: Job, task_id: str = "") -> Job:
    """Run a queued restore or rollback under the table lock; a re-run resumes it (the library
    resumes pending restores and rollbacks). A restore is checked afterwards: the latest file
    slices must be those the table had as of the savepoint."""
    table = job.table
    with table_lock(table, job_holder(job)) as lease, _run_claim(
            job, lease, ready=(JobStatus.QUEUED, JobStatus.RUNNING), failed_action=f"{job.kind}.failed",
            task_id=task_id, error="") as mine:
        if mine is None:  # an earlier run settled it: nothing to do
            job.refresh_from_db()
            return job
        lake = HudiTable.open(table.path)
        drop = lake.config.metadata_table_enabled
        try:
            if job.kind == Job.Kind.CLEAN:
                (done_clean,) = lake.maintenance().run_cleans(instant=job.target, drop_metadata=drop)
                result = {"deleted": done_clean.deleted, "already_gone": done_clean.already_gone,
                          "failed": done_clean.failed, "bytes": done_clean.bytes_deleted}
            elif job.kind == Job.Kind.RESTORE:
                done = lake.maintenance().restore(job.target, drop_metadata=drop)
                check = HudiTable.open(table.path).maintenance().verify_restore(job.target)
                result = {"restore": done.requested_time, "verified": check.verified, "missing": list(check.missing[:50]),
                          "unexpected": list(check.unexpected[:50]), "metadata_table_dropped": drop}
            else:
                done = lake.maintenance().rollback_failed_write(job.target, drop_metadata=drop)
                result = {"rollback": done.requested_time, "metadata_table_dropped": drop}
        except CleanlineError as exc:
            if mine.update(status=JobStatus.FAILED, error=str(exc), finished_at=timezone.now()):
                audit(user=None, action=f"{job.kind}.failed", table=table, parameters={"job": job.pk}, result=str(exc))
            else:
                _run_stopped(job, f"{job.kind}.stopped", lease, f"lost the table's lock, then: {exc}")
            job.refresh_from_db()
            return job
        completed = mine.update(status=JobStatus.COMPLETED, result=result, finished_at=timezone.now())
    if not completed:
        _run_stopped(job, f"{job.kind}.stopped", lease, "lost the table's lock to another run; recorded nothing")
        job.refresh_from_db()
        return job
    audit(user=None, action=f"{job.kind}.completed", table=table, parameters={"job": job.pk, "target": job.target},
          result=json.dumps(result))
    table_sync(table=table)
    job.refresh_from_db()
    return job


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
    open_states = (PlanStatus.PLANNING, PlanStatus.DRAFT, PlanStatus.APPROVING, PlanStatus.APPROVED,
                   PlanStatus.RUNNING)
    if table.clean_plans.filter(status__in=open_states).exists() or live_lock(table) is not None:
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
