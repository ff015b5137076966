"""Why nothing is compacting: each reason Hudi's schedulers have for writing no compaction plan
now, from the table's settings (its writers' options, passed) and timeline, as a typed value
naming the setting or instant and what would change it. One rule per function, each naming the
Hudi class and method it follows. Reads only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from timeline.fsview import FileGroupId, FileSlice
from timeline.instant import CLUSTERING, COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant, instant_time_of
from timeline.services.mdt import MetadataTableCompaction
from timeline.services.pending import PendingService, ServiceKind
from timeline.services.settings import (
    INLINE,
    MAX_DELTA_COMMITS,
    MAX_DELTA_SECONDS,
    METADATA_MAX_DELTA_COMMITS,
    SCHEDULE_INLINE,
    TRIGGER,
    CompactionSettings,
)
from timeline.services.trigger import TriggerCheck
from timeline.table import Table


class ReasonKind(str, Enum):
    NOT_MERGE_ON_READ = "not merge-on-read"
    NOT_SCHEDULED_BY_WRITERS = "writers do not schedule"
    NO_DELTA_COMMITS = "no delta commits"
    TRIGGER_NOT_MET = "trigger not met"
    EARLIER_PENDING_WRITE = "earlier pending write"
    PENDING_COMPACTION = "pending compaction"
    PENDING_CLUSTERING = "pending clustering"
    NO_LOG_FILES = "no log files"
    METADATA_TABLE_BLOCKED = "metadata table blocked by pending instants"
    METADATA_TABLE_PENDING_COMPACTION = "metadata table compaction pending"
    METADATA_TABLE_TRIGGER_NOT_MET = "metadata table trigger not met"


@dataclass(frozen=True, slots=True)
class Reason:
    """One reason no compaction is scheduled now: its kind, the sentence saying why, what would
    change it, the setting (Hudi's key) or instant it names, the file groups it holds back, the
    Hudi rule it follows (class.method) and whether it stops every plan (`blocking`) or only
    leaves some file groups out."""

    kind: ReasonKind
    why: str
    change: str
    rule: str
    setting: str | None = None
    instant: Instant | None = None
    file_groups: tuple[FileGroupId, ...] = ()
    blocking: bool = True


@dataclass(frozen=True, slots=True)
class CompactionWhy:
    """The answer to "why is nothing compacting?": the instant time a compaction scheduled now
    would take (`candidate`), the settings read, the trigger's check, the file groups a plan
    would take now, whether a writer with these settings would schedule one at its next commit,
    and every reason it would not (the metadata table's among them)."""

    candidate: str
    settings: CompactionSettings
    trigger: TriggerCheck | None
    compactable: tuple[FileGroupId, ...]
    reasons: tuple[Reason, ...]
    metadata_table: MetadataTableCompaction | None = None

    @property
    def would_schedule(self) -> bool:
        return not any(r.blocking and not r.kind.name.startswith("METADATA_TABLE") for r in self.reasons)


def candidate_time(table: Table, now: datetime | None) -> str:
    """The instant time a compaction scheduled at `now` takes (the table's timeline zone)."""
    return instant_time_of(now if now is not None else datetime.now().astimezone(), table.config.timezone)


def not_merge_on_read(table: Table) -> Reason | None:
    """`ScheduleCompactionActionExecutor.execute`: "Can only compact table of type MERGE_ON_READ"."""
    if table.config.table_type.value == "MERGE_ON_READ":
        return None
    return Reason(ReasonKind.NOT_MERGE_ON_READ, f"{table.uri} is a {table.config.table_type.value} table: only "
                  "merge-on-read tables have log files to compact", "nothing: a copy-on-write table rewrites its "
                  "base files at every write", "ScheduleCompactionActionExecutor.execute", "hoodie.table.type")


def scheduling_off(settings: CompactionSettings) -> Reason | None:
    """`BaseHoodieTableServiceClient.inlineScheduleCompaction` / `inlineCompaction`: a writer
    schedules a compaction after its commit only with `hoodie.compact.inline` or
    `hoodie.compact.schedule.inline` on (HoodieWriteConfig's defaults: off); otherwise a
    separate job must (Spark streaming's async compaction, Flink's compaction operator,
    `HoodieCompactor`, the `run_compaction` procedure). Said when the options given set both off;
    when they set neither, said as a note (Spark's datasource turns inline on for merge-on-read
    unless async compaction is on: `DataSourceUtils.createHoodieConfig`)."""
    if settings.inline or settings.schedule_inline:
        return None
    inline, schedule = INLINE[0], SCHEDULE_INLINE[0]
    change = (f"{INLINE[0]}=true (compact after each commit) or {SCHEDULE_INLINE[0]}=true (write the plan for a "
              "separate job to run) in the writers' options, or run a compaction job (HoodieCompactor, Hudi's "
              "run_compaction procedure, a streaming writer's async compaction)")
    rule = "BaseHoodieTableServiceClient.inlineScheduleCompaction"
    if settings.inline is False:
        return Reason(ReasonKind.NOT_SCHEDULED_BY_WRITERS, f"the writers' options turn off {inline} and leave "
                      f"{schedule} off: no writer schedules a compaction after its commits", change, rule, inline)
    return Reason(ReasonKind.NOT_SCHEDULED_BY_WRITERS, f"the writers' options given set neither {inline} nor "
                  f"{schedule}: a writer with HoodieWriteConfig's defaults (Flink, the Java client, HoodieStreamer) "
                  "never schedules a compaction itself; Spark's datasource and SQL writers compact inline unless "
                  "async compaction is on (pass the writers' options to be sure)", change, rule, inline, blocking=False)


def trigger_not_met(settings: CompactionSettings, check: TriggerCheck) -> Reason | None:
    """`ScheduleCompactionActionExecutor.needCompact` with `hoodie.compact.inline.trigger.strategy`."""
    rule = "ScheduleCompactionActionExecutor.needCompact"
    if check.counted is None:
        return Reason(ReasonKind.NO_DELTA_COMMITS, "no delta commit on the active timeline since the last "
                      "compaction (getLatestDeltaCommitInfo finds none): nothing to compact",
                      "a write (a delta commit) to the table", rule)
    if check.due:
        return None
    count, since, elapsed = check.counted.count, check.counted.since.requested_time, check.elapsed or 0
    commits = f"{count} delta commits since {since}, fewer than {MAX_DELTA_COMMITS[0]}={settings.max_delta_commits}"
    seconds = f"{elapsed} s since {since}, less than {MAX_DELTA_SECONDS[0]}={settings.max_delta_seconds}"
    trigger = settings.trigger.value
    if trigger in ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST"):
        why, setting = commits, MAX_DELTA_COMMITS[0]
        change = f"{settings.max_delta_commits - count} more delta commits, or a lower {MAX_DELTA_COMMITS[0]}"
    elif trigger == "TIME_ELAPSED":
        why, setting = seconds, MAX_DELTA_SECONDS[0]
        change = f"{settings.max_delta_seconds - elapsed} more seconds, or a lower {MAX_DELTA_SECONDS[0]}"
    elif trigger == "NUM_OR_TIME":
        why, setting = f"{commits}, and {seconds}", MAX_DELTA_COMMITS[0]
        change = (f"{settings.max_delta_commits - count} more delta commits or {settings.max_delta_seconds - elapsed}"
                  " more seconds, or lower thresholds")
    else:  # NUM_AND_TIME
        why = " and ".join(s for s, short in ((commits, not check.enough_commits), (seconds, not check.enough_time))
                           if short)
        setting = MAX_DELTA_COMMITS[0] if not check.enough_commits else MAX_DELTA_SECONDS[0]
        change = "both thresholds met (more delta commits and more time), or lower thresholds"
    return Reason(ReasonKind.TRIGGER_NOT_MET, f"{TRIGGER[0]}={trigger}: {why}", change, rule, setting,
                  check.counted.since)


def earlier_pending_write(table: Table, settings: CompactionSettings, candidate: str) -> Reason | None:
    """`ScheduleCompactionActionExecutor.execute` on table version 6 (Hudi 0.14/0.15 refuse,
    1.x skips): with one writer (`hoodie.write.concurrency.mode` not a multi-writer mode) and a
    failed-writes policy other than LAZY, no compaction is scheduled while a write (the commits
    timeline's pending instants but compactions and log compactions:
    `filterPendingExcludingCompactionAndLogCompaction`) is pending with an instant time not
    later than the compaction's. Versions 8 and 9 have no such rule."""
    if table.version >= 8 or settings.multi_writer or settings.failed_writes_policy == "LAZY":
        return None
    writes = table.timeline.with_actions({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING}).pending()
    earliest = writes.first()
    if earliest is None or earliest.requested_time > candidate:
        return None
    return Reason(ReasonKind.EARLIER_PENDING_WRITE, f"the write {earliest.requested_time} ({earliest.action}, "
                  f"{earliest.state.name.lower()}) is pending and older than a compaction scheduled now "
                  f"({candidate}): a single writer schedules compaction only before its earliest pending write",
                  "the write completing, or rolled back if it failed (cleanline rollback --failed); or the "
                  "writers running with hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL or "
                  "hoodie.clean.failed.writes.policy=LAZY", "ScheduleCompactionActionExecutor.execute",
                  "hoodie.write.concurrency.mode", earliest)


def held_by_pending(candidates: Iterable[FileSlice], pending: Iterable[PendingService]) -> list[Reason]:
    """`BaseHoodieCompactionPlanGenerator.generateCompactionPlan`: file groups in a pending
    compaction (`getPendingCompactionOperations`) or clustering (`getFileGroupsInPendingClustering`)
    are left out of a new plan (a compaction plan does not leave out those of a pending log
    compaction: `HoodieCompactionPlanGenerator.filterLogCompactionOperations` is false). One
    reason per pending plan holding a file group with log files; blocking when it holds them
    all."""
    with_logs = {(s.partition, s.file_id) for s in candidates if s.log_files}
    reasons = []
    held: set[FileGroupId] = set()
    for service in pending:
        if service.kind is ServiceKind.LOG_COMPACTION:
            continue
        groups = tuple(g for g in service.file_groups if g in with_logs)
        if not groups:
            continue
        held |= set(groups)
        kind = (ReasonKind.PENDING_COMPACTION if service.kind is ServiceKind.COMPACTION
                else ReasonKind.PENDING_CLUSTERING)
        state = service.instant.state.name.lower()
        reasons.append(Reason(kind, f"the {service.kind.value} {service.instant.requested_time} ({state}) holds "
                              f"{len(groups)} file group(s) with log files: they stay out of any new plan until it "
                              "completes", f"the {service.kind.value} at {service.instant.requested_time} run to "
                              "completion (Hudi's run_compaction / run_clustering procedures, HoodieCompactor "
                              "--instant-time), or rolled back if it is stuck",
                              "BaseHoodieCompactionPlanGenerator.generateCompactionPlan", None, service.instant,
                              groups))
    blocking = bool(with_logs) and held >= with_logs
    return [Reason(r.kind, r.why, r.change, r.rule, r.setting, r.instant, r.file_groups, blocking) for r in reasons]


def no_log_files(candidates: Iterable[FileSlice]) -> Reason | None:
    """`BaseHoodieCompactionPlanGenerator.filterFileSlice`: only slices with log files (of
    completed delta commits, on table versions 8 and 9) are compacted; a plan with no operation
    is not written (`ScheduleCompactionActionExecutor.execute`)."""
    if any(s.log_files for s in candidates):
        return None
    return Reason(ReasonKind.NO_LOG_FILES, "no file group's latest slice has log files: every update so far went "
                  "to base files, so a plan would be empty", "updates or deletes written as log files",
                  "BaseHoodieCompactionPlanGenerator.filterFileSlice")


def metadata_table_reasons(state: MetadataTableCompaction | None) -> list[Reason]:
    """`HoodieBackedTableMetadataWriter.validateTimelineBeforeSchedulingCompaction` (a pending
    data-table instant at or before the metadata table's latest delta commit, one reason each; a
    pending compaction or log compaction of the metadata table) and its NUM_COMMITS trigger
    (`compactIfNecessary`, `hoodie.metadata.compact.max.delta.commits`)."""
    if state is None:
        return []
    rule = "HoodieBackedTableMetadataWriter.validateTimelineBeforeSchedulingCompaction"
    reasons = [Reason(ReasonKind.METADATA_TABLE_BLOCKED, f"the data table's {i.action} {i.requested_time} is "
                      f"{i.state.name.lower()}, at or before the metadata table's latest delta commit "
                      f"{state.latest_delta_commit}: the metadata table is not compacted while it is pending "
                      f"(its delta commits pile up: {state.delta_commits} since its last compaction)",
                      f"the data table's {i.action} {i.requested_time} completed, or rolled back if it failed "
                      "(cleanline rollback --failed; a pending table service run or rolled back)", rule, None, i)
               for i in state.blocking_instants]
    reasons += [Reason(ReasonKind.METADATA_TABLE_PENDING_COMPACTION, f"the metadata table's {p.kind.value} "
                       f"{p.instant.requested_time} is pending: no other is scheduled until it completes",
                       "the data table's next write runs it (runPendingTableServicesOperations), or it is rolled "
                       "back", rule, None, p.instant) for p in state.pending]
    if not state.due:
        reasons.append(Reason(ReasonKind.METADATA_TABLE_TRIGGER_NOT_MET, f"the metadata table has "
                              f"{state.delta_commits} delta commits since its last compaction, fewer than "
                              f"{METADATA_MAX_DELTA_COMMITS[0]}={state.max_delta_commits}",
                              f"{state.max_delta_commits - state.delta_commits} more data-table writes, or a "
                              f"lower {METADATA_MAX_DELTA_COMMITS[0]}", "HoodieBackedTableMetadataWriter."
                              "compactIfNecessary", METADATA_MAX_DELTA_COMMITS[0], blocking=False))
    return reasons


def collect(*found: Reason | None | list[Reason]) -> tuple[Reason, ...]:
    reasons: list[Reason] = []
    for item in found:
        if isinstance(item, list):
            reasons += item
        elif item is not None:
            reasons.append(item)
    return tuple(reasons)


def compactable(candidates: Iterable[FileSlice], pending: Iterable[PendingService]) -> tuple[FileGroupId, ...]:
    """The file groups a compaction plan would take now (`filterFileSlice`)."""
    held = {g for p in pending if p.kind is not ServiceKind.LOG_COMPACTION for g in p.file_groups}
    return tuple(sorted({(s.partition, s.file_id) for s in candidates if s.log_files} - held))


__all__ = ["CompactionWhy", "Reason", "ReasonKind", "candidate_time", "collect", "compactable",
           "earlier_pending_write", "held_by_pending", "metadata_table_reasons", "no_log_files", "not_merge_on_read",
           "scheduling_off", "trigger_not_met"]
