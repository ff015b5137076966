"""Hudi's archiver rules: which instants of the active timeline archival moves to the archived
timeline, and what holds the others back.

Two archivers, chosen by table version as Hudi chooses them (`TimelineArchivers.getInstance`):

- **V1**, table version 6: Hudi 0.15's `org.apache.hudi.client.HoodieTimelineArchiver` (the one
  that writes `.hoodie/archived`; Hudi 1.x keeps a port of it as `TimelineArchiverV1`). Commits
  by `getCommitInstantsToArchive`, cleans and rollbacks by their own counts
  (`getCleanInstantsToArchive`), then everything not yet compacted into the metadata table is
  held back (`getInstantsToArchive`).
- **V2**, table versions 8 and 9: Hudi 1.x's `TimelineArchiverV2` (the LSM timeline's archiver).
  One earliest instant to retain, the least of several candidates (`getCommitInstantsToArchive`),
  and cleans and rollbacks only older than the newest commit archived
  (`getCleanAndRollbackInstantsToArchive`).

A metadata table's timeline is archived by the same archiver of its version with the settings
its data table's writer gives it (`timeline.archive.settings.metadata_table_settings`) and one
rule more: nothing from the data table's earliest active commit or pending instant on
(`earliest_instant_for_metadata_archival`).

Every function is pure: it takes timelines and settings. `timeline.archive.plan` reads the table
(the last clean's plan, the metadata table's timeline, the LSM history) and builds the plan. The
`Blocker`s say, for each rule that holds back a commit the counts alone would archive, which
instant does it, since when and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from timeline.archive.retain import (
    KeepCounts,
    cleaner_earliest_commit_to_retain,
    commit_to_retain_for_pending,
    completed_commits,
    earliest_instant_for_metadata_archival,
    earliest_instant_to_retain_for_clustering,
    earliest_instant_to_retain_for_compaction,
    earliest_pending_write,
    earliest_replaced_savepoint_in_clean,
    is_v2,
    min_and_max_instants_to_keep,
    modified_after_by_completion,
)
from timeline.archive.settings import KEYS, ArchivalConfigError, ArchivalSettings, CompactionTrigger
from timeline.clean.config import CleanConfig
from timeline.instant import CLEAN, CLUSTERING, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, ROLLBACK, Instant
from timeline.metadata.records import CleanerPlan
from timeline.timeline import Timeline

# What blocks archival

class BlockerKind(str, Enum):
    """Why instants stay on the active timeline."""

    ARCHIVAL_DISABLED = "archival disabled"
    NOT_ENOUGH_COMMITS = "keep.max not exceeded"
    CLEAN_RETENTION = "clean retention"
    SAVEPOINT = "savepoint"
    PENDING_INSTANT = "pending instant"
    PENDING_COMPACTION = "pending compaction"
    PENDING_CLUSTERING = "pending clustering"
    COMPACTION_WINDOW = "delta commits for the next compaction"
    UNCLEANED_REPLACE = "replaced files not cleaned"
    METADATA_TABLE_COMPACTION = "metadata-table compaction lag"
    DATA_TABLE_TIMELINE = "data table's active timeline"
    LSM_MANIFEST = "broken LSM manifest"


@dataclass(frozen=True, slots=True)
class Blocker:
    """One reason archival holds instants back: its kind, the instant that causes it (the
    savepoint, the pending instant, the replacecommit not cleaned, the first commit the
    metadata table has not compacted, ...; None for table-wide reasons), since when (an
    instant time: when that instant was requested or completed, or the compaction or retention
    it dates from) and a sentence saying why."""

    kind: BlockerKind
    why: str
    instant: Instant | None = None
    since: str | None = None


@dataclass(frozen=True, slots=True)
class ArchivalInputs:
    """What the archiver reads besides the active timeline: the last completed clean's plan
    (its requested file, as `CleanerUtils.getCleanerPlan` reads it; None without a clean, or
    when no replace instant needs it), the pending replacecommits whose plan is a clustering
    (`clustering`, `ClusteringUtils.isClusteringInstant`, on every table version; only to name
    the blocker), and the metadata
    table: `metadata_table_available` (`isMetadataTableAvailable`: its `files` partition is
    complete) and the time of its latest completed compaction (None: none yet).
    `data_table_timeline`: set when the table is a metadata table (`table.isMetadataTable()`),
    its data table's active timeline."""

    timeline: Timeline
    table_version: int
    is_mor: bool
    last_clean_plan: CleanerPlan | None = None
    clustering: frozenset[str] = frozenset()
    metadata_table_available: bool = False
    metadata_table_compaction: str | None = None
    data_table_timeline: Timeline | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    """The archiver's choice: the instants to archive (highest state, timeline order), the
    counts it kept by, and what held the rest back."""

    instants: tuple[Instant, ...]
    keep: KeepCounts
    blockers: tuple[Blocker, ...]


