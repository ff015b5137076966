"""The clean planner: chooses exactly the files Apache Hudi's CleanPlanner would choose
(hudi-format.md §7) and records, for every file of every considered slice, whether it goes
and why. Pure: it reads the table and writes nothing. What protects a file whatever the policy
(savepoints, pending compactions and clusterings) is `timeline/clean/protection.py`."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import repeat
from typing import Any, NamedTuple

from timeline.clean.config import CleanConfig, CleanConfigError, CleanPolicy
from timeline.clean.protection import (
    Protection,
    clustering_reason,
    compaction_reason,
    pending_reason,
    pending_write_reason,
    protection_conflicts,
    read_protection,
    slice_savepoint,
)
from timeline.clean.retention import earliest_commit_to_retain, hours_cutoffs
from timeline.fsview import (
    FileGroup,
    FileSlice,
    TableListing,
    ViewInputs,
    build_view,
    list_partition,
    list_partitions,
    top_folders,
)
from timeline.instant import CLUSTERING, REPLACE_COMMIT, RESTORE, ROLLBACK, Instant, State
from timeline.internal.forks import fork_map
from timeline.mdt.listing import ListingSource, describe, resolve, table_listing
from timeline.metadata import STREAM_CHECK_BYTES
from timeline.metadata.records import CleanerPlan, CleanFileInfo, CleanMetadata, CommitMetadata, InstantRef
from timeline.perf import paused_gc
from timeline.storage import FileStatus, Storage
from timeline.table import Table
from timeline.timeline import Timeline

log = logging.getLogger(__name__)
SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"
CLEANER_PLAN_VERSION = 2


class FileDecision(NamedTuple):
    """One file of a considered slice: deleted or kept, and why. (A NamedTuple: a plan makes
    one per file of the table.)"""

    partition: str
    file_name: str
    path: str
    size: int
    delete: bool
    reason: str
    file_id: str
    base_instant_time: str
    is_bootstrap_base_file: bool = False


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """A plan and its explanation. `decisions` holds every file of every slice the planner
    looked at; the files to delete are those with `delete` set."""

    table: str
    policy: CleanPolicy
    earliest_instant_to_retain: Instant | None
    last_completed_commit: str
    decisions: tuple[FileDecision, ...]
    partitions_to_delete: tuple[str, ...]
    partitions_considered: tuple[str, ...]
    incremental: bool
    savepointed_timestamps: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    # the latest time (requested or completed) on the timeline the plan was made from
    timeline_end: str = ""
    # where the files were listed from: "storage" or "metadata" (`timeline.mdt.listing`)
    listing: str = "storage"

    @property
    def files_to_delete(self) -> list[FileDecision]:
        return [d for d in self.decisions if d.delete]

    @property
    def files_kept(self) -> list[FileDecision]:
        return [d for d in self.decisions if not d.delete]

    @property
    def bytes_to_delete(self) -> int:
        return sum(d.size for d in self.decisions if d.delete)

    @property
    def is_empty(self) -> bool:
        """Hudi persists a plan only when it deletes a file or a partition."""
        return not self.partitions_to_delete and not any(d.delete for d in self.decisions)

    def to_record(self) -> CleanerPlan:
        """The plan as HoodieCleanerPlan version 2, for `<t>.clean.requested`."""
        per_partition: dict[str, list[CleanFileInfo]] = {}
        new = tuple.__new__  # once per file deleted: CleanFileInfo without its Python-level __new__
        for d in self.decisions:
            if d.delete:
                found = per_partition.get(d.partition)
                if found is None:
                    found = per_partition[d.partition] = []
                found.append(new(CleanFileInfo, (d.partition, d.path, d.is_bootstrap_base_file)))
        ectr = self.earliest_instant_to_retain
        # CleanPlanActionExecutor.prepareExtraMetadata: an empty map when no savepoint exists.
        extra = {SAVEPOINTED_TIMESTAMPS: ",".join(self.savepointed_timestamps)} if self.savepointed_timestamps else {}
        return CleanerPlan(
            earliest_instant_to_retain=None if ectr is None else InstantRef(ectr.requested_time, ectr.action,
                                                                             State.COMPLETED.name),
            last_completed_commit=self.last_completed_commit, policy=self.policy.value,
            files={p: tuple(infos) for p, infos in per_partition.items()},
            partitions_to_delete=self.partitions_to_delete, extra_metadata=extra, version=CLEANER_PLAN_VERSION)


@dataclass(frozen=True, slots=True)
class PlanContext:
    """Everything planning one partition needs, read once from the timeline. Picklable, so
    Spark executors plan their partitions with it (`timeline/spark/clean.py`)."""

    table_uri: str
    base: str
    config: CleanConfig
    ectr: Instant | None
    inputs: ViewInputs
    protection: Protection
    with_logs: bool


@dataclass(frozen=True, slots=True)
class PlanStart:
    """The table-level half of a plan: its header, the context for partitions, and which
    partitions to list (None: every partition)."""

    header: dict[str, Any]
    context: PlanContext | None
    partitions: tuple[str, ...] | None
    incremental: bool
    notes: tuple[str, ...]


def start_plan(table: Table, config: CleanConfig, *, now: datetime | None = None) -> PlanStart:
    """Decide the retained window and the partitions to consider; read what protects files.

    Bootstrap source files are never planned: with `hoodie.clean.delete.bootstrap.base.file`
    off (Hudi's default) Hudi keeps them too; turning it on for a bootstrapped table is refused,
    since Cleanline does not read the bootstrap index that maps them."""
    if config.delete_bootstrap_base_file and table.config.bootstrap_base_path:
        raise CleanConfigError(
            f"{table.uri}: hoodie.clean.delete.bootstrap.base.file is on, but Cleanline does not read the "
            "bootstrap index to find bootstrap source files; plan with it off (Hudi's default) to keep them")
    table.ensure_intact()
    if config.policy is CleanPolicy.KEEP_LATEST_BY_HOURS and now is None:
        now = datetime.now(UTC)  # one moment for the window and its note
    timeline = table.timeline
    ectr = earliest_commit_to_retain(timeline, config, now=now, timeline_timezone=table.config.timezone)
    last_commit = timeline.commits().completed().last()
    savepoints = tuple(i.requested_time for i in timeline.savepoints().completed())
    header = dict(
        table=table.uri, policy=config.policy, earliest_instant_to_retain=ectr,
        last_completed_commit=last_commit.requested_time if last_commit else "",
        savepointed_timestamps=savepoints if table.config.is_partitioned else (),
        timeline_end=max((t for i in timeline for t in (i.requested_time, i.completion_time or "")), default=""),
    )
    pending = tuple(f"clean {i.requested_time} is still pending ({i.state.name.lower()}): run it first"
                    for i in timeline.cleans().pending()) + _hours_note(table, config, now)
    by_commits = config.policy is not CleanPolicy.KEEP_LATEST_FILE_VERSIONS
    if by_commits and ectr is None:
        return PlanStart(header, None, (), False, (_why_no_ectr(timeline, config), *pending))
    incremental_from, note = _incremental_start(table, config) if by_commits else (None, "")
    partitions = None
    if incremental_from is not None and ectr is not None:
        partitions = tuple(_partitions_touched(table, timeline, incremental_from, ectr.requested_time))
    context = PlanContext(
        table_uri=table.uri, base=table.base, config=config, ectr=ectr, inputs=table.view_inputs(),
        protection=read_protection(table),
        with_logs=table.config.is_mor or table.config.get("hoodie.table.cdc.enabled", "false") == "true",
    )
    return PlanStart(header, context, partitions, incremental_from is not None,
                     ((note,) if note else ()) + pending)


def _hours_note(table: Table, config: CleanConfig, now: datetime | None) -> tuple[str, ...]:
    if config.policy is not CleanPolicy.KEEP_LATEST_BY_HOURS:
        return ()
    in_table, in_process = hours_cutoffs(now or datetime.now(UTC), config.hours_retained,
                                         table.config.timezone)
    if in_table == in_process:
        return ()
    return (f"the {config.hours_retained}-hour cutoff is {in_table} in the table's timeline zone "
            f"({table.config.timezone}) and {in_process} in this process's zone, which stands in for the zone of "
            f"Hudi's JVM (HoodieInstantTimeGenerator); the earlier, {min(in_table, in_process)}, is used",)


def finish_plan(start: PlanStart, results: Iterable[tuple[str, list[FileDecision], bool]]) -> CleanPlan:
    """Assemble a plan from each considered partition's decisions and deletion flag."""
    ordered = sorted(results, key=lambda r: r[0])
    return CleanPlan(**start.header, decisions=tuple(d for _, files, _ in ordered for d in files),
                     partitions_to_delete=tuple(p for p, _, drop in ordered if drop and p),
                     partitions_considered=tuple(p for p, _, _ in ordered),
                     incremental=start.incremental, notes=start.notes)


def plan_clean(table: Table, config: CleanConfig, *, now: datetime | None = None,
               listing: TableListing | None = None, processes: int = 1,
               source: ListingSource | str = ListingSource.STORAGE) -> CleanPlan:
    """Plan a clean of `table` under `config`, as of `now` for the hours policy. With
    `processes` > 1, a full plan of a table on a local disk is listed and planned by that many
    processes, each taking a share of the table's folders (`timeline.internal.forks.fork_map`); the
    plan is the same. `source` is where the files are listed from (`timeline.mdt.listing`:
    storage, the metadata table, or Hudi's choice); a plan from the metadata table says so in
    its notes."""
    start = start_plan(table, config, now=now)
    context = start.context
    if context is None:
        return finish_plan(start, ())
    used = resolve(table, source)
    if used is ListingSource.METADATA:
        start = replace(start, notes=(*start.notes, describe(used)))
        if listing is None:
            listing, _ = table_listing(table, used, partitions=start.partitions)
        elif start.partitions is not None:
            listing = TableListing({p: listing.partitions.get(p, ()) for p in start.partitions})
    elif start.partitions is not None:
        listing = list_some(table, start.partitions)
    elif listing is None and processes > 1 and table.storage.cpu_bound_listing:
        # the base is listed once, here, and its folders dealt out: every share walks what this
        # listing saw, so a folder appearing meanwhile cannot shift one share against another
        folders = top_folders(table.storage, table.base)
        if folders is not None and len(folders) > 1:
            storage, base, dealt = table.storage, table.base, folders

            def work(index: int, count: int) -> Share:  # (0, 1): everything, when nothing forks
                return _plan_share(context, storage, base, dealt[index::count])

            shares = fork_map(work, min(processes, len(folders)))
            log.info("%s: planned %d folders in %d processes", table.uri, len(folders), len(shares))
            return finish_plan(start, [r for share in shares for r in _unpack_share(share)])
        listing = table.list_partitions()
    else:
        listing = listing or table.list_partitions()
    with paused_gc():
        plan = finish_plan(start, [
            (partition, *plan_partition(context, table.storage, partition, files))
            for partition, files in listing.partitions.items()])
    return replace(plan, listing=used.value) if used is ListingSource.METADATA else plan


# One share of a table, as it travels from a planning process: (partition, whether it goes, how
# many decisions it has) in listing order, and every decision as columns, one list per field (a
# list of strings pickles in C; a tuple per file goes through Python once each).
Share = tuple[list[tuple[str, bool, int]], tuple[list[Any], ...]]


def _plan_share(context: PlanContext, storage: Storage, base: str, folders: list[str]) -> Share:
    """List the partitions below some of the base's folders and plan them."""
    with paused_gc():
        listing = list_partitions(storage, base, within=folders)
        partitions: list[tuple[str, bool, int]] = []
        decisions: list[FileDecision] = []
        for partition, files in listing.partitions.items():
            found, drop = plan_partition(context, storage, partition, files)
            partitions.append((partition, drop, len(found)))
            decisions += found
        return partitions, tuple(map(list, zip(*decisions)))


def _unpack_share(share: Share) -> Iterator[tuple[str, list[FileDecision], bool]]:
    partitions, columns = share
    with paused_gc():
        decisions = list(map(tuple.__new__, repeat(FileDecision), zip(*columns)))
    first = 0
    for partition, drop, count in partitions:
        yield partition, decisions[first:first + count], drop
        first += count


def _why_no_ectr(timeline: Timeline, config: CleanConfig) -> str:
    completed = len(timeline.commits_and_compaction().completed())
    if config.policy is CleanPolicy.KEEP_LATEST_BY_HOURS:
        # CleanerUtils.getEarliestCommitToRetain: the first completed commit at or after the
        # cutoff; with none inside the window there is no earliest commit to retain
        return f"no completed commit in the last {config.hours_retained} hours retained, so none to retain from"
    if completed <= config.commits_retained:
        return f"{completed} completed commits, not more than the {config.commits_retained} retained"
    return "a pending write holds the retained window at the start of the timeline"


def list_some(table: Table, partitions: Iterable[str]) -> TableListing:
    """List only the given partitions; a partition that is gone lists as empty."""
    return TableListing({partition: list_partition(table.storage, table.base, partition) for partition in partitions})


# Incremental partition selection (CleanPlanner.getPartitionPathsForCleanByCommits)

def _incremental_start(table: Table, config: CleanConfig) -> tuple[str | None, str]:
    """The previous clean's earliest commit to retain, when incremental planning may start
    from it; otherwise None and why a full listing is needed."""
    if not config.incremental:
        return None, "incremental planning is off: every partition is listed"
    last_clean = table.timeline.cleans().completed().last()
    if last_clean is None:
        return None, "no earlier clean: every partition is listed"
    metadata = table.read(last_clean, CleanMetadata, fields=("earliest_commit_to_retain", "extra_metadata"))
    if not metadata.raw:
        return None, f"the last clean {last_clean.requested_time} is empty: every partition is listed"
    previous = metadata.earliest_commit_to_retain
    if not previous:
        return None, f"the last clean {last_clean.requested_time} kept no commit window: every partition is listed"
    if table.timeline.commits().is_before_start(previous):
        return None, f"the last clean's retained commit {previous} is archived: every partition is listed"
    listed = metadata.extra_metadata.get(SAVEPOINTED_TIMESTAMPS, "")
    current = {i.requested_time for i in table.timeline.savepoints().completed()}
    gone = [t for t in listed.split(",") if t and t not in current]
    if gone:
        return None, f"savepoint {gone[0]} was removed since the last clean: every partition is listed"
    return previous, f"incremental: partitions written since {previous}"


def _partitions_touched(table: Table, timeline: Timeline, start: str, end: str) -> list[str]:
    """CleanPlanner.getPartitionPathsForIncrementalCleaning on Hudi master (PR #18016,
    getWritePartitionPathsWithExistingFileGroupsModified): the partitions in which the completed
    commits from the previous to the new earliest commit to retain left older files behind:
    every partition of a replacecommit's `partitionToReplaceFileIds`, and partitions with a
    write stat that updated an existing file group (`prevCommit` set). Partitions that only
    received new file groups have nothing to clean."""
    partitions: set[str] = set()
    for instant in timeline.commits().completed():
        if start <= instant.requested_time < end:
            streamed = _touched_as_streamed(table, instant)
            if streamed is not None:
                partitions.update(streamed)
                continue
            content = table.read(instant, CommitMetadata)
            for partition, stats in content.write_stats.items():
                if any(stat.updates_a_group for stat in stats):
                    partitions.add(partition)
            partitions.update(content.replaced_file_ids)
    return sorted(partitions)


def _touched_as_streamed(table: Table, instant: Instant) -> set[str] | None:
    """`_partitions_touched` for one commit above STREAM_CHECK_BYTES, read as a stream (a 200 MB
    commit decodes to gigabytes): the partitions with a write stat that updated an existing file
    group. None, to decode it whole, for a smaller file, one that does not stream, or a
    replacecommit or clustering (its replaced file groups are another map)."""
    if instant.action in (REPLACE_COMMIT, CLUSTERING):
        return None
    status = table.timeline.files_of(instant).get(State.COMPLETED)
    if status is None or status.size <= STREAM_CHECK_BYTES or not table.streams_write_stats(status.path):
        return None
    with table.stream_write_stats(status.path) as entries:
        if entries is None:
            return None
        return {partition for partition, stat in entries if stat is not None and stat.updates_a_group}


# Per partition

class _Decider:
    """Turns slices into file decisions for one partition."""

    def __init__(self, context: PlanContext, storage: Storage, partition: str) -> None:
        folder = Storage.join(context.base, partition) if partition else context.base
        self.prefix = storage.uri(folder).rstrip("/") + "/"
        self.partition = partition
        self.with_logs = context.with_logs
        self.decisions: list[FileDecision] = []

    def slice(self, piece: FileSlice, delete: bool, reason: str) -> None:
        # once per file of the table: FileDecision built without its Python-level __new__
        add, prefix, partition, new = self.decisions.append, self.prefix, self.partition, tuple.__new__
        base = piece.base_file
        if base is not None:
            add(new(FileDecision, (partition, base.name, prefix + base.name, base.size, delete, reason,
                                   piece.file_id, piece.base_instant_time, False)))
        for log in piece.log_files:
            goes = delete and self.with_logs
            why = reason if goes or not delete else "log file of a copy-on-write table: Hudi leaves it"
            add(new(FileDecision, (partition, log.name, prefix + log.name, log.size, goes, why,
                                   piece.file_id, piece.base_instant_time, False)))


def plan_partition(context: PlanContext, storage: Storage, partition: str,
                   files: tuple[FileStatus, ...]) -> tuple[list[FileDecision], bool]:
    """The decisions for one partition's files, and whether the partition itself goes."""
    decider = _Decider(context, storage, partition)
    view = build_view(TableListing({partition: files}), context.inputs)
    groups = list(view.all_file_groups(partition))
    live = [g for g in groups if g.replaced_by is None]
    ectr, protection, config = context.ectr, context.protection, context.config
    for group in groups:
        if group.replaced_by is not None:
            _replaced(decider, group, ectr, protection)
    if config.policy is CleanPolicy.KEEP_LATEST_FILE_VERSIONS:
        for group in live:
            _keep_versions(decider, group, config.file_versions_retained, protection)
        drop = not live
    else:
        assert ectr is not None
        for group in live:
            _keep_commits(decider, group, config.policy, ectr, protection)
        # noSubsequentReplaceCommit: no file group of this partition (still listed) was
        # replaced at or after the earliest commit to retain.
        drop = not live and not any((g.replaced_by or "") >= ectr.requested_time for g in groups)
    return decider.decisions, drop


def _replaced(decider: _Decider, group: FileGroup, ectr: Instant | None, protection: Protection) -> None:
    """getReplacedFilesEligibleToClean: groups replaced before the ECTR (any, without one)."""
    replaced = group.replaced_by or ""
    eligible = ectr is None or replaced < ectr.requested_time
    for piece in group.slices:
        # isFileSliceExistInSavepointedFiles: any file of the slice, base or log, in a savepoint.
        savepoint = slice_savepoint(piece, protection.savepointed)
        if not eligible:
            decider.slice(piece, False, f"replaced by replacecommit {replaced}, which is inside the retained window "
                                        f"(earliest retained commit {ectr.requested_time if ectr else ''})")
        elif savepoint is not None:
            decider.slice(piece, False, f"savepoint {savepoint}")
        elif (pending := pending_reason(group, piece, protection)) is not None:
            decider.slice(piece, False, pending)  # Cleanline's own: Hudi's getReplacedFilesEligibleToClean has none
        else:
            decider.slice(piece, True, f"file group replaced by replacecommit {replaced}"
                          + (f", before the earliest retained commit {ectr.requested_time}" if ectr else ""))


def _keep_commits(decider: _Decider, group: FileGroup, policy: CleanPolicy, ectr: Instant,
                  protection: Protection) -> None:
    """getFilesToCleanKeepingLatestCommits (also the hours policy, with no retained count)."""
    slices = group.slices
    if not slices:
        return
    cutoff = ectr.requested_time
    kept_before, inside = _window_reasons(cutoff)
    last_version = slices[0].base_instant_time
    before = next((s.base_instant_time for s in slices if s.base_instant_time < cutoff), None)
    superseded = f"older than the earliest retained commit {cutoff} and superseded by slice {before or last_version}"
    savepointed = protection.savepointed
    guarded = bool(protection.pending_ops or protection.clustering or protection.pending_writes)
    for piece in slices:  # once per slice of the table: the checks that cannot apply are skipped
        t = piece.base_instant_time
        savepoint = slice_savepoint(piece, savepointed) if savepointed else None
        if savepoint is not None:
            decider.slice(piece, False, f"savepoint {savepoint}")
        elif t == last_version:
            decider.slice(piece, False, "latest version")
        elif t == before:
            decider.slice(piece, False, kept_before)
        elif t >= cutoff:
            decider.slice(piece, False, inside)
        elif guarded and (pending := pending_reason(group, piece, protection)) is not None:
            decider.slice(piece, False, pending)
        else:
            decider.slice(piece, True, superseded)


@functools.lru_cache(maxsize=8)
def _window_reasons(cutoff: str) -> tuple[str, str]:
    """The reasons for the latest slice before the retained window and for a slice inside it
    (one string each per plan, not one per slice)."""
    return (f"latest version before the retained window (earliest retained commit {cutoff}): queries started "
            "before it may read it", f"inside the retained window (at or after {cutoff})")


def _keep_versions(decider: _Decider, group: FileGroup, retained: int, protection: Protection) -> None:
    """getFilesToCleanKeepingLatestVersions."""
    # Slices a pending compaction reads are left out of the count, and the compaction's own
    # version counts as one kept (isFileGroupInPendingMajorOrMinorCompaction: keepVersions--).
    keep = retained - (1 if group.id in protection.pending_ops else 0)
    kept = 0
    for piece in group.slices:
        compaction = compaction_reason(group, piece, protection)
        if compaction is not None:
            decider.slice(piece, False, compaction)
            continue
        if kept < keep:
            kept += 1
            decider.slice(piece, False, "latest version" if kept == 1 else f"version {kept} of {retained} retained")
            continue
        savepoint = slice_savepoint(piece, protection.savepointed)
        clustering = clustering_reason(piece, protection) or pending_write_reason(piece, protection)
        if savepoint is not None:
            decider.slice(piece, False, f"savepoint {savepoint}")
        elif clustering is not None:
            decider.slice(piece, False, clustering)
        else:
            decider.slice(piece, True, f"older than the {retained} newest versions retained")


def plan_invalidations(table: Table, plan: CleanPlan) -> list[str]:
    """Why the table's timeline as it is now (re-read under the table lock) invalidates a plan
    made earlier: a file it deletes is now protected (`protection_conflicts`), or a rollback or
    restore was requested after the plan was made (either can make a superseded file the
    latest again). Empty: the plan may be published."""
    reasons = protection_conflicts(table, [(d.partition, d.path) for d in plan.files_to_delete])
    if plan.timeline_end:
        reasons += [f"{i.action} {i.requested_time} was requested after the plan was made"
                    for i in table.timeline if i.action in (ROLLBACK, RESTORE) and i.requested_time > plan.timeline_end]
    return reasons
