"""Scheduling a compaction as Hudi's scheduler does with its default strategy
(`ScheduleCompactionActionExecutor`, `HoodieCompactionPlanGenerator` over
`BaseHoodieCompactionPlanGenerator.generateCompactionPlan`, `LogFileSizeBasedCompactionStrategy`):
the latest file slices with log files (of completed delta commits), less the file groups of
pending compactions and clusterings, each with Hudi's metrics, ordered by log bytes and cut at
`hoodie.compaction.target.io`, written as `<t>.compaction.requested` (HoodieCompactionPlan,
version 2). The schedule itself is `write_plan`, under the table's lock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from timeline import transition
from timeline.fsview import FileGroupId, FileSlice
from timeline.instant import CLUSTERING, COMMIT, COMPACTION, DELTA_COMMIT, REPLACE_COMMIT, Instant, State
from timeline.locks.discovery import writer_properties
from timeline.metadata.records import CompactionPlan, SliceInfo
from timeline.services.pending import ServiceKind, pending_services
from timeline.services.refusals import CompactionRefused, MergeRules, check_reproducible
from timeline.services.settings import CompactionSettingsError, compaction_settings, number_setting
from timeline.services.why import earlier_pending_write
from timeline.table import Table

# MB: HoodieCompactionConfig.TARGET_IO_PER_COMPACTION_IN_MB
TARGET_IO = ("hoodie.compaction.target.io", str(500 * 1024))
LOG_SIZE_THRESHOLD = ("hoodie.compaction.logfile.size.threshold", "0")   # bytes: COMPACTION_LOG_FILE_SIZE_THRESHOLD
PARQUET_MAX_FILE_SIZE = ("hoodie.parquet.max.file.size", str(120 * 1024 * 1024))  # HoodieStorageConfig
STRATEGY = ("hoodie.compaction.strategy",
            "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy")
DEFAULT_STRATEGY = STRATEGY[1]
INCREMENTAL = ("hoodie.table.services.incremental.enabled", "true")      # HoodieWriteConfig (1.x)
_MB = 1024 * 1024
# The metrics map as Hudi's HashMap iterates it (what the plan file holds, in that order)
METRIC_ORDER = ("TOTAL_LOG_FILES", "TOTAL_IO_MB", "TOTAL_IO_READ_MB", "TOTAL_LOG_FILES_SIZE", "TOTAL_IO_WRITE_MB")


@dataclass(frozen=True, slots=True)
class CompactionOperation:
    """One file group a plan compacts: its slice (base file and log files, oldest first), the
    bytes of each, and the metrics Hudi records for it."""

    partition: str
    file_id: str
    base_instant_time: str
    base_file: str | None
    base_file_size: int
    log_files: tuple[str, ...]
    log_bytes: int
    metrics: Mapping[str, float]

    @property
    def file_group(self) -> FileGroupId:
        return (self.partition, self.file_id)

    def to_raw(self) -> dict[str, Any]:
        """`CompactionUtils.buildHoodieCompactionOperation` (plan version 2: names relative to
        the partition)."""
        info = SliceInfo(self.partition, self.file_id, self.base_instant_time, self.base_file or "", self.log_files)
        return info.compaction_operation(self.metrics)


@dataclass(frozen=True, slots=True)
class CompactionSchedule:
    """A compaction plan: the instant it takes (requested), its operations in plan order, the
    file groups with log files left out and why (held by a pending plan, under the log size
    threshold, beyond the target IO), and whether it was written (`scheduled`). `instant` is
    None when there is nothing to compact (`reason` says why)."""

    table_uri: str
    instant: Instant | None
    operations: tuple[CompactionOperation, ...]
    merge: MergeRules
    left_out: Mapping[FileGroupId, str] = field(default_factory=dict)
    reason: str = ""
    scheduled: bool = False
    missing_partitions: tuple[str, ...] = ()

    @property
    def bytes(self) -> int:
        return sum(op.base_file_size + op.log_bytes for op in self.operations)

    def plan(self, table_version: int) -> dict[str, Any]:
        """The HoodieCompactionPlan Hudi writes: version 2, no strategy, `extraMetadata` empty
        (`BaseHoodieCompactionPlanGenerator.getExtraMetadata`); Hudi 1.x (table versions 8 and
        9) adds `missingSchedulePartitions` (`CompactionStrategy.generateCompactionPlan`, a list
        when incremental table services are on), 0.14/0.15 have no such field (left null)."""
        return CompactionPlan.scheduled((op.to_raw() for op in self.operations),
                                        self.missing_partitions if table_version >= 8 else None)


def capture_metrics(slice_: FileSlice, default_base_size: int) -> dict[str, float]:
    """`CompactionStrategy.captureMetrics` (`FileSliceMetricUtils.addFileSliceCommonMetrics`):
    log files and bytes, read IO (base and logs, whole MB), write IO (the base file's size, or
    `hoodie.parquet.max.file.size` without one) and their sum."""
    logs = sum(log.size for log in slice_.log_files if log.size >= 0)
    base = slice_.base_file.size if slice_.base_file is not None else 0
    read = (base + logs) // _MB
    write = (base if base > 0 else default_base_size) // _MB
    values = {"TOTAL_LOG_FILES": float(len(slice_.log_files)), "TOTAL_IO_MB": float(read + write),
              "TOTAL_IO_READ_MB": float(read), "TOTAL_LOG_FILES_SIZE": float(logs), "TOTAL_IO_WRITE_MB": float(write)}
    return {key: values[key] for key in METRIC_ORDER}


def order_and_filter(operations: list[CompactionOperation], threshold: int, target_io: int
                     ) -> tuple[list[CompactionOperation], dict[FileGroupId, str]]:
    """`LogFileSizeBasedCompactionStrategy.orderAndFilter`: operations whose log bytes reach
    `hoodie.compaction.logfile.size.threshold`, largest log bytes first (a stable sort), then
    `BoundedIOCompactionStrategy.orderAndFilter`: taken while the target IO left is above 0."""
    left_out: dict[FileGroupId, str] = {}
    kept = []
    for op in operations:
        if op.metrics["TOTAL_LOG_FILES_SIZE"] >= threshold:
            kept.append(op)
        else:
            left_out[op.file_group] = (f"{int(op.metrics['TOTAL_LOG_FILES_SIZE'])} log bytes, under "
                                       f"{LOG_SIZE_THRESHOLD[0]}={threshold}")
    kept.sort(key=lambda op: -int(op.metrics["TOTAL_LOG_FILES_SIZE"]))
    chosen = []
    remaining = target_io
    for op in kept:
        if remaining > 0:
            remaining -= int(op.metrics["TOTAL_IO_MB"])
            chosen.append(op)
        else:
            left_out[op.file_group] = f"beyond {TARGET_IO[0]}={target_io} MB for one compaction"
    return chosen, left_out


def _earliest_pending_write(table: Table) -> Instant | None:
    writes = table.timeline.with_actions({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING}).pending()
    return writes.first()


def plan_compaction(table: Table, options: Mapping[str, str] | None = None, *,
                    instant_time: str | None = None) -> CompactionSchedule:
    """What a compaction scheduled now would compact, as Hudi's scheduler decides, writing
    nothing. CompactionRefused (before anything) for a table whose merge Cleanline cannot
    reproduce (`timeline.services.refusals`). The instant time is a fresh one (or
    `instant_time`). A table version 6 single writer schedules nothing while a write older than
    the compaction is pending (`ScheduleCompactionActionExecutor.execute`, as `why` says);
    versions 8 and 9 schedule around it, leaving out the log files of delta commits not
    completed before the compaction (`BaseHoodieCompactionPlanGenerator.generateCompactionPlan`:
    `CompletionTimeQueryView.isCompletedBefore`)."""
    rules = check_reproducible(table, options)
    table.reload()
    props = writer_properties(table, options)
    strategy = (props.get(STRATEGY[0]) or DEFAULT_STRATEGY).strip()
    if strategy != DEFAULT_STRATEGY:
        raise CompactionRefused(table.uri, f"{STRATEGY[0]}={strategy}: Cleanline schedules with Hudi's default "
                                "strategy (LogFileSizeBasedCompactionStrategy) only")
    try:
        threshold, target_io, default_base = (number_setting(table, props, setting)
                                              for setting in (LOG_SIZE_THRESHOLD, TARGET_IO, PARQUET_MAX_FILE_SIZE))
    except CompactionSettingsError as exc:
        raise CompactionRefused(table.uri, str(exc).removeprefix(f"{table.uri}: ")) from None
    candidate = instant_time or table.new_instant_time()
    instant = Instant(candidate, COMPACTION, State.REQUESTED)
    uri = table.uri
    if table.version < 8:
        blocked = earlier_pending_write(table, compaction_settings(table, options), candidate)
        if blocked is not None:
            return CompactionSchedule(uri, None, (), rules, reason=blocked.why)
    listing = table.list_partitions()
    view = table.file_system_view(listing=listing)
    held: dict[FileGroupId, str] = {}
    for service in pending_services(table, listing):
        if service.kind is ServiceKind.LOG_COMPACTION:  # HoodieCompactionPlanGenerator.filterLogCompactionOperations
            continue
        for group in service.file_groups:
            held[group] = f"in the pending {service.kind.value} {service.instant.requested_time}"
    completion = dict(view.inputs.completion_times)
    operations: list[CompactionOperation] = []
    left_out: dict[FileGroupId, str] = {}
    for slice_ in view.latest_slices():
        group = (slice_.partition, slice_.file_id)
        if not slice_.log_files:
            continue
        if group in held:
            left_out[group] = held[group]
            continue
        logs = slice_.log_files
        if table.version >= 8:  # isCompletedBefore(compactionInstant, logFile.getDeltaCommitTime())
            logs = tuple(log for log in logs if _completed_before(log.instant_time, candidate, completion, view))
            if not logs:
                left_out[group] = "its log files belong to writes not completed before the compaction"
                continue
            slice_ = slice_._replace(log_files=logs)
        metrics = capture_metrics(slice_, default_base)
        base = slice_.base_file
        operations.append(CompactionOperation(
            slice_.partition, slice_.file_id, slice_.base_instant_time, base.name if base else None,
            base.size if base else 0, tuple(log.name for log in sorted(logs, key=lambda lf: lf.sort_key)),
            sum(log.size for log in logs), metrics))
    if not operations:
        reason = "no file group's latest slice has log files to compact" if not left_out else \
            "every file group with log files is left out: " + "; ".join(
                f"{p or '(root)'}/{f}: {why}" for (p, f), why in sorted(left_out.items()))
        return CompactionSchedule(uri, None, (), rules, left_out, reason)
    chosen, filtered = order_and_filter(operations, threshold, target_io)
    left_out |= filtered
    incremental = (props.get(INCREMENTAL[0]) or INCREMENTAL[1]).strip().lower() == "true"
    missing = tuple(dict.fromkeys(p for p, _ in filtered)) if incremental else ()
    if not chosen:
        return CompactionSchedule(uri, None, (), rules, left_out, "every candidate file group was filtered out by "
                                  "the strategy (LogFileSizeBasedCompactionStrategy.orderAndFilter)",
                                  missing_partitions=missing)
    return CompactionSchedule(uri, instant, tuple(chosen), rules, left_out, missing_partitions=missing)


def _completed_before(delta_commit: str, compaction: str, completion: Mapping[str, str], view: Any) -> bool:
    """`CompletionTimeQueryView.isCompletedBefore`: the delta commit completed, at a time
    before the compaction's instant time (an archived one counts as completed long before)."""
    done = completion.get(delta_commit) or view.inputs.archived_completion_times.get(delta_commit)
    if done is None:
        cursor = view.inputs.completion_cursor
        return cursor is not None and delta_commit < cursor
    return bool(done < compaction)


def write_plan(table: Table, schedule: CompactionSchedule) -> Instant:
    """`<t>.compaction.requested` holding the plan (`HoodieActiveTimeline.saveToCompactionRequested`).
    The caller holds the table's lock and has re-planned under it."""
    if schedule.instant is None:
        raise CompactionRefused(table.uri, f"nothing to schedule: {schedule.reason}")
    latest = table.timeline.commits_and_compaction().last()
    if latest is not None and latest.requested_time >= schedule.instant.requested_time:
        # ScheduleCompactionActionExecutor.execute: "Following instants have timestamps >= compactionInstant"
        raise CompactionRefused(table.uri, f"the instant {latest.requested_time} is not older than the compaction "
                                f"{schedule.instant.requested_time}")
    transition.write_state(table, schedule.instant, schedule.plan(table.version))
    table.reload()
    return schedule.instant


__all__ = ["DEFAULT_STRATEGY", "LOG_SIZE_THRESHOLD", "TARGET_IO", "CompactionOperation", "CompactionSchedule",
           "capture_metrics", "order_and_filter", "plan_compaction", "write_plan"]