# The two archivers

@dataclass(frozen=True, slots=True)
class _Rule:
    """One of the archiver's limits on commits: those requested at or after `boundary` stay
    (or, for a savepointed commit archival skips, only `boundary` itself), and the blocker it
    names."""

    boundary: str
    blocker: Blocker
    only: bool = False

    def excludes(self, commit: Instant) -> bool:
        if self.only:
            return commit.requested_time == self.boundary
        return commit.requested_time >= self.boundary


def _pending_kind(instant: Instant, clustering: frozenset[str]) -> BlockerKind:
    if instant.action in (COMPACTION, LOG_COMPACTION):
        return BlockerKind.PENDING_COMPACTION
    if instant.action == CLUSTERING or (instant.action == REPLACE_COMMIT and instant.requested_time in clustering):
        return BlockerKind.PENDING_CLUSTERING
    return BlockerKind.PENDING_INSTANT


def _pending_blocker(pending: Instant, kind: BlockerKind, keeps: str) -> Blocker:
    what = {BlockerKind.PENDING_COMPACTION: "compaction", BlockerKind.PENDING_CLUSTERING: "clustering"}.get(
        kind, pending.action)
    return Blocker(kind, f"{what} {pending.requested_time} is {pending.state.name.lower()}: archival keeps {keeps}, "
                   "so that no completed commit before a pending write leaves the active timeline",
                   pending, pending.requested_time)


def _pending_rule(inputs: ArchivalInputs, completed: Timeline) -> _Rule | None:
    pending = earliest_pending_write(inputs.timeline)
    retain = commit_to_retain_for_pending(completed, pending)
    if pending is None or retain is None:
        return None
    keeps = (f"commit {retain.requested_time} (the last completed before it) and every later one"
             if retain is not pending else "every commit after it")
    return _Rule(retain.requested_time, _pending_blocker(pending, _pending_kind(pending, inputs.clustering), keeps))


def _savepoint_rules(inputs: ArchivalInputs, settings: ArchivalSettings) -> list[_Rule]:
    savepoints = inputs.timeline.savepoints().completed()
    first = savepoints.first()
    if first is None:
        return []
    if settings.beyond_savepoint:
        return [_Rule(sp.requested_time, Blocker(
                    BlockerKind.SAVEPOINT, f"commit {sp.requested_time} is savepointed: with "
                    f"{KEYS['beyond_savepoint'][0]}=true archival skips it and goes on past it",
                    sp, sp.completion_time or sp.requested_time), only=True)
                for sp in savepoints]
    return [_Rule(first.requested_time, Blocker(
        BlockerKind.SAVEPOINT, f"savepoint {first.requested_time}: archival never passes the first savepoint "
        f"({KEYS['beyond_savepoint'][0]}=false)", first, first.completion_time or first.requested_time))]


def _compaction_rule(inputs: ArchivalInputs, settings: ArchivalSettings) -> _Rule | None:
    if not inputs.is_mor or settings.compaction_trigger not in (CompactionTrigger.NUM_COMMITS,
                                                                 CompactionTrigger.NUM_AND_TIME):
        return None
    retain = earliest_instant_to_retain_for_compaction(inputs.timeline, settings.compaction_max_delta_commits,
                                                       table_version=inputs.table_version)
    if retain is None:
        return None
    return _Rule(retain.requested_time, Blocker(
        BlockerKind.COMPACTION_WINDOW, f"a compaction is scheduled after "
        f"{settings.compaction_max_delta_commits} delta commits ({KEYS['compaction_max_delta_commits'][0]}): "
        f"archival keeps the timeline from {retain.action} {retain.requested_time} on for it",
        retain, retain.requested_time))


