"""Hudi's archiver rules (timeline/archive/rules.py) on hand-made timelines, transcribed from
Hudi's `TestHoodieTimelineArchiver` (hudi-client/hudi-spark-client/src/test/java/org/apache/hudi/
io/): the 0.14/0.15 version (before the LSM timeline, HUDI-6539) for table version 6 and the
1.x one for table versions 8 and 9. Each test names the Java test it follows. Times are the
tests' numbers spread over one day (`t(n)`); the cleaner retains one commit, as those tests'
write configs do; "archival" deletes the state files the plan names."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.archive.helpers import ArchivalLake, t, times
from timeline.archive.retain import KeepCounts
from timeline.archive.rules import (
    ArchivalInputs,
    BlockerKind,
    cleaner_earliest_commit_to_retain,
    earliest_instant_to_retain_for_compaction,
    min_and_max_instants_to_keep,
)
from timeline.archive.settings import ArchivalConfigError, ArchivalSettings, CompactionTrigger, check_settings
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.instant import Instant, State, format_instant_time
from timeline.metadata.records import CleanerPlan, InstantRef
from timeline.timeline import Timeline

VERSIONS = pytest.mark.parametrize("version", [6, 8, 9])


def kinds(plan: object) -> set[BlockerKind]:
    return {b.kind for b in plan.blockers}  # type: ignore[attr-defined]


# keep.min / keep.max

@VERSIONS
def test_rules_archive_down_to_keep_min_once_above_keep_max(version: int) -> None:
    """testArchiveTableWithArchival: min 4, max 5: after the 6th commit 1 and 2 go, after the
    8th 3 and 4; in between nothing (not above keep.max)."""
    lake = ArchivalLake(version)
    archived: dict[int, list[str]] = {}
    for i in range(1, 10):
        lake.commit(i)
        plan = lake.plan(min=4, max=5)
        if not plan.actions:
            assert kinds(plan) == {BlockerKind.NOT_ENOUGH_COMMITS}, (i, plan.blockers)
        archived[i] = lake.archive(plan)
    assert {i: a for i, a in archived.items() if a} == {6: times(1, 2), 8: times(3, 4)}
    assert lake.active() == times(5, 6, 7, 8, 9)


@VERSIONS
def test_rules_no_archival_until_above_keep_max_with_inflight_commits(version: int) -> None:
    """testNoArchivalUntilMaxArchiveConfigWithExtraInflightCommits: 5 commits (max 5) and two
    inflight ones: nothing moves."""
    lake = ArchivalLake(version)
    for i in range(1, 6):
        lake.commit(i)
        assert lake.plan(min=4, max=5).actions == ()
    lake.commit(6, state=State.INFLIGHT)
    lake.commit(7, state=State.INFLIGHT)
    plan = lake.plan(min=4, max=5)
    assert plan.actions == () and kinds(plan) == {BlockerKind.NOT_ENOUGH_COMMITS}


def test_settings_keep_max_not_above_keep_min_is_refused() -> None:
    """HoodieWriteConfig.Builder.validate: with the KEEP_LATEST_COMMITS cleaner, keep.max must be
    greater than keep.min ("Increase hoodie.keep.max.commits=... to be greater than ..."); with
    another cleaner policy Hudi does not check it. keep.min at or below the cleaner's retained
    commits is only a warning."""
    lake = ArchivalLake(8)
    with pytest.raises(ArchivalConfigError, match=r"Increase hoodie.keep.max.commits=4 .*hoodie.keep.min.commits=4"):
        lake.plan(min=4, max=4)
    with pytest.raises(ArchivalConfigError, match="/t"):
        lake.plan(min=5, max=4)
    lake.plan(min=5, max=4, hoodie_clean_policy="KEEP_LATEST_FILE_VERSIONS")  # not validated by Hudi
    settings = ArchivalSettings(min_commits=10, max_commits=20)
    assert check_settings(settings, CleanConfig(commits_retained=9)) == []
    assert "raises it" in check_settings(settings, CleanConfig(commits_retained=10))[0]
    assert check_settings(settings, CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, commits_retained=30)) == []


def test_settings_read_hudi_keys_and_defaults() -> None:
    """HoodieArchivalConfig / HoodieCompactionConfig defaults: keep 20..30, stop at savepoints,
    archive automatically, NUM_COMMITS after 5 delta commits; bad values are refused."""
    assert ArchivalSettings.from_properties({}) == ArchivalSettings(20, 30, False, True, CompactionTrigger.NUM_COMMITS,
                                                                    5, False)
    read = ArchivalSettings.from_properties({"hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "7",
                                             "hoodie.archive.beyond.savepoint": "TRUE",
                                             "hoodie.compact.inline.trigger.strategy": "time_elapsed"})
    assert (read.min_commits, read.max_commits, read.beyond_savepoint, read.compaction_trigger) == (
        3, 7, True, CompactionTrigger.TIME_ELAPSED)
    assert ArchivalSettings.from_properties(read.as_properties()) == read
    for key, value in (("hoodie.keep.min.commits", "many"), ("hoodie.archive.automatic", "yes"),
                       ("hoodie.compact.inline.max.delta.commits", "0"), ("hoodie.keep.max.commits", "-1")):
        with pytest.raises(ArchivalConfigError, match=key):
            ArchivalSettings.from_properties({key: value})


# The cleaner's window raises keep.min and keep.max

@pytest.mark.parametrize("policy", ["KEEP_LATEST_BY_HOURS", "KEEP_LATEST_COMMITS"])
@VERSIONS
def test_rules_keep_counts_raised_from_the_cleaner_settings(version: int, policy: str) -> None:
    """testArchivalWithAutoAdjustmentBasedOnCleanConfigs: commits 90, 80, 70, 50, 45, 40 minutes
    ago, 30 and 20 inflight, 10 and 5 done; cleaner 1 hour or 5 commits; archival 3..4. The
    cleaner retains from 50 minutes ago, so keep.min becomes 6 (4 after it + 2) and keep.max
    7: only the two oldest go (ArchivalUtils.getMinAndMaxInstantsToKeep)."""
    lake = ArchivalLake(version)
    now = datetime(2026, 6, 15, 12, 0)
    ago = {m: format_instant_time(now - timedelta(minutes=m)) for m in (90, 80, 70, 50, 45, 40, 30, 20, 10, 5)}
    for minutes, time_ in ago.items():
        lake.lake.commit(time_, state=State.INFLIGHT if minutes in (30, 20) else State.COMPLETED)
    plan = lake.plan(min=3, max=4, retain=5, hoodie_clean_policy=policy, hoodie_clean_hours_retained=1)
    assert [i.requested_time for i in plan.instants] == [ago[90], ago[80]]
    assert (plan.keep.min_instants, plan.keep.max_instants, plan.keep.configured_min) == (6, 7, 3)
    assert plan.keep.earliest_commit_to_retain is not None
    assert plan.keep.earliest_commit_to_retain.requested_time == ago[50]
    assert BlockerKind.CLEAN_RETENTION in kinds(plan)
    # keep.min 3 <= 5 commits retained: with KEEP_LATEST_COMMITS a warning, not a refusal
    assert any("raises it" in w for w in plan.warnings) == (policy == "KEEP_LATEST_COMMITS")


def test_rules_latest_commit_time_hudi_cannot_parse_raises_nothing() -> None:
    """ArchivalUtils.getEarliestCommitToRetain: a latest commit time parseDateFromInstantTime
    refuses (Hudi's tests' "00000001", the all-zero times) gives no earliest commit to retain,
    whatever the policy: keep.min stays as configured."""
    timeline = Timeline.of(Instant(f"0000000{i}", "commit", State.COMPLETED) for i in range(1, 9))
    clean = CleanConfig(commits_retained=1)
    assert cleaner_earliest_commit_to_retain(timeline, clean, timeline.last()) is None
    keep = min_and_max_instants_to_keep(timeline, ArchivalSettings(4, 5), CleanConfig(commits_retained=7), is_mor=False)
    assert (keep.min_instants, keep.max_instants, keep.raised) == (4, 5, False)
    real = Timeline.of(Instant(t(i), "commit", State.COMPLETED) for i in range(1, 9))
    raised = min_and_max_instants_to_keep(real, ArchivalSettings(4, 5), CleanConfig(commits_retained=7), is_mor=False)
    assert (raised.min_instants, raised.max_instants) == (8, 9)  # retains from t(2): 6 after it + 2


# Savepoints

@pytest.mark.parametrize("beyond", [True, False])
@VERSIONS
def test_rules_savepoint_stops_archival_or_is_skipped(version: int, beyond: bool) -> None:
    """testSavepointWithArchival: min 2, max 4; commits 1-6, savepoint at 3. Stopping at the
    savepoint archives 1 and 2; archiving beyond it archives 1, 2, 4, 5 and keeps the
    savepointed 3. Once the savepoint is deleted (after commits 7-9), 1-7 are archived."""
    lake = ArchivalLake(version)
    for i in range(1, 5):
        lake.commit(i)
    lake.savepoint(3)
    lake.commit(5)
    lake.commit(6)
    plan = lake.plan(min=2, max=4, beyond=beyond)
    (savepoint,) = [b for b in plan.blockers if b.kind is BlockerKind.SAVEPOINT]
    assert savepoint.instant is not None and savepoint.instant.requested_time == t(3)
    assert lake.archive(plan) == (times(1, 2, 4, 5) if beyond else times(1, 2))
    assert lake.active() == (times(3, 6) if beyond else times(3, 4, 5, 6))
    assert lake.active_of("savepoint") == times(3)
    for i in range(7, 10):
        lake.commit(i)
    lake.delete_savepoint(3)
    plan = lake.plan(min=2, max=4, beyond=beyond)
    assert BlockerKind.SAVEPOINT not in kinds(plan)
    lake.archive(plan)
    assert lake.active() == times(8, 9)


@VERSIONS
def test_rules_archival_stops_at_the_first_of_two_savepoints(version: int) -> None:
    """getCommitInstantsToArchive (0.15 HoodieTimelineArchiver, TimelineArchiverV1/V2): without
    archive-beyond-savepoint nothing at or after the first completed savepoint goes. Commits
    1-8, savepoints at 3 and 5, min 2, max 4: the counts would archive 1-6, the first savepoint
    holds 3 on, so only 1 and 2 go (stopping at the last savepoint would archive 1-4). The
    blocker names savepoint 3."""
    lake = ArchivalLake(version)
    for i in range(1, 9):
        lake.commit(i)
    lake.savepoint(3)
    lake.savepoint(5)
    plan = lake.plan(min=2, max=4)
    (savepoint,) = [b for b in plan.blockers if b.kind is BlockerKind.SAVEPOINT]
    assert savepoint.instant is not None and savepoint.instant.requested_time == t(3)
    assert lake.archive(plan) == times(1, 2)
    assert lake.active() == times(3, 4, 5, 6, 7, 8)


@pytest.mark.parametrize("beyond", [True, False])
@pytest.mark.parametrize("metadata_table", [True, False])
@VERSIONS
def test_rules_savepoint_leaves_no_hole(version: int, metadata_table: bool, beyond: bool) -> None:
    """testArchiveCommitSavepointNoHole: commits 100-105, savepoint at 101, min 2, max 5 (with
    a metadata table compacted at 105). Beyond the savepoint 100, 102, 103, 104 go and 101
    stays; otherwise only 100 goes."""
    lake = ArchivalLake(version, metadata_table=metadata_table)
    for i in range(100, 106):
        lake.commit(i)
    lake.savepoint(101)
    if metadata_table:
        lake.metadata_compaction(t(105) + "001" if version == 6 else t(105))
    lake.plan_and_archive(min=2, max=5, beyond=beyond)
    assert lake.active() == (times(101, 105) if beyond else times(101, 102, 103, 104, 105))


# Pending instants

@VERSIONS
def test_rules_pending_clustering_blocks_archival(version: int) -> None:
    """testPendingClusteringWillBlockArchival: a pending clustering before every commit: with 7
    commits (min 4, max 5) nothing is archived, and the blocker names the clustering."""
    lake = ArchivalLake(version)
    clustering = lake.replace(0, state=State.REQUESTED)
    for i in range(1, 8):
        lake.commit(i)
        plan = lake.plan(min=4, max=5)
        assert plan.actions == ()
    blockers = [b for b in plan.blockers if b.kind is BlockerKind.PENDING_CLUSTERING]
    assert [(b.instant, b.since) for b in blockers] == [(clustering, t(0))]
    assert "clustering" in blockers[0].why
    assert len(lake.active()) == 7


@VERSIONS
def test_rules_pending_clustering_after_archived_commits(version: int) -> None:
    """testPendingClusteringAfterArchiveCommit: clusterings 1, 3-7 done, 2 pending: the commit
    before the pending clustering (1) and everything after stay: nothing is archived."""
    lake = ArchivalLake(version)
    lake.replace(2, state=State.INFLIGHT)
    for i in (1, 3, 4, 5, 6, 7):
        lake.replace(i)
        assert lake.plan_and_archive(min=4, max=5) == []
    assert len(lake.active()) == 6


@VERSIONS
def test_rules_archival_stops_before_the_last_commit_before_a_pending_write(version: int) -> None:
    """testGetCommitInstantsToArchiveDuringInflightCommits: commits 1000-1002, a requested
    replacecommit 1003, commits 1004-1006, an inflight commit 1007, commits 1010-1015; min 3,
    max 4. The pending replacecommit keeps 1002 (the last completed before it): 1000 and 1001
    go. With it gone, the inflight 1007 keeps 1006: 1002, 1004, 1005 go.

    Hudi's test names its instants "1000".."1015", times parseDateFromInstantTime refuses, so
    its cleaner's window never raises keep.min there; a cleaner that retains nothing by commits
    (KEEP_LATEST_FILE_VERSIONS) does the same on real times. With KEEP_LATEST_COMMITS on real
    times the pending write pins the cleaner's window too (HUDI-5341): keep.min rises to the 9
    commits after 1002 plus 2, and nothing goes."""
    lake = ArchivalLake(version)
    for i in (1000, 1001, 1002):
        lake.commit(i)
    lake.replace(1003, state=State.REQUESTED, clustering=False)
    for i in (1004, 1005, 1006):
        lake.commit(i)
    lake.commit(1007, state=State.INFLIGHT)
    for i in range(1010, 1016):
        lake.commit(i)
    pinned = lake.plan(min=3, max=4)
    assert pinned.actions == () and (pinned.keep.min_instants, pinned.keep.max_instants) == (11, 12)
    assert kinds(pinned) == {BlockerKind.CLEAN_RETENTION, BlockerKind.NOT_ENOUGH_COMMITS}
    plan = lake.plan(min=3, max=4, hoodie_clean_policy="KEEP_LATEST_FILE_VERSIONS")
    pending = [b for b in plan.blockers if b.kind is BlockerKind.PENDING_INSTANT]
    assert [b.instant.requested_time for b in pending if b.instant] == [t(1003)]
    assert lake.archive(plan) == times(1000, 1001)
    _delete(lake, t(1003))
    assert lake.plan_and_archive(min=3, max=4, hoodie_clean_policy="KEEP_LATEST_FILE_VERSIONS") == times(
        1002, 1004, 1005)
    assert lake.table().timeline.first().requested_time == t(1006)  # type: ignore[union-attr]


def _delete(lake: ArchivalLake, time_: str) -> None:
    for status in list(lake.lake.storage.list(lake.lake.timeline_folder)):
        if status.name.startswith(time_ + "."):
            lake.lake.storage.delete(status.path)


@VERSIONS
def test_rules_oldest_pending_replacecommit_blocks_everything(version: int) -> None:
    """testWithOldestReplaceCommit: an inflight replacecommit at 1001 before 8 commits (min 2,
    max 3): nothing is archived; the timeline still starts at 1001."""
    lake = ArchivalLake(version)
    lake.replace(1001, state=State.INFLIGHT, clustering=False)
    for i in range(1002, 1010):
        lake.commit(i)
    plan = lake.plan(min=2, max=3)
    assert plan.actions == () and BlockerKind.PENDING_INSTANT in kinds(plan)
    assert lake.table().timeline.first().requested_time == t(1001)  # type: ignore[union-attr]


@VERSIONS
def test_rules_inflight_compaction_in_the_middle(version: int) -> None:
    """testNoArchivalWithInflightCompactionInMiddle: MOR, min 4, max 5, 2 delta commits per
    compaction; delta commit 1, an inflight compaction 2, delta commits 3-7: nothing goes (1
    is the last completed before the pending compaction). Once 2 completes and 8 is written,
    1, the compaction 2 (requested state and commit) and 3, 4 go."""
    lake = ArchivalLake(version, mor=True)
    lake.commit(1)
    lake.compaction(2)
    for i in range(3, 8):
        lake.commit(i)
        plan = lake.plan(min=4, max=5, delta=2)
        assert plan.actions == ()
    (pending,) = [b for b in plan.blockers if b.kind is BlockerKind.PENDING_COMPACTION]
    assert pending.instant is not None and pending.instant.requested_time == t(2)
    lake.complete_compaction(2, completed_at=7)
    lake.commit(8)
    plan = lake.plan(min=4, max=5, delta=2)
    compaction = [a for a in plan.actions if a.instant.requested_time == t(2)]
    assert [s for s, _ in compaction[0].state_files] == [State.REQUESTED, State.INFLIGHT, State.COMPLETED]
    assert lake.archive(plan) == times(1, 2, 3, 4)
    assert lake.active() == times(5, 6, 7, 8)


@VERSIONS
def test_rules_delta_commits_kept_for_the_next_compaction(version: int) -> None:
    """testArchivalWithMaxDeltaCommitsGuaranteeForCompaction: MOR, min 4, max 5, a compaction
    every 8 delta commits. Delta commits 1-8 stay (fewer than 8 since none compacted); the 9th
    lets 1 go. After compaction 10, delta commit 11 lets 2-7 go, 13 lets 8, 9 go, 18 lets 10
    go and 19 lets 11 go (CompactionUtils.getEarliestInstantToRetainForCompaction)."""
    lake = ArchivalLake(version, mor=True)
    archived = {}
    for i in range(1, 10):
        lake.commit(i)
        archived[i] = lake.plan_and_archive(min=4, max=5, delta=8)
    assert {i: a for i, a in archived.items() if a} == {9: times(1)}
    lake.compaction(10, state=State.INFLIGHT)
    lake.complete_compaction(10, completed_at=10)
    archived = {}
    for i in range(11, 20):
        lake.commit(i)
        plan = lake.plan(min=4, max=5, delta=8)
        archived[i] = lake.archive(plan)
        if i in (15, 16, 17):
            window = [b for b in plan.blockers if b.kind is BlockerKind.COMPACTION_WINDOW]
            assert [b.instant.requested_time for b in window if b.instant] == [t(10)]
    assert {i: a for i, a in archived.items() if a} == {11: times(2, 3, 4, 5, 6, 7), 13: times(8, 9),
                                                        18: times(10), 19: times(11)}


def test_rules_compaction_window_v1_and_v2() -> None:
    """CompactionUtils (0.15 getOldestInstantToRetainForCompaction, 1.x
    getEarliestInstantToRetainForCompaction), as TestCompactionUtils checks it: with a completed
    compaction, the delta commits after it (V1 by requested time; V2 by completion, so a delta
    commit that finished after the compaction was requested counts); without one, all delta
    commits. V1 also takes a completed replacecommit for the latest compaction."""
    def instant(n: int, action: str, done: int | None = None) -> Instant:
        return Instant(t(n), action, State.COMPLETED, t(done if done is not None else n)[:-3] + "999")

    deltas = [instant(1, "deltacommit"), instant(2, "deltacommit", 7), instant(4, "deltacommit"),
              instant(5, "deltacommit"), instant(6, "deltacommit")]
    pending = Instant(t(8), "deltacommit", State.INFLIGHT)
    timeline = Timeline.of([*deltas, instant(3, "commit"), pending])
    # V1: 4, 5, 6, 8 were requested after the compaction; V2 also counts 2, completed after it
    assert earliest_instant_to_retain_for_compaction(timeline, 5, table_version=6) == instant(3, "commit")
    assert earliest_instant_to_retain_for_compaction(timeline, 5, table_version=8) == deltas[1]
    assert earliest_instant_to_retain_for_compaction(timeline, 3, table_version=6) == deltas[3]
    assert earliest_instant_to_retain_for_compaction(timeline, 2, table_version=6) == deltas[4]
    assert earliest_instant_to_retain_for_compaction(timeline, 1, table_version=6) == pending
    no_compaction = Timeline.of(deltas)
    for version in (6, 8):
        assert earliest_instant_to_retain_for_compaction(no_compaction, 20, table_version=version) == deltas[0]
        assert earliest_instant_to_retain_for_compaction(no_compaction, 3, table_version=version) == deltas[2]
        assert earliest_instant_to_retain_for_compaction(Timeline(), 3, table_version=version) is None
    replaced = Timeline.of([*deltas, Instant(t(3), "replacecommit", State.COMPLETED, t(3))])
    replace = Instant(t(3), "replacecommit", State.COMPLETED, t(3))
    assert earliest_instant_to_retain_for_compaction(replaced, 20, table_version=6) == replace
    assert earliest_instant_to_retain_for_compaction(replaced, 20, table_version=8) == deltas[0]


# The metadata table's compaction

@VERSIONS
def test_rules_metadata_table_compaction_limits_archival(version: int) -> None:
    """testArchiveTableWithMetadataTableCompaction: min 4, max 5; the metadata table compacts
    with the 7th commit, then with the 14th. Before its first compaction nothing goes; after it
    1-3; commits 8-10 let 4-6 go but not 7 (not compacted); 11-13 nothing; 14 lets 7-10 go.
    V1 keeps instants requested before the compaction (`<ts>001` after the last delta commit
    it compacts); V2 keeps commits completed after it was requested."""
    lake = ArchivalLake(version, metadata_table=True)

    def compact_before(n: int) -> None:
        # Hudi 0.15 compacts the MDT at the last delta commit + "001"; Hudi 1.x at a new time, before n completes
        lake.metadata_compaction(t(n - 1) + "001" if version == 6 else t(n)[:-3] + "001")

    for i in range(1, 7):
        lake.commit(i)
        plan = lake.plan(min=4, max=5)
        assert plan.actions == ()
    assert BlockerKind.METADATA_TABLE_COMPACTION in kinds(plan)
    assert [b.instant for b in plan.blockers if b.kind is BlockerKind.METADATA_TABLE_COMPACTION] == [None]
    lake.commit(7)
    compact_before(7)
    assert lake.plan_and_archive(min=4, max=5) == times(1, 2, 3)
    for i in (8, 9, 10):
        lake.commit(i)
    assert lake.plan_and_archive(min=4, max=5) == times(4, 5, 6)
    lake.commit(11)
    assert lake.plan(min=4, max=5).actions == ()  # 5 commits: not above keep.max
    for i in (12, 13):
        lake.commit(i)
        plan = lake.plan(min=4, max=5)
        assert plan.actions == ()
        (lag,) = [b for b in plan.blockers if b.kind is BlockerKind.METADATA_TABLE_COMPACTION]
        assert lag.instant is not None and lag.instant.requested_time == t(7)
        assert lag.since == (t(6) + "001" if version == 6 else t(7)[:-3] + "001")
    lake.commit(14)
    compact_before(14)
    assert lake.plan_and_archive(min=4, max=5) == times(7, 8, 9, 10)
    assert lake.active() == times(11, 12, 13, 14)


def test_rules_v1_commits_before_metadata_table_compaction() -> None:
    """testArchiveCommitsWithCompactionCommitInMetadataTableTimeline (V1): commits 100-114, the
    metadata table compacted at 105 + "001": 100 to 105 go (min 4, max 5 would let 11)."""
    lake = ArchivalLake(6, metadata_table=True)
    for i in range(100, 115):
        lake.commit(i)
    lake.metadata_compaction(t(105) + "001")
    assert lake.plan_and_archive(min=4, max=5) == times(*range(100, 106))


def test_rules_v2_commits_completed_after_metadata_table_compaction_stay() -> None:
    """TimelineArchiverV2 step 4 (findInstantsModifiedAfterByCompletionTime): a commit that
    was requested before the metadata table's compaction but completed after it stays, and so
    does every later one; the commit requested at the compaction's own time does not count."""
    lake = ArchivalLake(8, metadata_table=True)
    for i in range(1, 10):
        lake.commit(i)
    late = Instant(t(10), "commit", State.COMPLETED, t(14)[:-3] + "999")  # requested at 10, completed at 14
    lake.lake.commit(t(10), completion=late.completion_time)
    for i in range(11, 13):
        lake.commit(i)
    lake.metadata_compaction(t(12)[:-3] + "500")  # after 11 and 12 completed... but before 10 did
    plan = lake.plan(min=2, max=3)
    (lag,) = [b for b in plan.blockers if b.kind is BlockerKind.METADATA_TABLE_COMPACTION]
    assert lag.instant == late
    assert [i.requested_time for i in plan.instants] == times(*range(1, 10))


