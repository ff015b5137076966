"""Where Hudi's archiver stops on the active timeline, rule by rule: the timelines it works on
(completed commits, instants modified after a time, the earliest pending write), each instant a
rule retains from (a pending write, the next compaction, a replacecommit not cleaned or a
pending clustering, the data table's timeline for a metadata table) and the keep counts the
cleaner raises. Pure functions of timelines and settings; `timeline.archive.rules` combines
them into each archiver's choice and names what blocks it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from timeline.archive.settings import ArchivalSettings
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.planner import SAVEPOINTED_TIMESTAMPS
from timeline.clean.retention import earliest_commit_to_retain
from timeline.exceptions import InvalidInstantError
from timeline.instant import (
    CLUSTERING,
    COMMIT,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    SAVEPOINT,
    Instant,
    format_instant_time,
    parse_instant_time,
)
from timeline.metadata.records import CleanerPlan
from timeline.timeline import Timeline


@dataclass(frozen=True, slots=True)
class KeepCounts:
    """The completed commits archival keeps: at most `max_instants` before it starts, then
    `min_instants`; both are the configured ones unless the cleaner's earliest commit to
    retain raised them (`ArchivalUtils.getMinAndMaxInstantsToKeep`)."""

    min_instants: int
    max_instants: int
    configured_min: int
    configured_max: int
    earliest_commit_to_retain: Instant | None = None

    @property
    def raised(self) -> bool:
        return self.min_instants != self.configured_min



def is_v2(table_version: int) -> bool:
    """`TimelineArchivers.getInstance`: table version 8 and later archive with V2 (the LSM
    timeline); earlier ones with V1 (`.hoodie/archived`)."""
    return table_version >= 8


# The timelines the archiver works on

def completed_commits(timeline: Timeline, *, is_mor: bool) -> Timeline:
    """`HoodieTable.getCompletedCommitsTimeline` (`HoodieTableMetaClient.getCommitsTimeline`
    completed): on MOR commit, deltacommit, replacecommit and (V2) clustering; on COW commit,
    replacecommit and (V2) clustering (`getCommitTimeline` in 0.15, `getCommitAndReplaceTimeline`
    in 1.x). A completed compaction is a commit, a completed clustering a replacecommit."""
    if is_mor:
        return timeline.commits().completed()
    return timeline.with_actions({COMMIT, REPLACE_COMMIT, CLUSTERING}).completed()


def modified_after_by_completion(timeline: Timeline, time_: str) -> Timeline:
    """`findInstantsModifiedAfterByCompletionTime` (Hudi 1.x): pending instants requested
    after `time_`, and instants completed after it that are not `time_` itself."""
    return timeline.filter(lambda i: (i.completion_time is None and i.requested_time > time_)
                           or (i.completion_time is not None and i.completion_time > time_
                               and i.requested_time != time_))


def earliest_pending_write(timeline: Timeline) -> Instant | None:
    """The earliest pending instant of `getWriteTimeline` (commit, deltacommit, replacecommit,
    compaction, log compaction; V2 also clustering): archival never passes it."""
    return timeline.writes().pending().first()


def commit_to_retain_for_pending(completed: Timeline, pending: Instant | None) -> Instant | None:
    """`getCommitInstantsToArchive` step 1: the greatest completed commit requested before the
    earliest pending write (or that pending write, when no commit precedes it). Commits from
    it on stay: the timeline keeps no hole before a pending write."""
    if pending is None:
        return None
    before = completed.filter(lambda i: i.requested_time < pending.requested_time).last()
    return before if before is not None else pending


def earliest_instant_to_retain_for_compaction(timeline: Timeline, max_delta_commits: int, *,
                                              table_version: int) -> Instant | None:
    """`CompactionUtils.getOldestInstantToRetainForCompaction` (0.15) /
    `getEarliestInstantToRetainForCompaction` (1.x): keep enough delta commits to schedule the
    next compaction. With `getDeltaCommitsSinceLatestCompaction`'s delta commits (every delta
    commit, pending ones too, after the latest completed compaction; all of them when there is
    none), fewer than `max_delta_commits` keep everything from the latest compaction (or the
    first delta commit); otherwise from the (n - max + 1)-th of them.

    V1 takes the latest completed commit or replacecommit (0.15's `getCommitTimeline`) and the
    delta commits requested after it; V2 the latest completed commit and the delta commits that
    completed after it was requested (or are pending and requested after it)."""
    latest = timeline.with_actions({COMMIT} if is_v2(table_version) else {COMMIT, REPLACE_COMMIT}).completed().last()
    deltas = timeline.with_actions({DELTA_COMMIT})
    if latest is not None:
        since = latest.requested_time
        after = (modified_after_by_completion(deltas, since) if is_v2(table_version)
                 else deltas.after(since)).instants
        right = latest
    elif deltas:
        after = deltas.instants
        right = after[0]
    else:
        return None
    if len(after) < max_delta_commits:
        return right
    return after[len(after) - max_delta_commits]


def earliest_replaced_savepoint_in_clean(timeline: Timeline, policy: CleanPolicy, plan: CleanerPlan) -> str | None:
    """`ClusteringUtils.getEarliestReplacedSavepointInClean` (1.x, HUDI-7779): the earliest
    savepoint the last clean saw, when a completed replacecommit lies between it and the
    clean's earliest instant to retain (the cleaner kept the files that replacecommit replaced
    for the savepoint; once the savepoint is deleted they wait for a later clean). Never with
    KEEP_LATEST_FILE_VERSIONS."""
    ectr = plan.earliest_instant_to_retain.time if plan.earliest_instant_to_retain else ""
    listed = plan.extra_metadata.get(SAVEPOINTED_TIMESTAMPS, "")
    earliest = sorted(listed.split(","))[0]
    if policy is CleanPolicy.KEEP_LATEST_FILE_VERSIONS or not ectr or not earliest or ectr <= earliest:
        return None
    replaced = timeline.with_actions({REPLACE_COMMIT}).completed()
    if any(earliest <= i.requested_time <= ectr for i in replaced):
        return earliest
    return None


def earliest_instant_to_retain_for_clustering(timeline: Timeline, plan: CleanerPlan | None, *, table_version: int,
                                              policy: CleanPolicy = CleanPolicy.KEEP_LATEST_COMMITS) -> Instant | None:
    """A replacecommit stays until the cleaner has removed the file groups it replaced (or the
    file-system view would show them again), and a pending clustering keeps the commit before it.

    The replace instants (every state; V2 also clustering) from the retain bound on stay: the
    bound is the last completed clean's earliest instant to retain (its plan's), or the clean's
    own time when the plan has none (KEEP_LATEST_FILE_VERSIONS); with no completed clean, the
    first replace instant. Both archivers move the bound back to the savepoint a replacecommit
    was cleaned around (`earliest_replaced_savepoint_in_clean`): Hudi 1.x's
    `ClusteringUtils.getEarliestInstantToRetainForClustering` (HUDI-7779), which
    `TimelineArchiverV1.getCommitInstantsToArchive` calls as `TimelineArchiverV2` does. V1 also
    keeps, as 0.15's `getOldestInstantToRetainForClustering` did, the last completed commit
    before the first inflight replacecommit: a version-6 table may still be written by 0.15,
    and each rule only keeps more."""
    v2 = is_v2(table_version)
    replaces = timeline.with_actions({REPLACE_COMMIT, CLUSTERING} if v2 else {REPLACE_COMMIT})
    if not replaces:
        return None
    last_clean = timeline.cleans().completed().last()
    if last_clean is not None:
        plan = plan or CleanerPlan()
        ectr = plan.earliest_instant_to_retain.time if plan.earliest_instant_to_retain else ""
        savepoint = earliest_replaced_savepoint_in_clean(timeline, policy, plan)
        bound = savepoint or ectr or last_clean.requested_time
        retain = replaces.filter(lambda i: i.requested_time >= bound).first()
    else:
        retain = replaces.first()
    if not v2:
        inflight = replaces.filter(lambda i: i.is_inflight).first()
        if inflight is not None:
            before = timeline.commits().completed().filter(
                lambda i: i.requested_time < inflight.requested_time).last()
            if before is not None and (retain is None or retain.sort_key > before.sort_key):
                retain = before
    return retain


def earliest_instant_for_metadata_archival(data_timeline: Timeline, *, beyond_savepoint: bool) -> Instant | None:
    """`TimelineUtils.getEarliestInstantForMetadataArchival`: on the data table's active
    timeline, the earlier of its first commit (`getCommitsTimeline`, any state; with
    `hoodie.archive.beyond.savepoint`, the first commit or savepoint whose time no savepoint
    has, `getFirstNonSavepointCommit`) and its first pending instant of any action
    (`filterInflightsAndRequested`). A metadata table archives nothing from it on
    (`HoodieTableMetadataUtil#processRollbackMetadata` needs those instants)."""
    if beyond_savepoint:
        commit = data_timeline.with_actions({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING,
                                             SAVEPOINT}).first_non_savepoint()
    else:
        commit = data_timeline.commits().first()
    pending = data_timeline.pending().first()
    if commit is not None and pending is not None:
        return commit if commit.requested_time < pending.requested_time else pending
    return commit or pending


def cleaner_earliest_commit_to_retain(timeline: Timeline, clean: CleanConfig, latest: Instant | None) -> Instant | None:
    """`ArchivalUtils.getEarliestCommitToRetain`: `CleanerUtils.getEarliestCommitToRetain` on the
    active commits timeline (commit, deltacommit, replacecommit, clustering; every state), its
    hours cutoff counted back from the latest completed commit rather than from now. A latest
    commit time Hudi cannot parse (`HoodieInstantTimeGenerator.parseDateFromInstantTime`:
    fewer than 14 digits, `00000000000000`, ...) gives none, whatever the policy."""
    if latest is None:
        return None  # no completed commit: no policy retains anything
    try:
        moment = parse_instant_time(latest.requested_time).astimezone()  # the JVM's (here: this process's) zone
    except InvalidInstantError:
        return None
    commits = timeline.commits()
    if clean.policy is CleanPolicy.KEEP_LATEST_COMMITS:
        return earliest_commit_to_retain(commits, clean)
    if clean.policy is CleanPolicy.KEEP_LATEST_BY_HOURS:
        cutoff = format_instant_time((moment - timedelta(hours=clean.hours_retained)).astimezone())
        return commits.completed().filter(lambda i: i.requested_time >= cutoff).first()
    return None


def min_and_max_instants_to_keep(timeline: Timeline, settings: ArchivalSettings, clean: CleanConfig, *,
                                 is_mor: bool) -> KeepCounts:
    """`ArchivalUtils.getMinAndMaxInstantsToKeep`: when the cleaner retains from a commit
    (`cleaner_earliest_commit_to_retain`) and keeping the completed commits after it plus two
    needs more than `hoodie.keep.min.commits`, that becomes the minimum and the maximum rises
    by as much (HUDI-6370: archival never runs ahead of the cleaner)."""
    completed = completed_commits(timeline, is_mor=is_mor)
    ectr = cleaner_earliest_commit_to_retain(timeline, clean, completed.last())
    low, high = settings.min_commits, settings.max_commits
    if ectr is not None:
        needed = len(completed.after(ectr.requested_time)) + 2
        if low < needed:
            return KeepCounts(needed, needed + high - low, low, high, ectr)
    return KeepCounts(low, high, low, high)


__all__ = [
    "KeepCounts", "cleaner_earliest_commit_to_retain", "commit_to_retain_for_pending", "completed_commits",
    "earliest_instant_for_metadata_archival", "earliest_instant_to_retain_for_clustering",
    "earliest_instant_to_retain_for_compaction", "earliest_pending_write", "earliest_replaced_savepoint_in_clean",
    "is_v2", "min_and_max_instants_to_keep", "modified_after_by_completion",
]