def _clustering_rule(inputs: ArchivalInputs, clean: CleanConfig) -> _Rule | None:
    timeline = inputs.timeline
    retain = earliest_instant_to_retain_for_clustering(timeline, inputs.last_clean_plan,
                                                       table_version=inputs.table_version, policy=clean.policy)
    if retain is None:
        return None
    if retain.action not in (REPLACE_COMMIT, CLUSTERING):
        # V1: the last completed commit before the first inflight replacecommit
        inflight = timeline.with_actions({REPLACE_COMMIT}).filter(lambda i: i.is_inflight).first()
        assert inflight is not None
        kind = _pending_kind(inflight, inputs.clustering)
        blocker = _pending_blocker(inflight, kind, f"commit {retain.requested_time} (the last completed before it) "
                                   "and every later one")
    elif retain.is_pending:
        kind = _pending_kind(retain, inputs.clustering)
        blocker = _pending_blocker(retain, kind, "it and every later commit")
    else:
        last_clean = timeline.cleans().completed().last()
        by = ("no clean has run yet" if last_clean is None
              else f"the last clean, {last_clean.requested_time}, retains from there")
        blocker = Blocker(BlockerKind.UNCLEANED_REPLACE, f"replacecommit {retain.requested_time} replaced file groups "
                          f"the cleaner has not removed yet ({by}): archiving it would show them again",
                          retain, retain.completion_time or retain.requested_time)
    return _Rule(retain.requested_time, blocker)


def _metadata_blocker(inputs: ArchivalInputs, first_held: Instant | None) -> Blocker:
    compaction = inputs.metadata_table_compaction
    if compaction is None:
        return Blocker(BlockerKind.METADATA_TABLE_COMPACTION, "the metadata table has no completed compaction yet: "
                       "Hudi archives nothing until it has one")
    return Blocker(BlockerKind.METADATA_TABLE_COMPACTION, f"the metadata table last compacted at {compaction}: "
                   "instants it has not compacted stay on the data table's timeline", first_held, compaction)


def _data_table_rule(inputs: ArchivalInputs, settings: ArchivalSettings) -> _Rule | None:
    """A metadata table's instants from its data table's earliest active commit or pending
    instant on stay (`earliest_instant_for_metadata_archival`); None for a data table."""
    if inputs.data_table_timeline is None:
        return None
    earliest = earliest_instant_for_metadata_archival(inputs.data_table_timeline,
                                                      beyond_savepoint=settings.beyond_savepoint)
    if earliest is None:
        return None
    return _Rule(earliest.requested_time, Blocker(
        BlockerKind.DATA_TABLE_TIMELINE, f"the data table's active timeline holds {earliest.action} "
        f"{earliest.requested_time} ({earliest.state.name.lower()}): the metadata table keeps its instants from "
        "there on (TimelineUtils.getEarliestInstantForMetadataArchival)", earliest, earliest.requested_time))


def _held(rules: Sequence[_Rule], window: Sequence[Instant]) -> list[Blocker]:
    """The blockers of the rules that hold back a commit of `window`: one the counts alone
    would archive."""
    return [rule.blocker for rule in rules if any(rule.excludes(s) for s in window)]


def _commit_rules(inputs: ArchivalInputs, settings: ArchivalSettings, clean: CleanConfig,
                  completed: Timeline) -> list[_Rule]:
    """The limits both archivers put on commits (the metadata table's aside, which differs)."""
    rules = _savepoint_rules(inputs, settings)
    for rule in (_pending_rule(inputs, completed), _compaction_rule(inputs, settings), _clustering_rule(inputs, clean)):
        if rule is not None:
            rules.append(rule)
    return rules


def _count_blockers(count: int, keep: KeepCounts, clean: CleanConfig) -> list[Blocker]:
    found = []
    if keep.raised and count > keep.configured_max:
        ectr = keep.earliest_commit_to_retain
        assert ectr is not None
        found.append(Blocker(BlockerKind.CLEAN_RETENTION, f"the cleaner ({clean.policy.value}) retains from "
                             f"{ectr.requested_time}, so archival keeps {keep.min_instants} completed commits, not "
                             f"{KEYS['min_commits'][0]}={keep.configured_min} (and starts above {keep.max_instants}, "
                             f"not {keep.configured_max})", ectr, ectr.requested_time))
    if count <= keep.max_instants:
        found.append(Blocker(BlockerKind.NOT_ENOUGH_COMMITS, f"{count} completed commits: archival starts only above "
                             f"{keep.max_instants} ({KEYS['max_commits'][0]}"
                             f"{f'={keep.configured_max}, raised by the cleaner' if keep.raised else ''}) and then "
                             f"keeps {keep.min_instants}"))
    return found


