"""The pending table services of a table, with their plans, as Hudi's file-system view and
timeline hold them: compactions and log compactions (`CompactionUtils.getAllPendingCompactionPlans`,
`getAllPendingLogCompactionPlans`) and clusterings (`ClusteringUtils.getAllPendingClusteringPlans`:
the `clustering` action of table versions 8 and 9, a replacecommit whose requested plan is a
clustering on version 6). Each plan's file groups, base and log files with their sizes on storage,
its strategy, its age and state, and its heartbeat if the job keeps one. Reads only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from timeline.failed_writes import heartbeat_ms, is_clustering
from timeline.fsview import FileGroupId, TableListing
from timeline.instant import CLUSTERING, COMPACTION, LOG_COMPACTION, Instant, State, moment_of
from timeline.metadata.raw import file_name_of
from timeline.metadata.records import CompactionPlan, RequestedReplace, SliceInfo
from timeline.table import Table

# HoodieCompactionPlanGenerator's operation metric: the bytes of the log files it planned
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"


class ServiceKind(str, Enum):
    """The table services a plan on the timeline stands for."""

    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLUSTERING = "clustering"


@dataclass(frozen=True, slots=True)
class PlannedSlice:
    """One file slice a pending plan reads: its base file and log files (names as the plan gives
    them), their bytes on storage now (None when none of them is there), the files the plan names
    that storage no longer holds, and the log bytes the plan itself recorded (compaction plans'
    TOTAL_LOG_FILES_SIZE metric; None without it)."""

    partition: str
    file_id: str
    base_instant_time: str
    base_file: str | None
    log_files: tuple[str, ...]
    bytes: int | None
    missing: tuple[str, ...] = ()
    planned_log_bytes: int | None = None

    @property
    def file_group(self) -> FileGroupId:
        return (self.partition, self.file_id)


@dataclass(frozen=True, slots=True)
class PendingService:
    """A compaction, log compaction or clustering on the timeline, not completed: its instant
    (requested or inflight), its plan's slices and strategy ("" when the plan names none), how
    long ago it was requested (seconds, by its instant time in the table's zone) and how long ago
    its heartbeat file was touched (None: no heartbeat file; Hudi's table services keep none
    unless run by a writer that does)."""

    instant: Instant
    kind: ServiceKind
    slices: tuple[PlannedSlice, ...]
    strategy: str = ""
    age_seconds: int | None = None
    heartbeat_age_seconds: int | None = None

    @property
    def file_groups(self) -> tuple[FileGroupId, ...]:
        return tuple(dict.fromkeys(s.file_group for s in self.slices))

    @property
    def bytes(self) -> int:
        return sum(s.bytes or 0 for s in self.slices)

    @property
    def is_inflight(self) -> bool:
        return self.instant.state is State.INFLIGHT


def file_sizes(listing: TableListing) -> dict[tuple[str, str], int]:
    """(partition, file name) -> size of every file of a listing."""
    return {(partition, status.name): status.size for partition, files in listing.partitions.items()
            for status in files}


def pending_plans(table: Table) -> list[tuple[Instant, ServiceKind, str, tuple[SliceInfo, ...]]]:
    """Every pending compaction, log compaction and clustering with its plan's strategy and
    slices, in timeline order."""
    found = []
    for instant in table.timeline.pending():
        if instant.action in (COMPACTION, LOG_COMPACTION):
            plan = table.read(instant, CompactionPlan, State.REQUESTED)
            kind = ServiceKind.COMPACTION if instant.action == COMPACTION else ServiceKind.LOG_COMPACTION
            found.append((instant, kind, plan.strategy, plan.operations))
        elif instant.action == CLUSTERING or is_clustering(table, instant):
            replace = table.read(instant, RequestedReplace, State.REQUESTED)
            found.append((instant, ServiceKind.CLUSTERING, replace.strategy, replace.input_slices))
    return found


def pending_services(table: Table, listing: TableListing, *, now: datetime | None = None,
                     now_ms: int | None = None) -> tuple[PendingService, ...]:
    """The pending table services of `table`, oldest first, their files sized from `listing`
    (one listing of the table: `Table.list_partitions`)."""
    sizes = file_sizes(listing)
    zone = table.config.timezone
    found = []
    for instant, kind, strategy, slices in pending_plans(table):
        moment = now if now is not None else datetime.now().astimezone()
        age = max(0, int((moment - moment_of(instant.requested_time, zone)).total_seconds()))
        beat = heartbeat_ms(table, instant)
        clock_ms = int(moment.timestamp() * 1000) if now_ms is None else now_ms
        found.append(PendingService(instant, kind, tuple(planned_slice(s, sizes) for s in slices), strategy, age,
                                    None if beat == 0 else max(0, (clock_ms - beat) // 1000)))
    return tuple(found)


def planned_slice(info: SliceInfo, sizes: Mapping[tuple[str, str], int]) -> PlannedSlice:
    """One slice of a plan with the sizes of its files on storage."""
    base = file_name_of(info.data_file) if info.data_file else None
    logs = tuple(file_name_of(p) for p in info.log_files if p)
    present = [sizes[(info.partition, n)] for n in (base, *logs) if n and (info.partition, n) in sizes]
    missing = tuple(n for n in (base, *logs) if n and (info.partition, n) not in sizes)
    planned = info.metrics.get(TOTAL_LOG_FILES_SIZE)
    return PlannedSlice(info.partition, info.file_id, info.base_instant_time, base, logs,
                        sum(present) if present else None, missing, None if planned is None else int(planned))


__all__ = ["TOTAL_LOG_FILES_SIZE", "PendingService", "PlannedSlice", "ServiceKind", "file_sizes", "pending_plans",
           "pending_services", "planned_slice"]
