"""Restore to a savepoint as Hudi's restore executors do (hudi-format.md §8.3): a plan
(HoodieRestorePlan v2) of every write after the savepoint, newest first, one rollback per
planned instant (never published as a completed rollback), HoodieRestoreMetadata, and the
removal of the rollback instants after the savepoint. Resumable; previewed."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from timeline import transition
from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, update_config
from timeline.exceptions import CleanlineError
from timeline.failed_writes import is_clustering
from timeline.instant import (
    CLUSTERING,
    COMMIT,
    COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
    State,
)
from timeline.mdt import guard_metadata_table
from timeline.mdt.reader import METADATA_FOLDER, MetadataTable, metadata_table
from timeline.mdt.writer import (
    RESTORE_SUFFIX,
    MetadataTableUnsupported,
    check_restorable,
    check_supported,
    dropped_on_restore,
    is_v6,
    restore_deletes_metadata_table,
    sync_updates,
    write_update,
)
from timeline.metadata.records import InstantRef, RestoreMetadata, RestorePlan, RollbackMetadata, SavepointMetadata
from timeline.rollback import (
    RollbackPreview,
    RollbackRefused,
    check_not_running,
    execute_rollback_plan,
    pending_rollback_of,
    plan_rollback,
)
from timeline.table import Table

RESTORE_PLAN_VERSION = 2
RESTORE_METADATA_VERSION = 1


class RestoreRefused(CleanlineError):
    """Hudi would not restore to this savepoint now; the message says why."""


@dataclass(frozen=True, slots=True)
class RestorePreview:
    """The instants a restore rolls back (newest first) and what each would delete."""

    savepoint: str
    instants: tuple[Instant, ...]
    rollbacks: tuple[RollbackPreview, ...]
    metadata_table: str = ""   # what happens to the metadata table, when the table has one

    @property
    def bytes_to_delete(self) -> int:
        return sum(r.bytes_to_delete for r in self.rollbacks)

    def per_partition(self) -> dict[str, tuple[int, int]]:
        """Partition -> (files, bytes) the restore deletes."""
        totals: dict[str, tuple[int, int]] = {}
        for preview in self.rollbacks:
            for partition, _, size in preview.files_to_delete:
                files, size_sum = totals.get(partition, (0, 0))
                totals[partition] = (files + 1, size_sum + size)
        return totals


def _instants_after(table: Table, savepoint: Instant) -> list[Instant]:
    """RestorePlanActionExecutor: pending clusterings after the savepoint, newest first, then
    every other write after it (v6: by requested time; v8+: by completion time, pending ones
    first, compactions on merge-on-read compared by requested time)."""
    timeline = table.timeline
    t = savepoint.requested_time
    writes = [i for i in timeline.writes() if i.requested_time != t]
    clustering = sorted((i for i in writes if i.is_pending and i.requested_time > t
                         and (i.action == CLUSTERING or is_clustering(table, i))),
                        key=lambda i: i.sort_key, reverse=True)
    rest = [i for i in writes if i not in clustering]
    if table.version < 8:
        after = sorted((i for i in rest if i.requested_time > t), key=lambda i: i.sort_key, reverse=True)
        return clustering + after
    commit = timeline.find(t, COMMIT) or timeline.find(t)
    sp_done = (commit.completion_time if commit else None) or t

    def later(i: Instant) -> bool:
        if table.config.is_mor and i.action in (COMPACTION, COMMIT):
            return i.requested_time > t
        return i.is_pending or (i.completion_time or "") > sp_done

    pending = sorted((i for i in rest if i.is_pending and later(i)), key=lambda i: i.sort_key, reverse=True)
    done = sorted((i for i in rest if i.is_completed and later(i)), key=lambda i: i.completion_time or "",
                  reverse=True)
    return clustering + pending + done


def _check(table: Table, savepoint_time: str) -> Instant:
    timeline = table.timeline
    savepoint = timeline.savepoints().completed().find(savepoint_time)
    if savepoint is None:
        raise RestoreRefused(f"{table.uri}: there is no completed savepoint {savepoint_time}")
    later = [i.requested_time for i in timeline.savepoints() if i.requested_time > savepoint_time]
    if later:
        raise RestoreRefused(f"{table.uri}: savepoint {later[0]} is later than {savepoint_time}; delete it first "
                             "(Hudi cannot roll back a savepointed commit)")
    if timeline.cleans().pending():
        raise RestoreRefused(f"{table.uri}: clean {timeline.cleans().pending().instants[0].requested_time} is "
                             "pending; run it first")
    for pending in timeline.restores().pending():
        plan = table.read(pending, RestorePlan, State.REQUESTED)
        if plan.savepoint != savepoint_time:
            raise RestoreRefused(f"{table.uri}: restore {pending.requested_time} to savepoint "
                                 f"{plan.savepoint} is pending; finish it first")
    if table.config.get("hoodie.archive.beyond.savepoint", "false") == "true":
        raise RestoreRefused(f"{table.uri}: hoodie.archive.beyond.savepoint is on; commits after the savepoint "
                             "may be archived, so Hudi does not restore")
    return savepoint


def _check_none_running(table: Table, instants: list[Instant]) -> None:
    """Cleanline's own rule: no restore while a write it would roll back is still being
    written (its heartbeat alive); Hudi's restore assumes no other writer is running."""
    for instant in instants:
        try:
            check_not_running(table, instant)
        except RollbackRefused as exc:
            raise RestoreRefused(f"{exc}; the restore would roll it back under its writer") from exc