def _counted(inputs: ArchivalInputs, settings: ArchivalSettings,
             clean: CleanConfig) -> tuple[KeepCounts, Timeline, list[Blocker]]:
    """What both archivers start from: the counts to keep, the completed commits, and the
    blockers the counts alone make."""
    keep = min_and_max_instants_to_keep(inputs.timeline, settings, clean, is_mor=inputs.is_mor)
    completed = completed_commits(inputs.timeline, is_mor=inputs.is_mor)
    return keep, completed, _count_blockers(len(completed), keep, clean)


def _quota(count: int, keep: KeepCounts) -> int:
    quota = count - keep.min_instants
    if quota < 0:
        raise ArchivalConfigError(f"{count} completed commits above {KEYS['max_commits'][0]}={keep.max_instants} but "
                                  f"fewer than {KEYS['min_commits'][0]}={keep.min_instants}: Hudi's archiver fails "
                                  "on a negative count (keep.max must be greater than keep.min)")
    return quota


def select_v1(inputs: ArchivalInputs, settings: ArchivalSettings, clean: CleanConfig) -> Selection:
    """Hudi 0.15 `HoodieTimelineArchiver.getInstantsToArchive` (table version 6):

    1. `getCommitInstantsToArchive`: only when the completed commits outnumber the maximum to
       keep, the oldest of them (count - minimum) that pass every rule: before the first
       savepoint (or not savepointed, with `hoodie.archive.beyond.savepoint`), before the last
       completed commit preceding the earliest pending write, before what the next compaction
       needs (MOR), before the first replacecommit the cleaner still retains (moved back to a
       savepoint it cleaned around, as 1.x's `TimelineArchiverV1` does; or the commit before an
       inflight one);
    2. `getCleanInstantsToArchive`: completed cleans and completed rollbacks, each action by
       its own count: when more than the maximum, all but the newest minimum;
    3. with the metadata table available, only instants requested before its latest completed
       compaction (none at all before its first);
    4. on a metadata table, only instants requested before its data table's earliest active
       commit or pending instant (`table.isMetadataTable()`).

    Metaserver on: nothing (`isMetaserverEnabled`)."""
    keep, completed, blockers = _counted(inputs, settings, clean)
    if settings.metaserver:
        return Selection((), keep, (_metaserver(),))
    count = len(completed)
    commits: list[Instant] = []
    if count > keep.max_instants:
        quota = _quota(count, keep)
        rules = _commit_rules(inputs, settings, clean, completed)
        commits = [s for s in completed if not any(r.excludes(s) for r in rules)][:quota]
        blockers += _held(rules, completed.instants[:quota])
    chosen = _clean_and_rollback_by_count(inputs.timeline, keep) + commits
    if inputs.metadata_table_available:
        compaction = inputs.metadata_table_compaction
        held = [i for i in chosen if compaction is None or i.requested_time >= compaction]
        if held:
            blockers.append(_metadata_blocker(inputs, min(held, key=lambda i: i.sort_key) if compaction else None))
        chosen = [i for i in chosen if i not in held]
    data_rule = _data_table_rule(inputs, settings)
    if data_rule is not None and any(data_rule.excludes(i) for i in chosen):
        blockers.append(data_rule.blocker)
        chosen = [i for i in chosen if not data_rule.excludes(i)]
    return Selection(tuple(sorted(chosen, key=lambda i: i.sort_key)), keep, _ordered(blockers))


def _clean_and_rollback_by_count(timeline: Timeline, keep: KeepCounts) -> list[Instant]:
    """0.15 `getCleanInstantsToArchive`: per action (clean, rollback), the completed instants
    but the newest `min_instants`, once there are more than `max_instants`."""
    chosen: list[Instant] = []
    for action in (CLEAN, ROLLBACK):
        done = timeline.with_actions({action}).completed().instants
        if len(done) > keep.max_instants:
            chosen.extend(done[:_quota(len(done), keep)])
    return chosen


