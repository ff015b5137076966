"""Orphan files (timeline/doctor/orphans.py): nothing referenced is ever offered (every fixture,
untouched; a pending write's files, with a live heartbeat or not; a file named only by an
archived instant), and the files no instant names (a crashed write's duplicate task output, a
write whose instant is gone, what a rollback by markers leaves) are found and deleted, the
table reading the same."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.doctor.helpers import (
    OLD,
    NameOrderedStorage,
    age_tree,
    archive_commit,
    archive_commit_v6,
    copy_base_file,
    round_trip,
)
from tests.helpers import FIXTURE_IDS, TOKEN, Lake, fake_failed_write, rows
from timeline import HudiTable
from timeline.config import update_config
from timeline.doctor import DoctorSettings, RepairUnavailable, diagnose, plan_repair, run_repair
from timeline.doctor.orphans import BOOTSTRAP_INSTANTS, OrphanEvidence, horizon, orphans, referenced
from timeline.doctor.survey import Survey
from timeline.instant import State
from timeline.mdt.reader import metadata_table
from timeline.mdt.writer import sync_updates, write_update
from timeline.rollback import rollback
from timeline.storage.arrow import LocalStorage

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
KIND = "orphan-files"
P = "city=sf"


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_orphans_none_on_every_untouched_fixture(table_copy, table_id: str) -> None:
    path = table_copy(table_id)
    age_tree(path)  # old enough for the horizon: only the references keep a file
    survey = Survey(HudiTable.open(str(path)))
    refs = referenced(survey)
    assert refs.doubt is None  # every payload read: the rule was applied, not skipped
    found, _, _ = orphans(survey)
    assert found == []
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []


def test_orphans_found_deleted_and_the_table_reads_the_same(table_copy) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    table = HudiTable.open(str(path))
    last = table.timeline.commits().completed().last()
    assert last is not None
    gone = copy_base_file(path, "20261102000000000")               # its write's instant files are gone
    duplicate = copy_base_file(path, last.requested_time)          # a task attempt the commit did not keep
    written = fake_failed_write(path, OLD, markers=True)            # a write with markers for these two ...
    unmarked = written[0].with_name(written[0].name.replace("9-9-9", "8-8-8"))
    shutil.copy(written[0], unmarked)                               # ... and one file without a marker
    rollback(HudiTable.open(str(path)), OLD)                        # rolled back by markers: the unmarked one stays
    assert unmarked.exists() and not any(f.exists() for f in written)
    expected = {gone: "no instant 20261102000000000 on the active or archived timeline",
                duplicate: f"{last.requested_time} completed and no write stat names it",
                unmarked: f"{OLD} was rolled back"}
    sizes = {f: f.stat().st_size for f in expected}
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, OrphanEvidence)
    assert {Path(f.path.removeprefix("file:")): f.reason for f in evidence.files}.keys() == expected.keys()
    for item in evidence.files:
        assert item.reason.startswith(expected[Path(item.path.removeprefix("file:"))])
    assert (evidence.count, evidence.bytes) == (3, sum(sizes.values()))
    assert sorted((c.action, Path(c.target.removeprefix("file:")), c.bytes) for c in plan.changes) == sorted(
        ("delete", f, size) for f, size in sizes.items())
    assert result.ok and len(result.done) == 3 and not any(f.exists() for f in expected)
    assert after == []
    assert rows(path) == before
    # idempotent: nothing left to do, nothing else touched
    again = run_repair(HudiTable.open(str(path)), plan, dry_run=False)
    assert again.ok and not again.done and len(again.skipped) == 3


def test_orphans_pending_write_files_are_never_orphans(table_copy) -> None:
    path = table_copy(V9_COW)
    written = fake_failed_write(path, OLD, markers=False)  # pending, no heartbeat: stale, its files still not orphans
    beating = copy_base_file(path, "20261103000000000")     # a writer with a live heartbeat, before its instant file
    heartbeat = path / ".hoodie" / ".heartbeat" / "20261103000000000"
    heartbeat.parent.mkdir(parents=True, exist_ok=True)
    marked = copy_base_file(path, "20261104000000000")      # an unfinished instant's marker folder
    (path / ".hoodie" / ".temp" / "20261104000000000").mkdir(parents=True)
    age_tree(path)
    heartbeat.write_bytes(b"")  # touched now
    table = HudiTable.open(str(path))
    assert diagnose(table, kinds=[KIND]) == []
    refs = referenced(Survey(table))
    assert {OLD, "20261103000000000", "20261104000000000"} <= refs.pending
    # the pending write is stale (another finding's business), its files still kept; nothing younger than it either
    assert [f.kind for f in diagnose(table)] == ["stale-pending"]
    # the pending write rolled back, the heartbeat expired, the marker folder gone: those two instants are on no
    # timeline, and their files old enough: orphans now (and the rolled-back write's files are gone)
    rollback(HudiTable.open(str(path)), OLD)
    shutil.rmtree(path / ".hoodie" / ".temp" / "20261104000000000")
    age_tree(path)
    assert not HudiTable.open(str(path)).inspect.diagnose(kinds=["stale-pending"])
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, OrphanEvidence)
    assert {f.name for f in finding.evidence.files} == {beating.name, marked.name}
    assert not any(f.exists() for f in written)


@pytest.mark.parametrize("table_id", [V9_COW, "sample_table/cow/v6_simplekeygen_nonhivestyle"], ids=["lsm", "v6"])
def test_orphans_a_file_named_only_by_an_archived_instant_is_never_an_orphan(table_copy, table_id: str) -> None:
    path = table_copy(table_id)
    table = HudiTable.open(str(path))
    first = table.timeline.commits().completed().first()
    assert first is not None
    (archive_commit if table.config.version >= 8 else archive_commit_v6)(path, first.requested_time)
    duplicate = copy_base_file(path, first.requested_time)  # same archived instant, not in its write stats
    age_tree(path)
    survey = Survey(HudiTable.open(str(path)))
    assert survey.archive.error is None and first.requested_time in survey.archive.detailed
    only_archived = {d.status.name for d in survey.files_written_at({first.requested_time})[first.requested_time]
                     if d.status.name != duplicate.name}
    assert only_archived and only_archived <= survey.archive.references.names  # the archived commit names them
    assert not only_archived & survey.state_files.references.names  # and nothing on the active timeline does
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, OrphanEvidence)
    assert [f.name for f in finding.evidence.files] == [duplicate.name]
    assert finding.evidence.files[0].reason == f"{first.requested_time} completed and no write stat names it"


def test_orphans_young_files_wait_for_the_horizon(table_copy) -> None:
    path = table_copy(V9_COW)
    age_tree(path)
    fresh = copy_base_file(path, "20261102000000000")  # written now: a writer may not have published it yet
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []
    day_old = time.time() - 86_400
    os.utime(fresh, (day_old, day_old))  # younger than the default three days still
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []


def test_orphans_never_inside_hoodie(table_copy) -> None:
    path = table_copy(V9_COW)
    aux = path / ".hoodie" / ".aux"
    aux.mkdir(parents=True, exist_ok=True)
    real = next(p for p in sorted(path.rglob("*.parquet")) if ".hoodie" not in p.parts)
    inside = [aux / "x.parquet", aux / real.name.replace(real.name.split("_")[-1], "20261102000000000.parquet")]
    for item in inside:
        shutil.copy(real, item)  # what no instant names, under .hoodie: Hudi's own business, never an orphan
    marker = next(p for p in real.parent.iterdir() if p.name.startswith(".hoodie_partition_metadata"))
    shutil.copy(marker, aux / marker.name)  # even where it looks like a partition
    age_tree(path)
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []
    assert all(item.exists() for item in inside)


def test_orphans_a_file_only_the_metadata_table_lists_is_never_offered(table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})
    last = table.timeline.commits().completed().last()
    assert last is not None
    listed = copy_base_file(path, last.requested_time)  # a task attempt its commit does not name ...
    mdt = metadata_table(HudiTable.open(str(path)))
    assert mdt is not None  # ... that a sync from a storage listing (a restore's, in Hudi) put in the metadata table
    write_update(mdt, mdt.mdt.new_instant_time(after=OLD), sync_updates(mdt))
    table = HudiTable.open(str(path))
    mdt = metadata_table(table)
    assert mdt is not None and listed.name in mdt.files()[listed.parent.name]
    assert listed.name not in Survey(table).state_files.references.names  # no instant names it
    age_tree(path)
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []
    with pytest.raises(RepairUnavailable):
        plan_repair(HudiTable.open(str(path)), KIND)
    assert listed.exists()


def test_orphans_a_file_older_than_every_known_instant_is_kept(table_copy) -> None:
    """Its write left the timelines (archived, the archive gone): the file-system view reads it as
    committed (timeline/committed.py), so it is never offered, old as it is."""
    path = table_copy(V9_COW)
    ancient = copy_base_file(path, "20000101000000000")
    age_tree(path)
    survey = Survey(HudiTable.open(str(path)))
    assert survey.known_instants and min(survey.known_instants) > "20000101000000000"
    assert orphans(survey)[0] == [] and diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []
    assert ancient.exists()


@pytest.mark.parametrize("table_id", ["sample_table/mor/parquet/v6_simplekeygen_nonhivestyle",
                                      "sample_table/mor/avro/v9_txns_simple_nometa"], ids=["v6", "v9"])
def test_orphans_an_unnamed_log_version_of_a_known_file_group_is_kept(table_copy, table_id: str) -> None:
    """A log file of a file group the payloads name, at an instant the timelines know, that no
    write stat names (a version a writer rolled over to, a rollback's block): kept, although its
    instant completed without naming it."""
    path = table_copy(table_id)
    log = sorted(p for p in path.rglob(".*.log.1_*") if ".hoodie" not in p.parts)[0]
    version = log.with_name(log.name.replace(".log.1_", ".log.2_").rsplit("_", 1)[0] + "_0-99-99")
    shutil.copy(log, version)
    age_tree(path)
    survey = Survey(HudiTable.open(str(path)))
    instant = log.name[1:].split(".log.")[0].rsplit("_", 1)[1]
    assert instant in survey.known_instants and instant >= min(survey.known_instants)
    assert version.name not in referenced(survey).names
    assert orphans(survey)[0] == [] and diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []


def test_orphans_none_while_a_state_file_cannot_be_read(table_copy) -> None:
    """Nothing is proved while a completed instant's file does not decode: it may name any file."""
    path = table_copy(V9_COW)
    table = HudiTable.open(str(path))
    last = table.timeline.commits().completed().last()
    assert last is not None
    state_file = Path(table.timeline.path_of(last).removeprefix("file:"))
    state_file.write_bytes(b"not an instant")
    copy_base_file(path, "20261102000000000")  # on no timeline: an orphan, were everything readable
    age_tree(path)
    survey = Survey(HudiTable.open(str(path)))
    refs = referenced(survey)
    assert refs.doubt is not None and refs.doubt.startswith(f"cannot read {survey.storage.path_of(str(state_file))}")
    assert orphans(survey)[0] == []


def test_orphans_a_completed_write_without_write_stats_keeps_its_files(table_copy) -> None:
    """A completed write whose file holds no details (empty: Hudi's "no instant details") names
    nothing, so nothing of its instant is an orphan."""
    path = table_copy(V9_COW)
    table = HudiTable.open(str(path))
    last = table.timeline.commits().completed().last()
    assert last is not None
    Path(table.timeline.path_of(last).removeprefix("file:")).write_bytes(b"")
    duplicate = copy_base_file(path, last.requested_time)
    gone = copy_base_file(path, "20261102000000000")
    age_tree(path)
    survey = Survey(HudiTable.open(str(path)))
    assert last.requested_time in referenced(survey).without_details
    assert [d.status.name for d, _ in orphans(survey)[0]] == [gone.name]
    assert duplicate.exists()


def test_orphans_none_while_the_archived_timeline_cannot_be_read(table_copy) -> None:
    """Nothing is proved while the archived timeline does not read: its instants may name any file."""
    path = table_copy(V9_COW)
    table = HudiTable.open(str(path))
    first = table.timeline.commits().completed().first()
    assert first is not None
    archive_commit(path, first.requested_time)
    for archived in (path / ".hoodie" / "timeline" / "history").glob("*.parquet"):
        archived.write_bytes(b"not parquet")
    copy_base_file(path, "20261102000000000")  # on no timeline: an orphan, were everything readable
    age_tree(path)
    survey = Survey(HudiTable.open(str(path)))
    refs = referenced(survey)
    assert survey.archive.error is not None
    assert refs.doubt == f"cannot read the archived timeline: {survey.archive.error}"
    assert orphans(survey)[0] == []


def test_orphans_a_completed_write_with_a_live_heartbeat_keeps_its_unnamed_files(table_copy) -> None:
    """A write whose heartbeat is alive (HoodieHeartbeatClient.isHeartbeatExpired, negated) may
    still be finishing though its instant completed: a file of its instant no write stat names
    waits until the heartbeat expires."""
    path = table_copy(V9_COW)
    last = HudiTable.open(str(path)).timeline.commits().completed().last()
    assert last is not None
    duplicate = copy_base_file(path, last.requested_time)
    heartbeat = path / ".hoodie" / ".heartbeat" / last.requested_time
    heartbeat.parent.mkdir(parents=True, exist_ok=True)
    age_tree(path)
    heartbeat.write_bytes(b"")  # touched now
    survey = Survey(HudiTable.open(str(path)))
    assert last.requested_time in referenced(survey).pending and orphans(survey)[0] == []
    age_tree(path)  # the heartbeat expired
    found = orphans(Survey(HudiTable.open(str(path))))[0]
    assert [d.status.name for d, _ in found] == [duplicate.name]


def test_orphans_horizon_is_the_minimum_age_or_the_heartbeat_window(table_copy) -> None:
    """The older of the two moments: now less the minimum age (three days by default), or now less
    the writers' heartbeat window (interval x tolerable misses) when the minimum age is shorter."""
    path = table_copy(V9_COW)
    survey = Survey(HudiTable.open(str(path)))
    assert horizon(survey) == (survey.now_ms - 3 * 86_400_000, "the minimum age (3 days)")
    short = Survey(HudiTable.open(str(path)), settings=DoctorSettings(orphan_min_age=timedelta(0)))
    assert short.heartbeat_window_ms > 0
    assert horizon(short) == (short.now_ms - short.heartbeat_window_ms, "the writers' heartbeat window")


def test_orphans_none_while_the_metadata_tables_listing_cannot_be_read(table_copy) -> None:
    """The metadata table may list any file: while its listing does not read, nothing is proved."""
    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    for stored in (path / ".hoodie" / "metadata" / "files").iterdir():
        if stored.is_file() and not stored.name.startswith(".hoodie_partition_metadata"):
            stored.write_bytes(b"not a metadata table file")
    copy_base_file(path, "20261102000000000")  # on no timeline: an orphan, were everything readable
    age_tree(path)
    survey = Survey(HudiTable.open(str(path)))
    refs = referenced(survey)
    assert refs.doubt is not None and refs.doubt.startswith("cannot read the metadata table's file listing: ")
    assert orphans(survey)[0] == []


def test_orphans_horizon_stops_at_the_oldest_pending_instant_and_unfinished_marker_folder(table_copy) -> None:
    """Nothing younger than the oldest pending instant, nor than the oldest marker folder of an
    unfinished instant (its folder's own time when that is older), is an orphan."""
    path = table_copy(V9_COW)
    later = "20261105000000000"
    fake_failed_write(path, later, markers=False)
    fake_failed_write(path, OLD, markers=False)
    survey = Survey(HudiTable.open(str(path)))
    moment = survey.moment_ms(OLD)
    assert moment is not None
    assert horizon(survey) == (moment, f"the oldest pending instant, commit {OLD}")
    marked = "20261031000000000"
    folder = path / ".hoodie" / ".temp" / marked
    folder.mkdir(parents=True)
    surveyed = Survey(HudiTable.open(str(path)))
    marked_moment = surveyed.moment_ms(marked)
    assert marked_moment is not None
    assert horizon(surveyed) == (marked_moment, f"the marker folder of unfinished instant {marked}")
    older = marked_moment / 1000 - 86_400
    os.utime(folder, (older, older))
    assert horizon(Survey(HudiTable.open(str(path))))[0] == int(older * 1000)
    os.utime(folder, (0, 0))  # a store that gives the folder no time (0): the instant's own moment
    assert horizon(Survey(HudiTable.open(str(path))))[0] == marked_moment
    os.utime(folder, ns=(1_000_000, 1_000_000))  # any time after the epoch is the folder's
    assert horizon(Survey(HudiTable.open(str(path))))[0] == 1


def test_orphans_found_beside_a_file_older_than_every_instant_with_its_partition(table_copy) -> None:
    """A kept file older than the timelines and an orphan in the same partition: the orphan is
    found, with its partition."""
    path = table_copy(V9_COW)
    ancient = copy_base_file(path, "20000101000000000")
    gone = copy_base_file(path, "20261102000000000")
    age_tree(path)
    found = orphans(Survey(HudiTable.open(str(path))))[0]
    assert [(d.partition, d.status.name) for d, _ in found] == [(str(gone.parent.relative_to(path)), gone.name)]
    assert ancient.exists()


NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)  # a diagnosis as of this moment (the horizon: 3 days before)
T0, PENDING = "20261101000000000", "20261110000000000"


