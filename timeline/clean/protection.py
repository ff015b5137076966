"""What keeps files from being cleaned whatever the policy: a savepoint holding a file, a pending
compaction or log compaction reading a file group, a pending clustering reading a file. Read once
from the timeline (`read_protection`), asked per slice while planning (`timeline/clean/planner.py`)
and per target again under the table's lock before the first delete (`protection_conflicts`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from timeline.exceptions import InvalidFileNameError
from timeline.files import base_file_of, is_base_file_name, parse_log_file
from timeline.fsview import FileGroup, FileSlice
from timeline.instant import CLUSTERING, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, State
from timeline.metadata.records import RequestedReplace, SavepointMetadata
from timeline.table import Table


class PendingOperation(NamedTuple):
    """A file group read by a pending compaction or log compaction plan."""

    base_instant: str
    kind: str        # "pending compaction" | "pending log compaction"
    instant: str


@dataclass(frozen=True, slots=True)
class Protection:
    """What keeps files from being cleaned, read once from the timeline: savepointed file
    names, file groups in pending (log) compaction plans, files read by pending clusterings."""

    savepointed: Mapping[str, str]        # file name -> savepoint time
    pending_ops: Mapping[tuple[str, str], PendingOperation]  # (partition, file id) -> its pending plan
    clustering: Mapping[str, str]         # file name -> pending clustering instant
    pending_writes: frozenset[str] = frozenset()  # requested times of pending writes and table services


def read_protection(table: Table) -> Protection:
    """What protects files now, read as CleanPlanner reads it when it is made: the file names of
    every completed savepoint (`getSavepointedDataFiles`), the file groups of pending compaction
    and log compaction plans (`fgIdToPendingCompactionOperations`,
    `fgIdToPendingLogCompactionOperations`), and (Cleanline's own) the files pending clusterings read
    and the slices pending writes started."""
    timeline = table.timeline
    savepointed: dict[str, str] = {}
    for savepoint in timeline.savepoints().completed():
        for _, name in table.read(savepoint, SavepointMetadata).file_names():
            savepointed.setdefault(name, savepoint.requested_time)
    pending_ops: dict[tuple[str, str], PendingOperation] = {}
    clustering: dict[str, str] = {}
    for action, kind in ((COMPACTION, "pending compaction"), (LOG_COMPACTION, "pending log compaction")):
        for instant, op in table.pending_compaction_plans(action):
            key = (op.partition, op.file_id)
            entry = PendingOperation(op.base_instant_time, kind, instant.requested_time)
            # A group in both a compaction and a log compaction plan: Hudi checks each map;
            # keeping the older base instant protects every slice either one reads.
            if key not in pending_ops or entry.base_instant < pending_ops[key].base_instant:
                pending_ops[key] = entry
    for instant in timeline.pending():
        if instant.action in (CLUSTERING, REPLACE_COMMIT):
            for piece in table.read(instant, RequestedReplace, State.REQUESTED).input_slices:
                for name in piece.file_names:
                    clustering[name] = instant.requested_time
    writes = frozenset(i.requested_time for i in timeline.writes().pending())
    return Protection(savepointed, pending_ops, clustering, writes)


def slice_savepoint(piece: FileSlice, savepointed: Mapping[str, str]) -> str | None:
    """The savepoint holding a file of the slice, base or log (CleanPlanner's
    isFileSliceExistInSavepointedFiles), if any."""
    if not savepointed:
        return None
    for name in piece.file_names:
        if name in savepointed:
            return savepointed[name]
    return None


def pending_reason(group: FileGroup, piece: FileSlice, protection: Protection) -> str | None:
    """Why a pending table service keeps this slice: Hudi's
    isFileSliceNeededForPendingMajorOrMinorCompaction, then Cleanline's own protection of the
    inputs of a pending clustering (Hudi's CleanPlanner has none; keeping them keeps more)."""
    return (compaction_reason(group, piece, protection) or clustering_reason(piece, protection)
            or pending_write_reason(piece, protection))


def compaction_reason(group: FileGroup, piece: FileSlice, protection: Protection) -> str | None:
    op = protection.pending_ops.get(group.id) if protection.pending_ops else None
    if op is not None and piece.base_instant_time >= op.base_instant:
        return f"{op.kind} {op.instant} reads this slice"
    return None


def clustering_reason(piece: FileSlice, protection: Protection) -> str | None:
    if protection.clustering:
        for name in piece.file_names:
            if name in protection.clustering:
                return (f"pending clustering {protection.clustering[name]} reads this file (Cleanline keeps it; "
                        "Hudi's cleaner does not check)")
    return None


def pending_write_reason(piece: FileSlice, protection: Protection) -> str | None:
    """A slice whose base instant is a pending write's: Hudi's HoodieFileGroup.isFileSliceCommitted
    takes a write older than the first completed commit for archived, so its cleaner may delete
    the files of a write still running; Cleanline keeps them."""
    if piece.base_instant_time in protection.pending_writes:
        return (f"pending write {piece.base_instant_time} wrote this slice (Cleanline keeps it; Hudi's cleaner "
                "takes a write older than the first completed commit for archived)")
    return None


def why_protected(group: FileGroup, piece: FileSlice, protection: Protection) -> str | None:
    """Why a slice may not be cleaned whatever the policy: a savepoint holds a file of it, or a
    pending compaction, log compaction or clustering reads it."""
    savepoint = slice_savepoint(piece, protection.savepointed)
    if savepoint is not None:
        return f"savepoint {savepoint}"
    return pending_reason(group, piece, protection)


def protection_conflicts(table: Table, targets: Iterable[tuple[str, str]]) -> list[str]:
    """Which of a plan's (partition, path) targets the timeline protects now: a savepoint
    holds the file, or a pending compaction, log compaction or clustering reads its file
    group. The executor calls this under the table lock right before the first delete (a
    savepoint or a table service may have appeared since the plan was made). Stricter than
    `why_protected` for pending compactions: any log file of a group being compacted counts,
    so a re-validation may keep more than the plan did, never less."""
    return conflicts_with(read_protection(table), targets)


def conflicts_with(protection: Protection, targets: Iterable[tuple[str, str]]) -> list[str]:
    """`protection_conflicts` against a Protection read beforehand (Spark executors check
    their share of a plan with the driver's, `timeline/spark/clean.py`)."""
    if not (protection.savepointed or protection.clustering or protection.pending_ops):
        return []
    conflicts = []
    for partition, path in targets:
        name = path.rsplit("/", 1)[-1]
        if name in protection.savepointed:
            conflicts.append(f"{name}: savepoint {protection.savepointed[name]}")
            continue
        if name in protection.clustering:
            conflicts.append(f"{name}: pending clustering {protection.clustering[name]} reads it")
            continue
        if not protection.pending_ops:
            continue
        try:
            if is_base_file_name(name):
                base = base_file_of(name)
                file_id, instant, is_log = base.file_id, base.instant_time, False
            else:
                log = parse_log_file(name)
                file_id, instant, is_log = log.file_id, log.instant_time, True
        except InvalidFileNameError:
            continue
        op = protection.pending_ops.get((partition, file_id))
        if op is not None and (is_log or instant >= op.base_instant):
            conflicts.append(f"{name}: {op.kind} {op.instant} reads its file group")
    return conflicts