def select_v2(inputs: ArchivalInputs, settings: ArchivalSettings, clean: CleanConfig) -> Selection:
    """Hudi 1.x `TimelineArchiverV2.getInstantsToArchive` (table versions 8 and 9):

    1. `getCommitInstantsToArchive`: only when the completed commits outnumber the maximum to
       keep; the earliest instant to retain is the least of: the last completed commit before
       the earliest pending write, what the next compaction needs (MOR), the first
       replace/clustering instant the cleaner still retains (moved back to a savepoint it
       cleaned around), and, with the metadata table available, the first commit completed
       after its latest compaction (nothing at all before its first compaction), and, on a
       metadata table, its data table's earliest active commit or pending instant. The oldest
       (count - minimum) completed commits before it and before the first savepoint (or not
       savepointed, with `hoodie.archive.beyond.savepoint`) go;
    2. `getCleanAndRollbackInstantsToArchive`: completed cleans and rollbacks requested before
       the newest commit archived, and only when a commit is archived.

    Metaserver on: nothing."""
    keep, completed, blockers = _counted(inputs, settings, clean)
    if settings.metaserver:
        return Selection((), keep, (_metaserver(),))
    count = len(completed)
    if count <= keep.max_instants:
        return Selection((), keep, _ordered(blockers))
    quota = _quota(count, keep)
    window = completed.instants[:quota]
    rules = _commit_rules(inputs, settings, clean, completed)
    if inputs.metadata_table_available:
        compaction = inputs.metadata_table_compaction
        if compaction is None:
            return Selection((), keep, _ordered([*blockers, *_held(rules, window), _metadata_blocker(inputs, None)]))
        first = modified_after_by_completion(completed, compaction).first()
        if first is not None:
            rules.append(_Rule(first.requested_time, _metadata_blocker(inputs, first)))
    data_rule = _data_table_rule(inputs, settings)
    if data_rule is not None:
        rules.append(data_rule)
    commits = [s for s in completed if not any(r.excludes(s) for r in rules)][:quota]
    blockers += _held(rules, window)
    if commits:
        newest = commits[-1].requested_time
        commits += inputs.timeline.with_actions({CLEAN, ROLLBACK}).completed().filter(
            lambda i: i.requested_time < newest).instants
    return Selection(tuple(sorted(commits, key=lambda i: i.sort_key)), keep, _ordered(blockers))


def select(inputs: ArchivalInputs, settings: ArchivalSettings, clean: CleanConfig) -> Selection:
    """The archiver of the table's version (`is_v2`) and its choice, with what holds the rest
    back; `hoodie.archive.automatic=false` adds a blocker (Hudi's writers never archive), the
    choice stays what an explicit archive would move."""
    chosen = (select_v2 if is_v2(inputs.table_version) else select_v1)(inputs, settings, clean)
    if settings.automatic or settings.metaserver:
        return chosen
    off = Blocker(BlockerKind.ARCHIVAL_DISABLED, f"{KEYS['automatic'][0]}=false: Hudi's writers never archive after a "
                  "commit; only an explicit archive moves these instants")
    return replace(chosen, blockers=(off, *chosen.blockers))


def _metaserver() -> Blocker:
    return Blocker(BlockerKind.ARCHIVAL_DISABLED, f"{KEYS['metaserver'][0]}=true: the metaserver keeps the timeline "
                   "and Hudi's archiver archives nothing")


_ORDER = list(BlockerKind)


def _ordered(blockers: Sequence[Blocker]) -> tuple[Blocker, ...]:
    """Blockers once each: table-wide ones first, then by the instant they name."""
    unique: dict[tuple[BlockerKind, str | None], Blocker] = {}
    for b in blockers:
        unique.setdefault((b.kind, None if b.instant is None else b.instant.requested_time), b)
    return tuple(sorted(unique.values(), key=lambda b: (b.instant is not None,
                                                        b.instant.sort_key if b.instant else ("", "", 0),
                                                        _ORDER.index(b.kind))))


__all__ = [
    "ArchivalInputs", "Blocker", "BlockerKind", "KeepCounts", "Selection", "cleaner_earliest_commit_to_retain",
    "commit_to_retain_for_pending", "completed_commits", "earliest_instant_for_metadata_archival",
    "earliest_instant_to_retain_for_clustering", "earliest_instant_to_retain_for_compaction",
    "earliest_pending_write", "earliest_replaced_savepoint_in_clean", "is_v2", "min_and_max_instants_to_keep",
    "modified_after_by_completion", "select", "select_v1", "select_v2",
]