def test_rules_no_metadata_table_compaction_archives_nothing_at_all() -> None:
    """"Not archiving as there is no compaction yet on the metadata table": V1 keeps cleans too
    (testArchiveTableWithCleanCommits with the metadata table); V2 returns no commit, and so no
    clean either; a metadata table Hudi cannot open counts as none."""
    for version in (6, 8):
        lake = ArchivalLake(version, metadata_table=True)
        lake.commit(1)
        for i in range(2, 9):
            lake.clean(i)
        for i in range(9, 16):
            lake.commit(i)
        plan = lake.plan(min=2, max=3)
        assert plan.actions == (), version
        assert BlockerKind.METADATA_TABLE_COMPACTION in kinds(plan)
        lake.lake.storage.delete("/t/.hoodie/metadata/.hoodie/hoodie.properties")
        assert lake.plan(min=2, max=3).actions == ()


# Cleans and rollbacks: V1 by their own counts, V2 only before the newest archived commit

def test_rules_v1_cleans_by_their_own_counts() -> None:
    """testArchiveTableWithCleanCommits (0.14/0.15, no metadata table): commit 1, cleans 2-7,
    commit 8, clean 9, commit 10; min 4, max 5: at the 7th instant cleans 2 and 3 go (6 cleans
    > max 5, keep 4); the commits are too few."""
    lake = ArchivalLake(6)
    archived = {}
    for i in range(1, 11):
        if i in (1, 8, 10):
            lake.commit(i)
        else:
            lake.clean(i)
        archived[i] = lake.plan_and_archive(min=4, max=5)
    assert {i: a for i, a in archived.items() if a} == {7: times(2, 3)}
    assert lake.active_of("clean") == times(4, 5, 6, 7, 9) and lake.active() == times(1, 8, 10)


