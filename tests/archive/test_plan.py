"""The archival plan (timeline/archive/plan.py): every state file of each instant to archive,
the active timeline before and after, the settings as Hudi's writers get them, a broken LSM
history read as Hudi's `LSMTimeline` reads it, and plans of copies of real tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.archive.helpers import ArchivalLake, t, times
from tests.helpers import Lake, archive_instants, tree_snapshot
from timeline import HudiTable
from timeline.archive.plan import V1_ARCHIVER, V2_ARCHIVER, is_metadata_table
from timeline.archive.rules import BlockerKind
from timeline.archive.settings import ArchivalConfigError
from timeline.clean.config import CleanConfig
from timeline.instant import Instant, State
from timeline.roots import LakeRoots
from timeline.savepoint import create_savepoint, delete_savepoint
from timeline.storage import MemoryStorage

HISTORY = "/t/.hoodie/timeline/history"


@pytest.mark.parametrize("version", [6, 8])
def test_plan_names_every_state_file_and_counts_the_active_timeline(version: int) -> None:
    """TimelineArchiverV1/V2.getInstantsToArchive gather all the states of an instant (Hudi's
    `ActiveAction`): the plan names each state file, requested first; the active timeline
    shrinks by the instants archived (a clean before them goes too: V1 when cleans are too many,
    V2 when older than the newest commit archived)."""
    lake = ArchivalLake(version)
    for i in range(1, 13):
        if i in (4, 7, 10, 11, 12):
            lake.clean(i)
        else:
            lake.commit(i)
    plan = lake.plan(min=2, max=4)
    assert plan.archiver == (V2_ARCHIVER if version == 8 else V1_ARCHIVER)
    assert (plan.table_uri, plan.table_version, plan.clean) == ("memory://t", version, CleanConfig(commits_retained=1))
    expected = times(1, 2, 3, 4, 5, 6, 7, 10) if version == 6 else times(1, 2, 3, 4, 5, 6)
    assert [a.instant.requested_time for a in plan.actions] == expected
    assert (plan.active_before, plan.active_after, plan.archivable) == (12, 12 - len(expected), len(expected))
    for action in plan.actions:
        assert [s for s, _ in action.state_files] == [State.REQUESTED, State.INFLIGHT, State.COMPLETED]
        assert all(lake.lake.storage.exists(p) for p in action.paths)
    assert plan.runnable and plan.instants == tuple(a.instant for a in plan.actions)


def test_plan_reads_nothing_it_should_not_and_writes_nothing(table_copy) -> None:
    """The plan only reads: the table's files are the same after it (sizes and times)."""
    path: Path = table_copy("sample_table/mor/avro/v9_txns_simple_meta")
    before = tree_snapshot(path)
    HudiTable.open(str(path)).inspect.archival({"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"})
    assert tree_snapshot(path) == before