def savepoint_files(table: Table, savepoint_time: str) -> set[tuple[str, str]]:
    """(partition, file name) of every file the completed savepoint holds."""
    savepoint = table.timeline.savepoints().completed().find(savepoint_time)
    if savepoint is None:
        return set()
    return set(table.read(savepoint, SavepointMetadata).file_names())


def _present(table: Table) -> set[tuple[str, str]]:
    return {(p, s.name) for p, statuses in table.list_partitions().partitions.items() for s in statuses}


def _check_savepoint_intact(table: Table, savepoint_time: str) -> None:
    """Cleanline's own rule (Hudi does not check): a restore whose savepoint lost a file would
    leave the table unreadable as of the savepoint, so it is refused before anything changes."""
    missing = sorted(savepoint_files(table, savepoint_time) - _present(table))
    if missing:
        shown = ", ".join(f"{p}/{n}" if p else n for p, n in missing[:5])
        raise RestoreRefused(f"{table.uri}: savepoint {savepoint_time} holds {len(missing)} file(s) that no longer "
                             f"exist ({shown}{', ...' if len(missing) > 5 else ''}); restoring would not give the "
                             "table as of the savepoint")


@dataclass(frozen=True, slots=True)
class RestoreVerification:
    """A finished restore checked against the savepoint's own file list: every file it holds
    exists, and the latest file slices have no base file the savepoint does not hold."""

    savepoint: str
    missing: tuple[str, ...]
    unexpected: tuple[str, ...]

    @property
    def verified(self) -> bool:
        return not self.missing and not self.unexpected


def verify_restore(table: Table, savepoint_time: str) -> RestoreVerification:
    table.reload()
    held = savepoint_files(table, savepoint_time)
    present = _present(table)
    missing = sorted(f"{p}/{n}" if p else n for p, n in held - present)
    unexpected = sorted(f"{s.partition}/{s.base_file.name}" if s.partition else s.base_file.name
                        for s in table.file_system_view().latest_slices()
                        if s.base_file is not None and (s.partition, s.base_file.name) not in held)
    return RestoreVerification(savepoint_time, tuple(missing), tuple(unexpected))


def preview_restore(table: Table, savepoint_time: str) -> RestorePreview:
    """What restoring to `savepoint_time` would roll back and delete; writes nothing."""
    table.reload()
    savepoint = _check(table, savepoint_time)
    _check_savepoint_intact(table, savepoint_time)
    instants = _instants_after(table, savepoint)
    _check_none_running(table, instants)
    return RestorePreview(savepoint_time, tuple(instants),
                          tuple(plan_rollback(table, i, for_restore=True) for i in instants),
                          _metadata_table_fate(table, savepoint_time))