def _at(path: str, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def test_orphans_every_skipped_file_leaves_the_rest_of_its_partition_looked_at(tmp_path: Path) -> None:
    """In one partition listed in name order, a file of each kind the rule keeps comes before the
    orphans: a partition metadata file, a named file, a pending write's, one older than every
    instant, a log file of a known file group and instant, a young one. Each is kept and the
    orphans after them are found: a log file of a known group at an instant on no timeline, one
    of a group no payload names at a completed instant, and a base file of no instant."""
    lake = Lake(NameOrderedStorage(), str(tmp_path / "t"), version=6)
    named = lake.data_file(P, f"a-named_{TOKEN}_{T0}.parquet")
    lake.commit(T0, {P: [named]})
    pending = lake.data_file(P, f"b-pending_{TOKEN}_{PENDING}.parquet")
    lake.commit(PENDING, {P: []}, state=State.INFLIGHT)
    kept = [named, pending, lake.data_file(P, f"c-ancient_{TOKEN}_20261031000000000.parquet"),
            lake.log_file(P, "a-named", T0), lake.data_file(P, f"d-young_{TOKEN}_20261105000000000.parquet")]
    found = [lake.log_file(P, "a-named", "20261105000000000"), lake.log_file(P, "x-unnamed", T0),
             lake.data_file(P, f"z-lost_{TOKEN}_20261105000000000.parquet")]
    age_tree(tmp_path / "t", days=25)
    _at(f"{lake.base}/{P}/{kept[-1]}", int(NOW.timestamp() * 1000))  # written at the moment of the diagnosis
    listed = [s.name for s in NameOrderedStorage().list(f"{lake.base}/{P}")]
    assert listed == sorted([".hoodie_partition_metadata", *kept, *found]) and listed[-1] == found[-1]  # after all

    orphaned, limit, _ = orphans(Survey(HudiTable.load(NameOrderedStorage(), lake.base), now=NOW))

    assert sorted(d.status.name for d, _ in orphaned) == sorted(found)
    assert limit == int(datetime(2026, 11, 10, tzinfo=UTC).timestamp() * 1000)  # the pending instant


def test_orphans_a_file_at_the_horizons_instant_is_too_young(tmp_path: Path) -> None:
    """The horizon as an instant time: a file written at it is kept, one a millisecond before it
    is an orphan (both old on storage)."""
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=6)
    lake.commit(T0, {P: [lake.base_file(P, "fg0", T0)]})
    survey = Survey(HudiTable.open(lake.base), now=NOW)
    limit, _ = horizon(survey)
    at = survey.instant_at(limit)
    before = survey.instant_at(limit - 1)
    assert at > before > T0 and len(at) == 17
    kept = lake.base_file(P, "at", at)
    found = lake.base_file(P, "before", before)
    age_tree(tmp_path / "t", days=25)

    assert [d.status.name for d, _ in orphans(survey)[0]] == [found]
    assert kept