def test_plan_settings_layered_as_a_writer_gets_them(table_copy) -> None:
    """hoodie.properties, then the root's CLEANLINE_HUDI_OPTIONS (passed as `roots`), then
    the call's options, as lock discovery layers them."""
    path: Path = table_copy("sample_table/cow/v8_nonpartitioned")
    set_table_properties(path, {"hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "6"})
    assert HudiTable.open(str(path)).inspect.archival().settings.min_commits == 5
    roots = LakeRoots(hudi={str(path.parent): {"hoodie.keep.max.commits": "8"}})
    settings = HudiTable.open(str(path), roots=roots).inspect.archival().settings
    assert (settings.min_commits, settings.max_commits) == (5, 8)
    called = HudiTable.open(str(path), roots=roots).inspect.archival({"hoodie.keep.max.commits": "9"}).settings
    assert called.as_properties()["hoodie.keep.max.commits"] == "9"


def set_table_properties(path: Path, values: dict[str, str]) -> None:
    from timeline.config import update_config
    from timeline.storage import storage_for

    storage, base = storage_for(str(path))
    update_config(storage, base, values)


def test_plan_refuses_settings_hudi_refuses_and_names_the_table() -> None:
    lake = ArchivalLake(6, metadata_table=True)
    with pytest.raises(ArchivalConfigError, match=r"^memory://t: hoodie.keep.min.commits='lots'"):
        lake.table().inspect.archival({"hoodie.keep.min.commits": "lots"})
    # asked of its metadata table, whose settings are derived from the data table's: the data table is named
    with pytest.raises(ArchivalConfigError, match=r"^memory://t: hoodie.keep.min.commits='lots'"):
        HudiTable.load(lake.lake.storage, "/t/.hoodie/metadata").inspect.archival({"hoodie.keep.min.commits": "lots"})
    with pytest.raises(ArchivalConfigError, match=r"/t: Increase hoodie.keep.max.commits"):
        lake.table().inspect.archival({"hoodie.keep.min.commits": "30", "hoodie.keep.max.commits": "30"})


def test_plan_metadata_table_settings_hudi_refuses_name_the_metadata_table() -> None:
    """HoodieMetadataWriteUtils.createMetadataWriteConfig builds the metadata table's writer
    config (keep counts one above the data table's; on table version 6 the KEEP_LATEST_COMMITS
    cleaner whatever the data table's) and HoodieWriteConfig.Builder.validate checks it: equal
    keep counts pass on a version-6 data table cleaned by file versions and are refused for its
    metadata table, naming it; on version 8 the metadata table borrows the policy, unchecked."""
    lake = ArchivalLake(6, metadata_table=True)
    for i in range(1, 8):
        lake.commit(i)
    with pytest.raises(ArchivalConfigError) as refused:
        lake.plan(min=5, max=5, hoodie_clean_policy="KEEP_LATEST_FILE_VERSIONS")
    assert str(refused.value) == ("memory://t/.hoodie/metadata: Increase hoodie.keep.max.commits=6 to be greater than "
                                  "hoodie.keep.min.commits=6.")
    newer = ArchivalLake(8, metadata_table=True)
    for i in range(1, 8):
        newer.commit(i)
    assert newer.plan(min=5, max=5, hoodie_clean_policy="KEEP_LATEST_FILE_VERSIONS").metadata_table is not None


@pytest.mark.parametrize("version", [6, 8])
def test_plan_metadata_table_warnings_name_the_data_table_settings_they_come_from(version: int) -> None:
    """The metadata table's keep.min (the data table's + 1) at or below its own cleaner's
    retained commits (20 at least, createMetadataWriteConfig) is only a warning, worded with the
    data table's settings it derives from; the data table's own plan warns of nothing."""
    lake = ArchivalLake(version, metadata_table=True)
    for i in range(1, 8):
        lake.commit(i)
    plan = lake.plan(min=2, max=3)
    assert plan.warnings == () and plan.metadata_table is not None
    assert plan.metadata_table.warnings == (
        "hoodie.keep.min.commits+1=3 is not greater than the metadata table's hoodie.clean.commits.retained=20: "
        "Hudi's archiver raises it to keep the cleaner's window",)


@pytest.mark.parametrize(("base", "is_metadata"), [
    ("/d/.hoodie/metadata", True), ("/d/.hoodie/metadata/", True), ("/d/.hoodie/metadataX", False),
    ("/d/metadata", False), ("/d", False)])
def test_plan_metadata_table_is_known_by_its_path(base: str, is_metadata: bool) -> None:
    """HoodieTableMetadata.isMetadataTable: the base path, without a trailing separator, ends
    with `/.hoodie/metadata`."""
    lake = Lake(MemoryStorage(), base.rstrip("/"), version=8)
    assert is_metadata_table(HudiTable.load(lake.storage, base)) is is_metadata


@pytest.mark.parametrize("slash", ["", "/"])
def test_plan_of_a_real_metadata_table_asked_on_its_own(table_copy, slash: str) -> None:
    """Asked of a metadata table itself (its folder, with or without a trailing separator), the
    plan is its own, over its data table's active timeline as it is now: bound by the data
    table's first commit, not by the one its data table's archival would leave first."""
    path: Path = table_copy("sample_table/cow/v9_txns_simple_meta")
    mdt = HudiTable.load(HudiTable.open(str(path)).storage, f"{path}/.hoodie/metadata{slash}")
    own = mdt.inspect.archival(SMALL)
    assert own.table_uri == f"file:{path}/.hoodie/metadata{slash}" and own.metadata_table is None
    assert [i.requested_time for i in own.instants] == [f"0000000000000000{n}" for n in range(5)]
    assert [(b.kind, b.instant.requested_time if b.instant else None) for b in own.blockers] == [
        (BlockerKind.DATA_TABLE_TIMELINE, "20260307162434124"), (BlockerKind.COMPACTION_WINDOW, "20260307162449278")]
    with_data = plan_of(path).metadata_table
    assert with_data is not None and len(with_data.instants) == 11


def test_plan_metadata_table_of_a_data_table_that_cannot_archive_sees_its_timeline_unchanged() -> None:
    """A data table whose archival cannot run (a broken LSM history) moves nothing: its
    metadata table's plan is bound by the data table's active timeline as it is (its first
    commit, 4), not as the blocked archival would have left it (from 9)."""
    lake = ArchivalLake(8, metadata_table=True)
    assert lake.mdt is not None
    for i in range(1, 11):
        lake.commit(i)
        lake.mdt.commit(t(i), action="deltacommit")
    lake.metadata_compaction(t(9)[:-3] + "001")
    archive_instants(lake.lake.storage, lake.lake.timeline_folder,
                     [(t(i), t(i)[:-3] + "999", "commit") for i in (1, 2, 3)])
    healthy = lake.plan(min=2, max=3)
    assert healthy.runnable and healthy.metadata_table is not None
    assert [i.requested_time for i in healthy.metadata_table.instants] == times(*range(1, 9))
    lake.lake.storage.write(f"{HISTORY}/manifest_2", json.dumps({"files": []}).encode())
    blocked = lake.plan(min=2, max=3)
    assert not blocked.runnable and blocked.instants and blocked.metadata_table is not None
    assert [i.requested_time for i in blocked.metadata_table.instants] == times(1, 2, 3)
    assert [(b.kind, b.instant) for b in blocked.metadata_table.blockers] == [
        (BlockerKind.DATA_TABLE_TIMELINE, lake.table().timeline.first())]


# Which pending replacecommits are clusterings (ClusteringUtils.isClusteringInstant)

CLUSTERING_PLAN = {"operationType": "cluster", "clusteringPlan": {"inputGroups": [], "version": 1}, "version": 1}


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("requested", [None, CLUSTERING_PLAN], ids=["inflight-only", "clustering-plan"])
def test_plan_pending_replacecommit_is_a_clustering_by_its_requested_plan(version: int, requested: object) -> None:
    """ClusteringUtils.isClusteringInstant: a pending replacecommit is a clustering when its
    requested file holds a clustering plan (Hudi 1.x still says so on table versions 8 and 9,
    where a clustering has its own action); one with no requested file (only `.inflight`) has
    no plan and is a plain pending write. The blocker names it so."""
    lake = ArchivalLake(version)
    lake.commit(1)
    lake.commit(2)
    if requested is None:
        lake.lake.instant_file(Instant(t(3), "replacecommit", State.INFLIGHT))
    else:
        lake.lake.instant_file(Instant(t(3), "replacecommit", State.REQUESTED), requested)  # type: ignore[arg-type]
    for i in range(4, 10):
        lake.commit(i)
    plan = lake.plan(min=2, max=3, hoodie_clean_policy="KEEP_LATEST_FILE_VERSIONS")
    state, kind, what = (("inflight", BlockerKind.PENDING_INSTANT, "replacecommit") if requested is None
                         else ("requested", BlockerKind.PENDING_CLUSTERING, "clustering"))
    assert [(b.kind, b.why) for b in plan.blockers] == [
        (kind, f"{what} {t(3)} is {state}: archival keeps commit {t(2)} (the last completed before it) and every "
         "later one, so that no completed commit before a pending write leaves the active timeline")]
    assert plan.instants == lake.table().timeline.completed().instants[:1]


def test_plan_v2_reads_the_last_clean_plan_for_a_pending_clustering() -> None:
    """TimelineArchiverV2.getCommitInstantsToArchive: ClusteringUtils.getEarliestInstantToRetainForClustering
    reads the last completed clean's plan (CleanerUtils.getCleanerPlan) whenever the timeline
    has a replacecommit or clustering, here only a pending clustering (action clustering): the
    plan's earliest instant to retain (1, a write pending at 2 held the clean) lies before it,
    so the clustering holds itself and every later commit; the pending write at 2 holds from 1."""
    lake = ArchivalLake(8)
    lake.commit(1)
    lake.commit(2, state=State.INFLIGHT)
    lake.commit(3)
    lake.replace(4, state=State.REQUESTED)
    for i in range(5, 10):
        lake.commit(i)
    lake.clean(10, retain=1)
    for i in range(11, 90):
        lake.commit(i)
    plan = lake.plan(min=2, max=3, hoodie_clean_policy="KEEP_LATEST_BY_HOURS", hoodie_cleaner_hours_retained=1)
    assert plan.actions == ()
    assert [(b.kind, b.instant.requested_time if b.instant else None) for b in plan.blockers] == [
        (BlockerKind.PENDING_INSTANT, t(2)), (BlockerKind.PENDING_CLUSTERING, t(4)),
        (BlockerKind.CLEAN_RETENTION, t(29))]
    assert plan.blockers[1].why == (f"clustering {t(4)} is requested: archival keeps it and every later commit, so "
                                    "that no completed commit before a pending write leaves the active timeline")


# The LSM history as Hudi reads it (LSMTimeline.latestSnapshotVersion / latestSnapshotManifest)

def lsm_lake(props: dict[str, str] | None = None) -> ArchivalLake:
    """A version-8 table that archived commits 1-3 (layer-0 file, manifest_1, _version_ = 1)
    and has commits 4-10 active."""
    lake = ArchivalLake(8, props=props)
    for i in range(1, 11):
        lake.commit(i)
    archive_instants(lake.lake.storage, lake.lake.timeline_folder,
                     [(t(i), t(i)[:-3] + "999", "commit") for i in (1, 2, 3)])
    return lake


def lsm_kinds(lake: ArchivalLake) -> tuple[list[str], list[str]]:
    plan = lake.plan(min=2, max=3)
    return [b.why for b in plan.blockers if b.kind is BlockerKind.LSM_MANIFEST], list(plan.warnings)


def test_plan_healthy_lsm_history_blocks_nothing() -> None:
    lake = lsm_lake()
    plan = lake.plan(min=2, max=3)
    assert plan.runnable and [i.requested_time for i in plan.instants] == times(4, 5, 6, 7, 8)
    assert not [b for b in plan.blockers if b.kind is BlockerKind.LSM_MANIFEST]


@pytest.mark.parametrize("content", [None, b"invalid_version", b"1\n", b""])
def test_plan_missing_or_corrupt_version_file_falls_back_to_the_highest_manifest(content: bytes | None) -> None:
    """testCompactionWithCorruptVersionFile: a `_version_` that is missing or no number (Java's
    Integer.parseInt: no whitespace, no empty text) does not block: Hudi reads the highest
    manifest_N and writes the version file again at its next archival. A warning, no blocker."""
    lake = lsm_lake()
    lake.lake.storage.delete(f"{HISTORY}/_version_")
    if content is not None:
        lake.lake.storage.write(f"{HISTORY}/_version_", content)
    blockers, warnings = lsm_kinds(lake)
    assert blockers == []
    what = "is missing" if content is None else "holds no number"
    assert warnings == [f"{HISTORY}: _version_ {what}; Hudi reads the highest manifest, manifest_1, and writes the "
                        "file again at its next archival"]
    assert lake.plan(min=2, max=3).runnable


def test_plan_leftover_manifest_beyond_the_version_file_blocks_archival() -> None:
    """LSMTimelineWriter.createManifestFile writes manifest_N+1 (createImmutableFileInPath, no
    overwrite), then `_version_`: an archival that died between the two leaves a manifest Hudi's
    next archival fails on (apache/hudi #19649). A blocker: the plan is not runnable."""
    lake = lsm_lake()
    lake.lake.storage.write(f"{HISTORY}/manifest_2", json.dumps({"files": []}).encode())
    blockers, _ = lsm_kinds(lake)
    assert blockers == [f"{HISTORY}: manifest_2 lies beyond _version_ (1), left by an archival that did not finish: "
                        "Hudi's archiver creates manifest_2 and each one after without overwriting, and fails on it"]
    plan = lake.plan(min=2, max=3)
    assert not plan.runnable and plan.archivable == 0 and plan.actions
    assert plan.blockers[0].kind is BlockerKind.LSM_MANIFEST and plan.blockers[0].since is not None


def test_plan_manifest_listing_a_missing_file_blocks_archival() -> None:
    """HoodieArchivedTimeline reads every file the latest manifest lists: one gone breaks it."""
    lake = lsm_lake()
    (name,) = [s.name for s in lake.lake.storage.list(HISTORY) if s.name.endswith(".parquet")]
    lake.lake.storage.delete(f"{HISTORY}/{name}")
    blockers, _ = lsm_kinds(lake)
    assert blockers == [f"{HISTORY}: manifest_1 lists {name}, which is missing: reading the archived timeline fails"]


@pytest.mark.parametrize("broken", ["missing", "not json", "no list"])
def test_plan_version_naming_no_usable_manifest_blocks_archival(broken: str) -> None:
    """LSMTimeline.latestSnapshotManifest reads the manifest `_version_` names: missing, or not
    a manifest (Jackson fails), Hudi can neither read the archived timeline nor archive."""
    lake = lsm_lake()
    if broken == "missing":
        lake.lake.storage.write(f"{HISTORY}/_version_", b"7", overwrite=True)
    else:
        lake.lake.storage.write(f"{HISTORY}/manifest_1", b"{broken" if broken == "not json" else b'{"files": 3}',
                                overwrite=True)
    blockers, _ = lsm_kinds(lake)
    assert blockers == [f"{HISTORY}: _version_ names manifest_7, which is missing: Hudi cannot read the archived "
                        "timeline nor archive more" if broken == "missing" else
                        f"{HISTORY}: manifest_1 is not an LSM timeline manifest: Hudi cannot read the archived "
                        "timeline nor archive more"]


WRITTEN_MS = 1781526896789  # 2026-06-15 12:34:56.789 UTC, 18:04:56.789 in India


@pytest.mark.parametrize(("timezone", "since"), [("UTC", "20260615123456789"), ("LOCAL", "20260615180456789")])
@pytest.mark.parametrize("broken", ["leftover", "version names a missing manifest", "not a manifest",
                                    "lists a missing file"])
def test_plan_lsm_blocker_is_dated_by_the_file_that_breaks_it_in_the_timeline_zone(
        india_zone: None, timezone: str, since: str, broken: str) -> None:
    """A broken LSM history's blocker says since when: the modification time of the file that
    breaks it (the leftover manifest, the `_version_` naming a missing one, the manifest that
    does not parse or lists a missing file), as an instant time in the table's timeline zone
    (`hoodie.table.timeline.timezone`: UTC, or LOCAL, this process's zone)."""
    lake = lsm_lake({"hoodie.table.timeline.timezone": timezone})
    storage = lake.lake.storage
    if broken == "leftover":
        storage.write(f"{HISTORY}/manifest_2", json.dumps({"files": []}).encode())
        culprit = "manifest_2"
    elif broken == "not a manifest":
        storage.write(f"{HISTORY}/manifest_1", b"{broken", overwrite=True)
        culprit = "manifest_1"
    elif broken == "lists a missing file":
        (name,) = [s.name for s in storage.list(HISTORY) if s.name.endswith(".parquet")]
        storage.delete(f"{HISTORY}/{name}")
        culprit = "manifest_1"
    else:
        storage.write(f"{HISTORY}/_version_", b"7", overwrite=True)
        culprit = "_version_"
    storage.set_mtime(f"{HISTORY}/{culprit}", WRITTEN_MS)
    (blocker,) = [b for b in lake.plan(min=2, max=3).blockers if b.kind is BlockerKind.LSM_MANIFEST]
    assert (blocker.since, blocker.instant) == (since, None)


def test_plan_empty_manifest_is_an_empty_history() -> None:
    """HoodieLSMTimelineManifest.fromJsonString: empty text or `{}` is a manifest of no file."""
    lake = lsm_lake()
    for text in (b"", b"{}"):
        lake.lake.storage.write(f"{HISTORY}/manifest_1", text, overwrite=True)
        assert lsm_kinds(lake) == ([], [])


# Copies of real tables, with small keep settings

SMALL = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}


def plan_of(path: Path, options: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return HudiTable.open(str(path)).inspect.archival(SMALL if options is None else options)


def test_plan_real_v9_mor_table_with_metadata_table(table_copy) -> None:
    """v9 MOR (delta commits, a compaction, two replacecommits, two indexing instants; a metadata
    table last compacted at 20260307162612567): V2 archives the six delta commits completed
    before that compaction; the metadata table's lag (from 20260307162612542, completed after
    it), the replacecommit not yet cleaned and the delta commits the next compaction needs
    hold the rest."""
    plan = plan_of(table_copy("sample_table/mor/avro/v9_txns_simple_meta"))
    assert plan.archiver == V2_ARCHIVER
    assert [i.requested_time for i in plan.instants] == [
        "20260307162557587", "20260307162604102", "20260307162606034", "20260307162607806", "20260307162609526",
        "20260307162611195"]
    assert (plan.active_before, plan.active_after) == (15, 9)
    assert [(b.kind, b.instant.requested_time if b.instant else None, b.since) for b in plan.blockers] == [
        (BlockerKind.METADATA_TABLE_COMPACTION, "20260307162612542", "20260307162612567"),
        (BlockerKind.UNCLEANED_REPLACE, "20260307162614221", "20260307162615208"),
        (BlockerKind.COMPACTION_WINDOW, "20260307162618152", "20260307162618152")]


def test_plan_real_v9_cow_table_commit_completed_after_mdt_compaction(table_copy) -> None:
    """v9 COW: the metadata table compacted at 20260307162449278, while commit
    20260307162449244 (requested before it) was still being written: V2 keeps that commit (it
    completed after the compaction), so six commits go."""
    plan = plan_of(table_copy("sample_table/cow/v9_txns_simple_meta"))
    assert [i.requested_time for i in plan.instants] == [
        "20260307162434124", "20260307162440672", "20260307162442820", "20260307162444563", "20260307162446287",
        "20260307162447985"]
    assert plan.blockers[0].kind is BlockerKind.METADATA_TABLE_COMPACTION
    assert plan.blockers[0].instant.requested_time == "20260307162449244"  # type: ignore[union-attr]


def test_plan_real_v8_mor_table_clean_retention(table_copy) -> None:
    """v8 MOR (6 delta commits, a compaction, an indexing instant; metadata table): keep.min 1
    is raised to 2 by the cleaner retaining its last commit; five delta commits go."""
    plan = plan_of(table_copy("quickstart_trips_table/mor/avro/v8_trips_8i3u1d"),
                   {**SMALL, "hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"})
    assert (plan.keep.min_instants, plan.keep.max_instants) == (2, 3)
    assert [i.requested_time for i in plan.instants] == [
        "20251220210108078", "20251220210123755", "20251220210125441", "20251220210127080", "20251220210128625"]
    assert [b.kind for b in plan.blockers] == [BlockerKind.CLEAN_RETENTION]


def test_plan_real_v6_cow_table_keeps_the_replacecommit(table_copy) -> None:
    """v6 COW with an insert_overwrite_table replacecommit: V1 archives the two commits before
    it; the replacecommit stays (nothing cleaned its replaced file groups yet)."""
    plan = plan_of(table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"),
                   {"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"})
    assert plan.archiver == V1_ARCHIVER
    assert [(i.requested_time, i.action) for i in plan.instants] == [
        ("20240707001301554", "commit"), ("20240707001302376", "commit")]
    assert plan.active_after == 1


def test_plan_real_v6_mor_table_waits_for_compaction(table_copy) -> None:
    """v6 MOR with two delta commits and a rollback: with the compaction scheduled after 5
    delta commits (NUM_COMMITS, Hudi's default), V1 keeps them all; with compaction on a time
    trigger both go, and the single rollback stays (V1 counts rollbacks apart)."""
    path = table_copy("sample_table/mor/parquet/v6_nonpartitioned_rollback")
    options = {"hoodie.keep.min.commits": "0", "hoodie.keep.max.commits": "1",
               "hoodie.clean.policy": "KEEP_LATEST_FILE_VERSIONS"}
    waiting = plan_of(path, options)
    assert waiting.actions == () and [b.kind for b in waiting.blockers] == [BlockerKind.COMPACTION_WINDOW]
    timed = plan_of(path, {**options, "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED"})
    assert [(i.requested_time, i.action) for i in timed.instants] == [
        ("20250126040823628", "deltacommit"), ("20250126060846931", "deltacommit")]


def test_plan_real_table_savepoint_blocks_until_deleted(table_copy) -> None:
    """A savepoint on a copy of a real v9 COW table (10 commits, a clustering) stops archival at
    it: the plan names it; once it is deleted, archival goes on to the replacecommit."""
    path = table_copy("sample_table/cow/v9_txns_nonpart_nometa")
    table = HudiTable.open(str(path))
    third = table.timeline.commits().completed().instants[2]
    create_savepoint(table, third.requested_time, user="tests")
    plan = plan_of(path)
    assert [i.requested_time for i in plan.instants] == ["20260307135753543", "20260307135756200"]
    (savepoint,) = [b for b in plan.blockers if b.kind is BlockerKind.SAVEPOINT]
    assert savepoint.instant is not None and savepoint.instant.requested_time == third.requested_time
    delete_savepoint(HudiTable.open(str(path)), third.requested_time)
    plan = plan_of(path)
    assert len(plan.instants) == 9 and BlockerKind.SAVEPOINT not in {b.kind for b in plan.blockers}


@pytest.mark.parametrize("zip_id", ["sample_table/cow/v6_empty", "sample_table/cow/v8_empty"])
def test_plan_real_empty_table(table_copy, zip_id: str) -> None:
    plan = plan_of(table_copy(zip_id))
    assert plan.actions == () and [b.kind for b in plan.blockers] == [BlockerKind.NOT_ENOUGH_COMMITS]