def test_rules_v1_rollbacks_by_their_own_counts() -> None:
    """testArchiveRollbacksTestTable (0.14/0.15): commits 1, 3, ..., 11, each rolled back by
    the next even instant (the commit stays); min 4, max 5: at 11, commits 1, 3 and rollbacks
    2, 4 go."""
    lake = ArchivalLake(6)
    archived = {}
    for i in range(1, 13, 2):
        lake.commit(i)
        lake.rollback(i + 1, of=i)
        archived[i] = lake.plan_and_archive(min=4, max=5)
    assert {i: a for i, a in archived.items() if a} == {11: times(1, 2, 3, 4)}
    assert lake.active_of("rollback") == times(6, 8, 10, 12)


def test_rules_v1_cleans_and_rollbacks_counted_apart_from_commits() -> None:
    """testArchiveRollbacksAndCleanTestTable (0.14/0.15): commit 1, cleans 2-11, commits 12-18
    each rolled back; min 4, max 9: cleans 2-7 go; 5 commits and 4 rollbacks are too few."""
    lake = ArchivalLake(6)
    lake.commit(1)
    for i in range(2, 12):
        lake.clean(i)
    for i in range(12, 19, 2):
        lake.commit(i)
        lake.rollback(i + 1, of=i)
    assert lake.plan_and_archive(min=4, max=9) == times(2, 3, 4, 5, 6, 7)