def _metadata_table_fate(table: Table, savepoint_time: str) -> str:
    """What a restore does to the metadata table, for previews and refusals."""
    mdt = metadata_table(table)
    if mdt is None:
        return ""
    reason = restore_deletes_metadata_table(mdt, savepoint_time)
    if reason is not None:
        return (f"The metadata table is deleted first, as Apache Hudi does here ({reason}); Hudi writers rebuild "
                "it.")
    dropped = dropped_on_restore(mdt)
    return ("The metadata table is restored with the table, as Apache Hudi does: its instants after the "
            "savepoint are rolled back and a deltacommit brings its file listing to what storage holds"
            + (f"; its {', '.join(dropped)} partition(s) are deleted (Hudi rebuilds them)" if dropped else "") + ".")


def _metadata_table_before_restore(table: Table, savepoint_time: str) -> MetadataTable | None:
    """Delete the metadata table where Hudi does and return None; otherwise the metadata table
    to restore with the table (`timeline.mdt.writer`), after checking Hudi's preconditions."""
    mdt = metadata_table(table)
    if mdt is None:
        return None
    if restore_deletes_metadata_table(mdt, savepoint_time) is not None:
        guard_metadata_table(table, drop=True, action="a restore")
        return None
    check_restorable(mdt, savepoint_time)
    return mdt


def restore(table: Table, savepoint_time: str) -> Instant:
    """Restore the table to the savepoint: every later write is rolled back. A pending restore
    to the same savepoint is resumed."""
    table.reload()
    table.ensure_intact()
    savepoint = _check(table, savepoint_time)
    _check_savepoint_intact(table, savepoint_time)
    if not table.timeline.restores().pending():  # refusals first: nothing changes before them
        _check_none_running(table, _instants_after(table, savepoint))
    mdt = _metadata_table_before_restore(table, savepoint_time)
    return restore_to(table, savepoint, after_rollbacks=None if mdt is None else (
        lambda restore_time: restore_metadata_table(mdt, savepoint_time, restore_time)))


def restore_to(table: Table, savepoint: Instant, *,
               after_rollbacks: Callable[[str], object] | None = None) -> Instant:
    """`BaseRestoreActionExecutor` on `table` (the data table, or its metadata table when the
    data table is restored): the restore plan of every write after `savepoint` (an instant of
    `table`'s timeline, a savepoint on the data table), each rolled back without a published
    rollback, `after_rollbacks(restore time)` (the metadata table's part), the completed restore,
    then the rollback instants after the savepoint removed. A pending restore is resumed."""
    savepoint_time = savepoint.requested_time
    started = time.monotonic()
    resumed = next(iter(table.timeline.restores().pending()), None)
    if resumed is not None:
        plan = table.read(resumed, RestorePlan, State.REQUESTED)
        restore_instant = resumed
    else:
        instants = _instants_after(table, savepoint)
        plan = RestorePlan(instants_to_rollback=tuple(InstantRef(i.requested_time, i.action) for i in instants),
                           savepoint=savepoint_time, version=RESTORE_PLAN_VERSION)
        restore_instant = transition.request(table, RESTORE, plan.to_raw())
    transition.start(table, restore_instant)
    # BaseRestoreActionExecutor: an instant no longer on the write timeline was rolled back by
    # an earlier, interrupted run ("Ignoring already rolledback instant"); the metadata lists
    # only the instants this run rolled back.
    rolled_back: dict[str, tuple[RollbackMetadata, ...]] = {}
    done_now: list[InstantRef] = []
    for entry in plan.instants_to_rollback:
        result = _roll_back_for_restore(table, entry)
        if result is not None:
            rolled_back[entry.time] = (result,)
            done_now.append(entry)
        table.reload()
    if after_rollbacks is not None:
        after_rollbacks(restore_instant.requested_time)
    content = RestoreMetadata(start_restore_time=restore_instant.requested_time,
                              time_taken_ms=int((time.monotonic() - started) * 1000), rolled_back=rolled_back,
                              instants=tuple(done_now), version=RESTORE_METADATA_VERSION)
    done = transition.complete(table, restore_instant, content.to_raw())
    for rollback_instant in table.timeline.rollbacks():
        if rollback_instant.requested_time > savepoint_time:
            for status in table.timeline.files_of(rollback_instant).values():
                table.storage.delete(status.path)
    return done