def test_orphans_a_files_age_is_strictly_between_the_epoch_and_the_horizon(tmp_path: Path) -> None:
    """A file's modification time must be after the epoch (0: a store that gives none) and before
    the horizon: at the horizon or at 0 it is kept, a millisecond inside either bound it is an
    orphan."""
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=6)
    lake.commit(T0, {P: [lake.base_file(P, "fg0", T0)]})
    limit, _ = horizon(Survey(HudiTable.open(lake.base), now=NOW))
    times = {"at-horizon": limit, "before-horizon": limit - 1, "at-epoch": 0, "after-epoch": 1}
    names = {what: lake.base_file(P, what, "20261102000000000") for what in times}
    for what, ms in times.items():
        _at(f"{lake.base}/{P}/{names[what]}", ms)

    found = orphans(Survey(HudiTable.open(lake.base), now=NOW))[0]

    assert sorted(d.status.name for d, _ in found) == sorted([names["before-horizon"], names["after-epoch"]])
    assert {d.status.name: d.status.mtime_ms for d, _ in found} == {names["before-horizon"]: limit - 1,
                                                                     names["after-epoch"]: 1}


def test_orphans_a_bootstrap_instants_file_is_kept(tmp_path: Path) -> None:
    """A file written at a bootstrap instant (HoodieTimeline.METADATA_BOOTSTRAP_INSTANT_TS and its
    kin) is never an orphan, even when the timelines know no instant before it."""
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=6)
    lake.commit("00000000000001", {P: []})  # the bootstrap's commit, naming none of its files
    lake.commit(T0, {P: [lake.base_file(P, "fg0", T0)]})
    boot = [lake.base_file(P, f"boot{k}", instant) for k, instant in enumerate(sorted(BOOTSTRAP_INSTANTS))]
    lost = lake.base_file(P, "lost", "20261102000000000")
    age_tree(tmp_path / "t", days=25)
    survey = Survey(HudiTable.open(lake.base), now=NOW)
    assert survey.committed.earliest == "00000000000001"  # "00000000000002" is no older than every instant

    assert [d.status.name for d, _ in orphans(survey)[0]] == [lost]
    assert len(boot) == 3