@pytest.mark.parametrize("metadata_table", [True, False])
def test_rules_v1_completed_rollbacks_and_cleans_keep_min(metadata_table: bool) -> None:
    """testArchiveCompletedRollbackAndClean (0.14/0.15): 11 cleans and 11 commit/rollback
    pairs, min 2, max 10 (metadata table compacted at 99 + "001", after all): 2 cleans and 2
    rollbacks stay, with every state file of the others archived."""
    lake = ArchivalLake(6, metadata_table=metadata_table)
    for i in range(1, 12):
        lake.clean(i)
    for i in range(12, 34, 2):
        lake.commit(i + 1)
        lake.rollback(i, of=i + 1)
    if metadata_table:
        lake.metadata_compaction(t(99) + "001")
    plan = lake.plan(min=2, max=10)
    cleans = [a for a in plan.actions if a.instant.action == "clean"]
    assert all([s for s, _ in a.state_files] == list(State) for a in cleans)
    lake.archive(plan)
    assert lake.active_of("clean") == times(10, 11) and lake.active_of("rollback") == times(30, 32)


def test_rules_v1_inflight_clean_stays() -> None:
    """testArchiveInflightClean (0.14/0.15): cleans 10-13 done, 14 inflight; min 2, max 3:
    10 and 11 go; 12, 13 and the inflight 14 stay."""
    lake = ArchivalLake(6)
    for i in range(10, 14):
        lake.clean(i)
    lake.clean(14, state=State.INFLIGHT)
    assert lake.plan_and_archive(min=2, max=3) == times(10, 11)
    assert [i.requested_time for i in lake.table().timeline] == times(12, 13, 14)


def test_rules_v2_cleans_only_before_the_newest_archived_commit() -> None:
    """testArchiveTableWithCleanCommits (1.x): commit 1, cleans 2, 3, 5, commits 4, 6, 7, 8;
    min 2, max 4: nothing until the 8th instant, then commits 1, 4, 6 and every clean before
    6 (2, 3, 5) go; 7 and 8 stay."""
    lake = ArchivalLake(8)
    archived = {}
    for i in range(1, 9):
        if i in (2, 3, 5):
            lake.clean(i)
        else:
            lake.commit(i)
        archived[i] = lake.plan_and_archive(min=2, max=4)
    assert {i: a for i, a in archived.items() if a} == {8: times(1, 2, 3, 4, 5, 6)}
    assert [i.requested_time for i in lake.table().timeline] == times(7, 8)


def test_rules_v2_rollbacks_follow_the_commits() -> None:
    """testArchiveRollbacksTestTable (1.x): three rounds of commit, rollback of it, commit;
    min 4, max 5: after the third, the first commit, its rollback and the second commit go."""
    lake = ArchivalLake(8)
    archived = []
    for i in (1, 4, 7):
        lake.commit(i)
        lake.rollback(i + 1, of=i)
        lake.commit(i + 2)
        archived.append(lake.plan_and_archive(min=4, max=5))
    assert archived == [[], [], times(1, 2, 3)]