def _roll_back_for_restore(table: Table, entry: InstantRef) -> RollbackMetadata | None:
    """One planned rollback: resumed from its pending rollback instant when a crashed run left
    one, else planned now; never published as a completed rollback. None when the instant is
    already gone from the timeline (rolled back by an earlier run: its files went first)."""
    existing = pending_rollback_of(table, entry.time)
    target = next((i for i in table.timeline if i.requested_time == entry.time
                   and i.action in (entry.action, *([REPLACE_COMMIT] if entry.action == CLUSTERING else []))),
                  None)
    if target is None:
        return None
    if existing is not None:
        rollback_instant, plan = existing
    else:
        plan = plan_rollback(table, target, for_restore=True).plan
        rollback_instant = transition.request(table, ROLLBACK, plan.to_raw())
    transition.start(table, rollback_instant)
    return execute_rollback_plan(table, rollback_instant.requested_time, plan, target)


# The metadata table's part of a restore: `restore_to` run on the MDT as a table (this module
# stands above timeline/mdt/writer.py, which writes the MDT's records and knows no restore).

def restore_metadata_table(mdt: MetadataTable, savepoint_time: str, restore_time: str) -> Instant | None:
    """The metadata table's part of a restore (`BaseActionExecutor.writeTableMetadata` for a
    HoodieRestoreMetadata), before the data table's restore completes: the partitions Hudi does
    not keep on restore are deleted (`dropIndexOnRestore`: bloom filters, partition stats,
    secondary and expression indexes; Hudi keeps a backup copy, Cleanline deletes them), the MDT
    is restored to the savepoint's instant (its later instants rolled back,
    `restoreToInstant`), then a deltacommit at a new time brings the `files` partition to what
    storage holds (`fetchOutofSyncFilesRecordsFromMetadataTable`, `convertMissingPartitionRecords`)
    with column-stats deletions for files gone. Table version 6 (0.14/0.15): no partition is
    deleted, the MDT's later deltacommits are rolled back with command blocks, and the sync
    deltacommit (files only) is at a new time + "003" (`createRestoreTimestamp`). Returns that
    deltacommit."""
    check_supported(mdt)
    data = mdt.table
    config = data.config
    dropped = dropped_on_restore(mdt)
    transition.fence(data)  # the partitions dropped and the MDT restored only while the table's lock is ours
    if dropped:  # the table's config first (setMetadataPartitionState), then the folders
        update_config(data.storage, data.base, {
            MDT_PARTITIONS: ",".join(p for p in config.metadata_partitions if p not in dropped),
            MDT_PARTITIONS_INFLIGHT: ",".join(p for p in config.metadata_partitions_inflight if p not in dropped)})
        data.reload()
    for partition in dropped:
        data.storage.delete_dir(data.containment.meta_path(METADATA_FOLDER, partition))
    table = mdt.mdt.reload()
    point = table.timeline.completed().find(savepoint_time)
    if point is None:
        raise MetadataTableUnsupported(f"{data.uri}: the metadata table has no completed instant {savepoint_time}")
    # restoreToInstant runs even when nothing follows the point: an empty plan, a completed
    # restore, and the MDT's rollbacks after the point removed (BaseRestoreActionExecutor.finishRestore)
    restore_to(table, point)
    mdt.reload()
    sync_time = table.new_instant_time(after=restore_time)
    if is_v6(mdt):  # createRestoreTimestamp: a time no data-table instant has, valid by its suffix
        sync_time += RESTORE_SUFFIX
    return write_update(mdt, sync_time, sync_updates(mdt))