@pytest.mark.parametrize("metadata_table", [True, False])
def test_rules_v2_completed_rollbacks_and_cleans(metadata_table: bool) -> None:
    """testArchiveCompletedRollbackAndClean (1.x): 11 cleans, 11 commit/rollback pairs and a
    last clean; min 2, max 10: 9 commits go, and with them every clean and rollback before
    the newest of them; 2 commits, 2 rollbacks and the last clean stay."""
    lake = ArchivalLake(8, metadata_table=metadata_table)
    for i in range(1, 12):
        lake.clean(i)
    for i in range(12, 34, 2):
        lake.commit(i + 1)
        lake.rollback(i, of=i + 1)
    lake.clean(34)
    if metadata_table:
        lake.metadata_compaction(t(99))
    lake.plan_and_archive(min=2, max=10)
    assert lake.active() == times(31, 33)
    assert lake.active_of("rollback") == times(30, 32) and lake.active_of("clean") == times(34)


# Replace and clustering instants the cleaner still needs

@VERSIONS
def test_rules_replacecommits_stay_until_cleaned(version: int) -> None:
    """TestClusteringUtils.testGetOldestInstantToRetainForClustering (0.15) /
    testGetEarliestInstantToRetainForClustering (1.x), on the archiver: replacecommits stay
    until the cleaner has removed the file groups they replaced: with no clean, from the first
    replacecommit on; after a clean retaining from 6, from the first replacecommit at or after 6."""
    lake = ArchivalLake(version)
    lake.commit(1)
    lake.commit(2)
    for i in range(3, 9):
        lake.replace(i, clustering=False)
    plan = lake.plan(min=2, max=3)
    (replace,) = [b for b in plan.blockers if b.kind is BlockerKind.UNCLEANED_REPLACE]
    assert replace.instant is not None and replace.instant.requested_time == t(3)
    assert "no clean has run yet" in replace.why
    assert lake.archive(plan) == times(1, 2)
    lake.clean(9, retain=6)
    assert lake.plan_and_archive(min=2, max=3) == times(3, 4, 5)
    assert lake.active() == times(6, 7, 8)


@VERSIONS
def test_rules_clean_around_a_savepoint_guards_replacecommits(version: int) -> None:
    """testClusteringCommitAndSavepointWithArchival (1.x, HUDI-7779), on table version 6 too
    (TimelineArchiverV1 calls the same ClusteringUtils.getEarliestInstantToRetainForClustering):
    min 2, max 4; commits 1, 2, 5, clusterings 3, 4, 6, 7, a savepoint at 3. Only 1 and 2 go.
    A clean (8) that saw the savepoint 3 with replacecommits between it and its retain bound
    still holds archival at 3; beyond the savepoint, a clean (9) that saw savepoint 7 lets 4, 5,
    6 go. With the savepoint deleted, stopping at savepoints also lets 3, 4, 5 go. Three later
    commits (10-12) then archive down to keep.min but not the clustering 7, which clean 9 kept
    for savepoint 7: its replaced file groups are still on storage."""
    for beyond in (True, False):
        lake = ArchivalLake(version)
        for i in range(1, 8):
            if i in (1, 2, 5):
                lake.commit(i)
            else:
                lake.replace(i)
        lake.savepoint(3)
        assert lake.plan_and_archive(min=2, max=4, beyond=beyond) == times(1, 2)
        lake.clean(8, savepointed=t(3))
        plan = lake.plan(min=2, max=4, beyond=beyond)
        assert plan.actions == ()
        assert BlockerKind.UNCLEANED_REPLACE in kinds(plan)
        lake.clean(9, savepointed=t(7))
        assert lake.plan_and_archive(min=2, max=4, beyond=beyond) == (times(4, 5, 6) if beyond else [])
        lake.delete_savepoint(3)
        lake.plan_and_archive(min=2, max=4, beyond=beyond)
        assert lake.active() == (times(3, 7) if beyond else times(6, 7))
        assert lake.active_of("clean") == times(8, 9)
        for i in (10, 11, 12):
            lake.commit(i)
        plan = lake.plan(min=2, max=4, beyond=beyond)
        (held,) = [b for b in plan.blockers if b.kind is BlockerKind.UNCLEANED_REPLACE]
        assert held.instant is not None and held.instant.requested_time == t(7)
        lake.archive(plan)
        assert lake.active() == times(7, 10, 11, 12)


def test_rules_v2_clean_savepoint_without_replacecommits_does_not_block() -> None:
    """testArchiveTableWithCleanerEarliestSavepoint (1.x): min 4, max 5; commits 1-5, 8-12,
    a clustering at 7, cleans 6 and 13-15 that saw savepoint 3, clean 16 that saw savepoint 10.
    No replacecommit lies between savepoint 3 and clean 6's bound, so the clean does not hold
    archival at 3, but the clustering 7 (retained by clean 6) does; clean 16 (no replacecommit
    between 10 and 16) lets 7 and 8 go, with clean 6."""
    lake = ArchivalLake(8)
    sizes = {}
    for i in range(1, 17):
        if i == 7:
            lake.replace(i)
        elif i != 6 and i <= 12:
            lake.commit(i)
        else:
            lake.clean(i, savepointed=t(10) if i == 16 else t(3))
        lake.plan_and_archive(min=4, max=5)
        sizes[i] = len(lake.table().timeline.completed())
    assert [sizes[i] for i in range(7, 16)] == [5, 6, 5, 6, 6, 7, 8, 9, 10]
    assert lake.active() == times(9, 10, 11, 12)
    assert lake.active_of("clean") == times(13, 14, 15, 16)


def test_rules_v1_inflight_replacecommit_keeps_the_commit_before_it() -> None:
    """0.15 ClusteringUtils.getOldestInstantToRetainForClustering: the last completed commit
    before the first inflight replacecommit stays (a requested one alone does not count here;
    the earliest pending write holds archival anyway). The blocker names the replacecommit.
    (The cleaner retains nothing by commits here, so that its window, which the pending
    clustering pins too, does not raise keep.min.)"""
    lake = ArchivalLake(6)
    for i in range(1, 6):
        lake.commit(i)
    clustering = lake.replace(6, state=State.INFLIGHT)
    for i in range(7, 10):
        lake.commit(i)
    plan = lake.plan(min=2, max=3, hoodie_clean_policy="KEEP_LATEST_FILE_VERSIONS")
    assert [i.requested_time for i in plan.instants] == times(1, 2, 3, 4)
    assert [b.instant for b in plan.blockers if b.kind is BlockerKind.PENDING_CLUSTERING] == [clustering]


# Archival switched off

@VERSIONS
def test_rules_archival_disabled(version: int) -> None:
    """HoodieArchivalConfig.AUTO_ARCHIVE off: Hudi's writers never archive (a blocker), yet an
    explicit archive moves what the rules choose. The metaserver on: Hudi's archiver archives
    nothing (getInstantsToArchive returns nothing)."""
    lake = ArchivalLake(version)
    for i in range(1, 8):
        lake.commit(i)
    off = lake.plan(min=2, max=3, hoodie_archive_automatic=False)
    assert off.blockers[0].kind is BlockerKind.ARCHIVAL_DISABLED and len(off.actions) == 5
    metaserver = lake.plan(min=2, max=3, hoodie_metaserver_enabled=True)
    assert metaserver.actions == () and kinds(metaserver) == {BlockerKind.ARCHIVAL_DISABLED}


def test_rules_inputs_are_pure() -> None:
    """The rules work on timelines alone (ArchivalInputs): the same inputs give the same choice."""
    from timeline.archive.rules import select

    timeline = Timeline.of(Instant(t(i), "commit", State.COMPLETED, t(i)) for i in range(1, 8))
    inputs = ArchivalInputs(timeline, 8, False)
    first = select(inputs, ArchivalSettings(2, 3), CleanConfig(commits_retained=1))
    assert first == select(inputs, ArchivalSettings(2, 3), CleanConfig(commits_retained=1))
    assert [i.requested_time for i in first.instants] == times(1, 2, 3, 4, 5)


# What each blocker says: the instant, since when, and why (the doctor and `cleanline archive
# plan` show them as they are)

def done(n: int, action: str = "commit") -> Instant:
    """A completed instant whose completion time differs from its requested time."""
    return Instant(t(n), action, State.COMPLETED, t(n)[:-3] + "500")


def said(selection: object) -> list[tuple[BlockerKind, str, tuple[str, str, State] | None, str | None]]:
    return [(b.kind, b.why, None if b.instant is None else (b.instant.requested_time, b.instant.action,
                                                            b.instant.state), b.since)
            for b in selection.blockers]  # type: ignore[attr-defined]


FILE_VERSIONS = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS)  # no cleaner bound on the counts


def test_rules_blocker_of_a_pending_write_says_what_it_keeps() -> None:
    from timeline.archive.rules import select

    first = Timeline.of([Instant(t(1), "commit", State.INFLIGHT), *(done(i) for i in range(2, 8))])
    assert said(select(ArchivalInputs(first, 8, False), ArchivalSettings(2, 3), FILE_VERSIONS)) == [
        (BlockerKind.PENDING_INSTANT, f"commit {t(1)} is inflight: archival keeps every commit after it, so that no "
         "completed commit before a pending write leaves the active timeline", (t(1), "commit", State.INFLIGHT), t(1))]
    compaction = Timeline.of([done(1, "deltacommit"), done(2, "deltacommit"),
                              Instant(t(3), "compaction", State.REQUESTED),
                              *(done(i, "deltacommit") for i in range(4, 9))])
    settings = ArchivalSettings(2, 3, compaction_max_delta_commits=50)
    assert said(select(ArchivalInputs(compaction, 8, True), settings, FILE_VERSIONS))[-1] == (
        BlockerKind.PENDING_COMPACTION, f"compaction {t(3)} is requested: archival keeps commit {t(2)} (the last "
        "completed before it) and every later one, so that no completed commit before a pending write leaves the "
        "active timeline", (t(3), "compaction", State.REQUESTED), t(3))


def test_rules_blocker_of_a_pending_clustering_after_a_pending_write() -> None:
    """Two pending instants: the pending write's rule and the clustering rule each name theirs."""
    from timeline.archive.rules import select

    timeline = Timeline.of([done(1), done(2), Instant(t(3), "commit", State.INFLIGHT),
                            Instant(t(4), "clustering", State.INFLIGHT), *(done(i) for i in range(5, 11))])
    assert said(select(ArchivalInputs(timeline, 8, False), ArchivalSettings(2, 3), FILE_VERSIONS)) == [
        (BlockerKind.PENDING_INSTANT, f"commit {t(3)} is inflight: archival keeps commit {t(2)} (the last completed "
         "before it) and every later one, so that no completed commit before a pending write leaves the active "
         "timeline", (t(3), "commit", State.INFLIGHT), t(3)),
        (BlockerKind.PENDING_CLUSTERING, f"clustering {t(4)} is inflight: archival keeps it and every later commit, so "
         "that no completed commit before a pending write leaves the active timeline",
         (t(4), "clustering", State.INFLIGHT), t(4))]


@pytest.mark.parametrize("clustering", [False, True])
def test_rules_blocker_of_an_inflight_replacecommit_v1_keeps_the_commit_before_it(clustering: bool) -> None:
    """0.15 getOldestInstantToRetainForClustering: the last completed commit before the first
    inflight replacecommit stays; behind an earlier pending write, both are named."""
    from timeline.archive.rules import select

    timeline = Timeline.of([done(1), Instant(t(2), "commit", State.INFLIGHT), done(3),
                            Instant(t(4), "replacecommit", State.INFLIGHT), *(done(i) for i in range(5, 10))])
    inputs = ArchivalInputs(timeline, 6, False, clustering=frozenset({t(4)} if clustering else ()))
    kind, what = ((BlockerKind.PENDING_CLUSTERING, "clustering") if clustering
                  else (BlockerKind.PENDING_INSTANT, "replacecommit"))
    assert said(select(inputs, ArchivalSettings(2, 3), FILE_VERSIONS))[-1] == (
        kind, f"{what} {t(4)} is inflight: archival keeps commit {t(3)} (the last completed before it) and every "
        "later one, so that no completed commit before a pending write leaves the active timeline",
        (t(4), "replacecommit", State.INFLIGHT), t(4))


def test_rules_blocker_of_a_replacecommit_not_cleaned_dates_from_its_completion() -> None:
    from timeline.archive.rules import select

    commits = [done(1), done(2), done(3, "replacecommit"), *(done(i) for i in range(4, 9))]
    why = (f"replacecommit {t(3)} replaced file groups the cleaner has not removed yet ({{}}): archiving it would "
           "show them again")
    uncleaned = select(ArchivalInputs(Timeline.of(commits), 8, False), ArchivalSettings(2, 3), FILE_VERSIONS)
    assert said(uncleaned) == [(BlockerKind.UNCLEANED_REPLACE, why.format("no clean has run yet"),
                                (t(3), "replacecommit", State.COMPLETED), done(3).completion_time)]
    cleaned = ArchivalInputs(Timeline.of([*commits, done(9, "clean")]), 8, False,
                             last_clean_plan=CleanerPlan(earliest_instant_to_retain=InstantRef(t(2), "commit")))
    assert said(select(cleaned, ArchivalSettings(2, 3), FILE_VERSIONS))[0][1] == why.format(
        f"the last clean, {t(9)}, retains from there")


def test_rules_savepoint_cleaned_around_moves_the_bound_back_only_under_commit_policies() -> None:
    """ClusteringUtils.getEarliestReplacedSavepointInClean: never with KEEP_LATEST_FILE_VERSIONS,
    where the clean's earliest instant to retain is the bound."""
    from timeline.archive.rules import select

    plan = CleanerPlan(earliest_instant_to_retain=InstantRef(t(6), "commit"),
                       extra_metadata={"savepointed_timestamps": t(2)})
    timeline = Timeline.of([done(1), done(2), done(3, "replacecommit"), *(done(i) for i in range(4, 10)),
                            done(10, "clean")])
    inputs = ArchivalInputs(timeline, 8, False, last_clean_plan=plan)
    by_commits = select(inputs, ArchivalSettings(2, 3), CleanConfig(commits_retained=1))
    assert [i.requested_time for i in by_commits.instants] == times(1, 2)
    by_versions = select(inputs, ArchivalSettings(2, 3), FILE_VERSIONS)
    assert [i.requested_time for i in by_versions.instants] == times(1, 2, 3, 4, 5, 6, 7)
    assert by_versions.blockers == ()


def test_rules_blocker_of_a_savepoint_dates_from_its_completion() -> None:
    from timeline.archive.rules import select

    timeline = Timeline.of([*(done(i) for i in range(1, 9)), done(3, "savepoint")])
    inputs = ArchivalInputs(timeline, 8, False)
    assert said(select(inputs, ArchivalSettings(2, 3), FILE_VERSIONS)) == [
        (BlockerKind.SAVEPOINT, f"savepoint {t(3)}: archival never passes the first savepoint "
         "(hoodie.archive.beyond.savepoint=false)", (t(3), "savepoint", State.COMPLETED), done(3).completion_time)]
    assert said(select(inputs, ArchivalSettings(2, 3, beyond_savepoint=True), FILE_VERSIONS)) == [
        (BlockerKind.SAVEPOINT, f"commit {t(3)} is savepointed: with hoodie.archive.beyond.savepoint=true archival "
         "skips it and goes on past it", (t(3), "savepoint", State.COMPLETED), done(3).completion_time)]


def test_rules_blocker_of_the_compaction_window_dates_from_its_delta_commit() -> None:
    from timeline.archive.rules import select

    timeline = Timeline.of(done(i, "deltacommit") for i in range(1, 9))
    selection = select(ArchivalInputs(timeline, 8, True), ArchivalSettings(2, 3, compaction_max_delta_commits=5),
                       FILE_VERSIONS)
    assert said(selection) == [
        (BlockerKind.COMPACTION_WINDOW, "a compaction is scheduled after 5 delta commits "
         f"(hoodie.compact.inline.max.delta.commits): archival keeps the timeline from deltacommit {t(4)} on for it",
         (t(4), "deltacommit", State.COMPLETED), t(4))]


@pytest.mark.parametrize("version", [6, 8])
def test_rules_metadata_table_blockers(version: int) -> None:
    """0.15 getInstantsToArchive: only instants requested before the metadata table's latest
    compaction (LESSER_THAN: one requested at that time stays); 1.x: the first commit completed
    after it stays. Before its first compaction nothing, whatever else holds the window."""
    from timeline.archive.rules import select

    timeline = Timeline.of(Instant(t(i), "commit", State.COMPLETED, t(i)) for i in range(1, 9))
    none_yet = select(ArchivalInputs(Timeline.of([*timeline, done(2, "savepoint")]), version, False,
                                     metadata_table_available=True), ArchivalSettings(2, 3), FILE_VERSIONS)
    assert none_yet.instants == () and none_yet.keep.max_instants == 3
    assert said(none_yet)[0] == (BlockerKind.METADATA_TABLE_COMPACTION, "the metadata table has no completed "
                                 "compaction yet: Hudi archives nothing until it has one", None, None)
    assert {b.kind for b in none_yet.blockers} == {BlockerKind.METADATA_TABLE_COMPACTION, BlockerKind.SAVEPOINT}
    compacted = select(ArchivalInputs(timeline, version, False, metadata_table_available=True,
                                      metadata_table_compaction=t(4)), ArchivalSettings(2, 3), FILE_VERSIONS)
    first_held = 4 if version == 6 else 5
    assert [i.requested_time for i in compacted.instants] == times(*range(1, first_held))
    assert said(compacted) == [
        (BlockerKind.METADATA_TABLE_COMPACTION, f"the metadata table last compacted at {t(4)}: instants it has not "
         "compacted stay on the data table's timeline", (t(first_held), "commit", State.COMPLETED), t(4))]


@VERSIONS
def test_rules_metaserver_says_why_and_keeps_the_counts(version: int) -> None:
    from timeline.archive.rules import select

    timeline = Timeline.of(done(i) for i in range(1, 9))
    selection = select(ArchivalInputs(timeline, version, False), ArchivalSettings(2, 3, metaserver=True),
                       FILE_VERSIONS)
    assert selection.instants == () and (selection.keep.min_instants, selection.keep.max_instants) == (2, 3)
    assert said(selection) == [(BlockerKind.ARCHIVAL_DISABLED, "hoodie.metaserver.enabled=true: the metaserver keeps "
                                "the timeline and Hudi's archiver archives nothing", None, None)]


@VERSIONS
def test_rules_keep_min_above_keep_max_under_file_versions(version: int) -> None:
    """getCommitInstantsToArchive's limit(count - minInstantsToKeep): 0 archives nothing, a
    negative count fails (HoodieWriteConfig validates keep.max > keep.min only under
    KEEP_LATEST_COMMITS)."""
    from timeline.archive.rules import select

    timeline = Timeline.of(done(i) for i in range(1, 6))
    assert select(ArchivalInputs(timeline, version, False), ArchivalSettings(5, 4), FILE_VERSIONS).instants == ()
    with pytest.raises(ArchivalConfigError) as refused:
        select(ArchivalInputs(timeline, version, False), ArchivalSettings(6, 4), FILE_VERSIONS)
    assert str(refused.value) == ("5 completed commits above hoodie.keep.max.commits=4 but fewer than "
                                  "hoodie.keep.min.commits=6: Hudi's archiver fails on a negative count (keep.max "
                                  "must be greater than keep.min)")


def test_rules_v2_cleans_only_before_the_newest_commit_archived() -> None:
    """getCleanAndRollbackInstantsToArchive: LESSER_THAN the newest commit archived."""
    from timeline.archive.rules import select

    timeline = Timeline.of([*(done(i) for i in range(1, 6)), done(2, "clean"), done(3, "rollback")])
    selection = select(ArchivalInputs(timeline, 8, False), ArchivalSettings(2, 3), FILE_VERSIONS)
    assert [(i.requested_time, i.action) for i in selection.instants] == [
        (t(1), "commit"), (t(2), "clean"), (t(2), "commit"), (t(3), "commit")]


def test_rules_blockers_of_the_counts_say_whether_the_cleaner_raised_them() -> None:
    """ArchivalUtils.getMinAndMaxInstantsToKeep (HUDI-6370): the clean-retention blocker only when
    the configured keep.max alone would have let archival start."""
    from timeline.archive.rules import select

    few = select(ArchivalInputs(Timeline.of(done(i) for i in range(1, 4)), 8, False), ArchivalSettings(2, 3),
                 CleanConfig(commits_retained=3))
    assert said(few) == [(BlockerKind.NOT_ENOUGH_COMMITS, "3 completed commits: archival starts only above 3 "
                          "(hoodie.keep.max.commits) and then keeps 2", None, None)]
    raised = select(ArchivalInputs(Timeline.of(done(i) for i in range(1, 6)), 8, False), ArchivalSettings(2, 3),
                    CleanConfig(commits_retained=3))
    assert said(raised) == [
        (BlockerKind.NOT_ENOUGH_COMMITS, "5 completed commits: archival starts only above 5 "
         "(hoodie.keep.max.commits=3, raised by the cleaner) and then keeps 4", None, None),
        (BlockerKind.CLEAN_RETENTION, f"the cleaner (KEEP_LATEST_COMMITS) retains from {t(3)}, so archival keeps 4 "
         "completed commits, not hoodie.keep.min.commits=2 (and starts above 5, not 3)",
         (t(3), "commit", State.COMPLETED), t(3))]
    at_max = select(ArchivalInputs(Timeline.of(done(i) for i in range(1, 5)), 8, False), ArchivalSettings(2, 4),
                    CleanConfig(commits_retained=3))
    assert at_max.keep.raised and kinds(at_max) == {BlockerKind.NOT_ENOUGH_COMMITS}  # 4 commits: not above 4 anyway


def test_rules_cleaner_raises_the_counts_by_delta_commits_on_mor() -> None:
    from timeline.archive.rules import select

    timeline = Timeline.of(done(i, "deltacommit") for i in range(1, 9))
    selection = select(ArchivalInputs(timeline, 8, True), ArchivalSettings(2, 3, compaction_max_delta_commits=1),
                       CleanConfig(commits_retained=5))
    assert (selection.keep.min_instants, selection.keep.max_instants) == (6, 7)
    assert [i.requested_time for i in selection.instants] == times(1, 2)


@pytest.mark.parametrize("beyond", [False, True])
def test_rules_blocker_of_the_data_table_timeline(beyond: bool) -> None:
    """TimelineUtils.getEarliestInstantForMetadataArchival: with beyond-savepoint, the first
    commit no savepoint has."""
    from timeline.archive.rules import select

    data = Timeline.of([done(3), done(3, "savepoint"), done(4), Instant(t(6), "commit", State.INFLIGHT)])
    metadata = Timeline.of(done(i, "deltacommit") for i in range(1, 9))
    selection = select(ArchivalInputs(metadata, 8, True, data_table_timeline=data),
                       ArchivalSettings(2, 3, beyond_savepoint=beyond, compaction_max_delta_commits=1), FILE_VERSIONS)
    held = 4 if beyond else 3
    assert [i.requested_time for i in selection.instants] == times(*range(1, held))
    assert said(selection) == [
        (BlockerKind.DATA_TABLE_TIMELINE, f"the data table's active timeline holds commit {t(held)} (completed): the "
         "metadata table keeps its instants from there on (TimelineUtils.getEarliestInstantForMetadataArchival)",
         (t(held), "commit", State.COMPLETED), t(held))]


def test_rules_blockers_once_each_table_wide_first_then_by_instant() -> None:
    from timeline.archive.rules import select

    savepoints = Timeline.of([*(done(i) for i in range(1, 9)), done(3, "savepoint"), done(4, "savepoint")])
    selection = select(ArchivalInputs(savepoints, 8, False),
                       ArchivalSettings(2, 3, beyond_savepoint=True, automatic=False), FILE_VERSIONS)
    assert [i.requested_time for i in selection.instants] == times(1, 2, 5, 6, 7, 8)  # an explicit archive's choice
    assert said(selection) == [
        (BlockerKind.ARCHIVAL_DISABLED, "hoodie.archive.automatic=false: Hudi's writers never archive after a commit; "
         "only an explicit archive moves these instants", None, None),
        *((BlockerKind.SAVEPOINT, f"commit {t(n)} is savepointed: with hoodie.archive.beyond.savepoint=true archival "
           "skips it and goes on past it", (t(n), "savepoint", State.COMPLETED), done(n).completion_time)
          for n in (3, 4))]
    pending_first = Timeline.of([done(1), done(2), Instant(t(3), "commit", State.INFLIGHT),
                                 *(done(i) for i in range(4, 9)), done(6, "savepoint")])
    by_instant = select(ArchivalInputs(pending_first, 8, False), ArchivalSettings(2, 3), FILE_VERSIONS)
    assert [(b.kind, b.instant and b.instant.requested_time) for b in by_instant.blockers] == [
        (BlockerKind.PENDING_INSTANT, t(3)), (BlockerKind.SAVEPOINT, t(6))]  # by instant, not by kind
    table_wide = select(ArchivalInputs(pending_first, 8, False), ArchivalSettings(2, 3),
                        CleanConfig(commits_retained=3))
    assert [(b.kind, b.instant and b.instant.requested_time) for b in table_wide.blockers] == [
        (BlockerKind.NOT_ENOUGH_COMMITS, None), (BlockerKind.CLEAN_RETENTION, t(2))]


# retain.py's rules, one by one (timeline/archive/retain.py)

def test_retain_modified_after_by_completion_is_strictly_after() -> None:
    """HoodieDefaultTimeline.findInstantsModifiedAfterByCompletionTime: pending instants requested
    after the time, instants completed after it (GREATER_THAN both), never the time itself."""
    from timeline.archive.retain import modified_after_by_completion

    timeline = Timeline.of([Instant(t(1), "deltacommit", State.INFLIGHT),
                            Instant(t(2), "deltacommit", State.COMPLETED, t(5)),
                            Instant(t(3), "deltacommit", State.INFLIGHT),
                            Instant(t(4), "deltacommit", State.COMPLETED, t(6)),
                            Instant(t(7), "deltacommit", State.INFLIGHT)])
    assert [i.requested_time for i in modified_after_by_completion(timeline, t(3))] == times(2, 4, 7)
    assert [i.requested_time for i in modified_after_by_completion(timeline, t(5))] == times(4, 7)


def test_retain_replaced_savepoint_in_clean() -> None:
    """ClusteringUtils.getEarliestReplacedSavepointInClean: the earliest savepoint the clean saw
    (of several, in any order), when a completed replacecommit lies from it up to the clean's
    earliest instant to retain (both ends included) and that instant is after the savepoint."""
    from timeline.archive.retain import earliest_replaced_savepoint_in_clean

    def plan(ectr: int | None, savepoints: str | None) -> CleanerPlan:
        return CleanerPlan(earliest_instant_to_retain=None if ectr is None else InstantRef(t(ectr), "commit"),
                           extra_metadata={} if savepoints is None else {"savepointed_timestamps": savepoints})

    def timeline(*replaced: int) -> Timeline:
        return Timeline.of([*(done(i) for i in range(1, 10)), *(done(i, "replacecommit") for i in replaced)])

    commits = CleanPolicy.KEEP_LATEST_COMMITS
    assert earliest_replaced_savepoint_in_clean(timeline(3), commits, plan(5, f"{t(4)},{t(2)}")) == t(2)
    assert earliest_replaced_savepoint_in_clean(timeline(5), commits, plan(5, t(2))) == t(2)  # at the bound
    assert earliest_replaced_savepoint_in_clean(timeline(6), commits, plan(5, t(2))) is None
    assert earliest_replaced_savepoint_in_clean(timeline(3), commits, plan(3, t(3))) is None  # not after it
    assert earliest_replaced_savepoint_in_clean(timeline(3), commits, plan(5, None)) is None  # no savepoint
    assert earliest_replaced_savepoint_in_clean(timeline(3), commits, plan(None, t(2))) is None  # no bound
    assert earliest_replaced_savepoint_in_clean(timeline(3), CleanPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                plan(5, t(2))) is None


def test_retain_for_clustering_bound_of_a_clean_without_an_earliest_instant() -> None:
    """A clean whose plan names no earliest instant to retain (KEEP_LATEST_FILE_VERSIONS) bounds
    the replace instants by its own time."""
    from timeline.archive.retain import earliest_instant_to_retain_for_clustering

    timeline = Timeline.of([done(1), done(2, "replacecommit"), done(3, "clean"), done(4),
                            done(5, "replacecommit"), done(6)])
    for version in (6, 8):
        for plan in (None, CleanerPlan()):
            assert earliest_instant_to_retain_for_clustering(timeline, plan, table_version=version) == done(
                5, "replacecommit")


def test_retain_for_clustering_v1_keeps_the_commit_before_the_first_inflight_replacecommit() -> None:
    """0.15 getOldestInstantToRetainForClustering, kept by TimelineArchiverV1 beside 1.x's rule: the
    earlier of the two; the commit before the inflight one when the cleaner's bound passed every
    replace instant."""
    from timeline.archive.retain import earliest_instant_to_retain_for_clustering

    inflight = Instant(t(4), "replacecommit", State.INFLIGHT)
    earlier = Timeline.of([done(1), done(2, "replacecommit"), done(3), inflight, done(5)])
    assert earliest_instant_to_retain_for_clustering(earlier, None, table_version=6) == done(2, "replacecommit")
    passed = Timeline.of([done(1), done(3), inflight, done(5), done(6), done(7, "clean")])
    plan = CleanerPlan(earliest_instant_to_retain=InstantRef(t(6), "commit"))
    assert earliest_instant_to_retain_for_clustering(passed, plan, table_version=6) == done(3)
    assert earliest_instant_to_retain_for_clustering(passed, plan, table_version=8) is None


def test_retain_cleaner_by_hours_keeps_the_commit_at_the_cutoff() -> None:
    """CleanerUtils.getEarliestCommitToRetain, KEEP_LATEST_BY_HOURS: the first completed commit at
    or after (GREATER_THAN_OR_EQUALS) the latest commit's time less the hours."""
    timeline = Timeline.of([done(0), done(1), done(2), done(61)])
    clean = CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1)
    assert cleaner_earliest_commit_to_retain(timeline, clean, done(61)) == done(1)


def test_retain_keep_counts_name_the_cleaners_commit_only_when_it_raised_them() -> None:
    """ArchivalUtils.getMinAndMaxInstantsToKeep: the configured counts stand when the commits the
    cleaner retains, plus two, are not more than keep.min."""
    timeline = Timeline.of(done(i) for i in range(1, 6))
    settings = ArchivalSettings(4, 6)
    assert min_and_max_instants_to_keep(timeline, settings, CleanConfig(commits_retained=3),
                                        is_mor=False) == KeepCounts(4, 6, 4, 6)  # 2 after t(3), + 2 = keep.min
    raised = min_and_max_instants_to_keep(timeline, settings, CleanConfig(commits_retained=4), is_mor=False)
    assert raised == KeepCounts(5, 7, 4, 6, done(2))
