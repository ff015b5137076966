"""Metadata-table drift (timeline/doctor/mdt_drift.py) on a copy of a real table with a metadata
table, damaged as apache/hudi #11773 describes: a file deleted that the metadata table still
lists. The repair's deltacommit brings the files partition to storage; a file group gone while a
record index points at it is left to a Hudi writer. "Committed" is timeline/committed.py's: a
file no write stat names, whatever instant its name carries, is no drift but an orphan, and the
repair never adopts it."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from tests.doctor.helpers import age_tree, archive_commit, grow_history, round_trip
from tests.helpers import rows
from timeline import HudiTable
from timeline.config import update_config
from timeline.doctor import RepairUnavailable, diagnose, plan_repair, run_repair
from timeline.doctor.findings import NO_REPAIR
from timeline.doctor.mdt_drift import DriftEvidence, SizeDrift
from timeline.doctor.orphans import OrphanEvidence
from timeline.mdt.reader import metadata_table

V9_META = "sample_table/cow/v9_txns_simple_meta"
KIND = "metadata-table-drift"


def _older_version(path: Path) -> Path:
    """A base file of a file group that has a newer slice (deleting it, as a clean whose update of
    the metadata table failed did, loses no file group)."""
    view = HudiTable.open(str(path)).file_system_view()
    for group in view.all_file_groups():
        if len(group.slices) > 1 and group.slices[1].base_file is not None:
            piece = group.slices[1]
            assert piece.base_file is not None
            return (path / piece.partition if piece.partition else path) / piece.base_file.name
    raise AssertionError("no file group with two versions")


def test_mdt_drift_a_deleted_file_the_metadata_table_lists_is_synced(table_copy) -> None:
    path = table_copy(V9_META)
    before = rows(path)
    victim = _older_version(path)
    victim.unlink()
    partition = victim.parent.name
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, DriftEvidence)
    assert (evidence.only_in_metadata, evidence.only_on_storage, evidence.sizes) == (1, 0, 0)
    (drift,) = evidence.partitions
    assert (drift.partition, drift.only_in_metadata) == (partition, (victim.name,))
    assert "record_index" in evidence.metadata_partitions and finding.repairable
    # exactly one deltacommit removing the file from the listing, and its column-stats entries
    assert plan.changes[0].action == "metadata deltacommit"
    assert [(c.action, c.target) for c in plan.changes if c.action == "metadata remove"] == [
        ("metadata remove", f"{partition}/{victim.name}")]
    assert {c.action for c in plan.changes} == {"metadata deltacommit", "metadata remove",
                                                "metadata column-stats delete"}
    assert result.ok and len(result.done) == len(plan.changes)
    assert after == []
    assert HudiTable.open(str(path)).inspect.validate_metadata_table().ok
    assert rows(path) == before
    # run again: nothing to do, nothing written
    mdt = metadata_table(HudiTable.open(str(path)))
    assert mdt is not None
    instants = len(mdt.mdt.timeline)
    with pytest.raises(RepairUnavailable) as nothing:
        plan_repair(HudiTable.open(str(path)), KIND)
    assert str(nothing.value) == f"{HudiTable.open(str(path)).uri}: no metadata-table-drift finding to repair"
    assert len(mdt.mdt.reload().timeline) == instants


def test_mdt_drift_a_whole_file_group_gone_under_a_record_index_is_left_to_hudi(table_copy) -> None:
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    group = next(g for g in table.file_system_view().file_groups() if len(g.slices) == 1)
    folder = path / group.partition if group.partition else path
    for name in group.slices[0].file_names:
        (folder / name).unlink()
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert not finding.repairable and "record_index" in finding.repair and group.file_id in finding.repair
    with pytest.raises(RepairUnavailable, match="a Hudi writer must rebuild the index"):
        plan_repair(HudiTable.open(str(path)), KIND)


def test_mdt_drift_none_without_a_metadata_table_or_when_in_sync(table_copy) -> None:
    assert diagnose(HudiTable.open(str(table_copy("sample_table/cow/v9_txns_simple_nometa"))), kinds=[KIND]) == []
    assert diagnose(HudiTable.open(str(table_copy(V9_META))), kinds=[KIND]) == []


def test_mdt_drift_a_committed_file_the_metadata_table_missed_is_added(table_copy) -> None:
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})  # no index to rebuild
    before = rows(path)
    (time_,) = grow_history(path, 1)  # a commit whose metadata-table update was lost (apache/hudi #11773)
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    assert isinstance(finding.evidence, DriftEvidence) and finding.evidence.only_on_storage == 1
    (added,) = [c for c in plan.changes if c.action == "metadata add"]
    assert time_ in added.target and added.bytes > 0
    assert result.ok and after == [] and HudiTable.open(str(path)).inspect.validate_metadata_table().ok
    assert rows(path) == before


def test_mdt_drift_a_partition_the_metadata_table_does_not_list_is_left_to_hudi(table_copy) -> None:
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})
    source = next(p for p in path.iterdir() if p.name.startswith("region="))
    shutil.copytree(source, path / "region=mars")  # files no instant names, in a partition the table never had
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    first = sorted(f.name for f in (path / "region=mars").iterdir() if f.suffix == ".parquet")[0]
    assert not finding.repairable and finding.repair == (
        f"{NO_REPAIR}the metadata table does not list partition 'region=mars' (region=mars/{first}); only a Hudi "
        "writer adds a partition to it (or `cleanline mdt drop` for Hudi writers to rebuild)")


def _stranger(path: Path, instant: str) -> Path:
    """A copy of the latest base file under a new file id, its name stamped with `instant`: a file
    no instant wrote (a copy, a failed task's output renamed), rows and all."""
    table = HudiTable.open(str(path))
    piece = max((s for s in table.file_system_view().latest_slices() if s.base_file is not None),
                key=lambda s: s.base_instant_time)
    assert piece.base_file is not None
    folder = path / piece.partition if piece.partition else path
    target = folder / f"{uuid.uuid4()}-0_0-1-1_{instant}.parquet"
    shutil.copy(folder / piece.base_file.name, target)
    return target


def _repair_everything(path: Path) -> None:
    """`cleanline doctor --repair KIND` for every kind with a repairable finding, drift first (a
    kind the repairs before left without one is skipped)."""
    kinds = sorted({f.kind for f in diagnose(HudiTable.open(str(path))) if f.repairable}, key=lambda k: k != KIND)
    for kind in kinds:
        if any(f.repairable for f in diagnose(HudiTable.open(str(path)), kinds=[kind])):
            assert run_repair(HudiTable.open(str(path)), plan_repair(HudiTable.open(str(path)), kind), dry_run=False).ok


def test_mdt_drift_a_file_no_write_names_is_an_orphan_never_adopted(table_copy) -> None:
    """Stamped with a completed commit's time under a new file id: no drift (Hudi's files
    partition holds what commit metadata names, convertMetadataToFilesPartitionRecords), an
    orphan; after the doctor's repairs hudi-rs reads the rows it read before, not the copy's too."""
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})  # a sync could add it
    before = rows(path)
    last = table.timeline.commits().completed().last()
    assert last is not None
    stranger = _stranger(path, last.requested_time)
    age_tree(path)
    drift = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    orphans = diagnose(HudiTable.open(str(path)), kinds=["orphan-files"])
    validation = HudiTable.open(str(path)).inspect.validate_metadata_table()
    _repair_everything(path)
    assert len(before) == 12 and rows(path) == before  # not the copy's rows as well
    assert not stranger.exists() and diagnose(HudiTable.open(str(path))) == []
    assert drift == []
    assert validation.ok and [d.not_committed for d in validation.not_committed] == [(stranger.name,)]
    (orphan,) = orphans
    assert isinstance(orphan.evidence, OrphanEvidence) and [f.name for f in orphan.evidence.files] == [stranger.name]


def test_mdt_drift_a_file_of_an_instant_on_no_timeline_is_not_committed(table_copy) -> None:
    """Its time on no timeline: not "a committed file missing", so no advice to drop the
    metadata table (the table keeps a record index, under which adding files is refused)."""
    path = table_copy(V9_META)
    stranger = _stranger(path, "20261102000000000")
    age_tree(path)
    found = diagnose(HudiTable.open(str(path)))
    assert [f.kind for f in found] == ["orphan-files"]
    assert not [f for f in found if "mdt drop" in f.repair]
    (orphan,) = found
    assert isinstance(orphan.evidence, OrphanEvidence) and [f.name for f in orphan.evidence.files] == [stranger.name]
    assert orphan.evidence.files[0].reason == "no instant 20261102000000000 on the active or archived timeline"


def test_mdt_drift_a_file_older_than_every_instant_is_committed_but_never_added(table_copy) -> None:
    """Older than every instant the timelines know: the file-system view reads it as committed
    (isFileSliceCommitted: before the timeline starts), so it is drift and no orphan; no commit
    metadata names it, so the sync does not add it: only a metadata table initialised from a
    listing lists it."""
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})
    ancient = _stranger(path, "20000101000000000")
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)))
    assert finding.kind == KIND and not finding.repairable
    assert finding.repair == (f"{NO_REPAIR}1 file(s) older than every instant the timelines know (first: "
                              f"{ancient.name}) are missing from the metadata table; no commit metadata names them, "
                              "so only a metadata table initialised from a storage listing lists them (`cleanline mdt "
                              "drop`; Hudi writers rebuild it)")
    assert isinstance(finding.evidence, DriftEvidence)
    assert [d.only_on_storage for d in finding.evidence.partitions] == [(ancient.name,)]
    with pytest.raises(RepairUnavailable, match="no commit metadata names them"):
        plan_repair(HudiTable.open(str(path)), KIND)


def test_mdt_drift_validate_and_the_doctor_agree_on_a_file_an_archived_commit_does_not_name(table_copy) -> None:
    """Stamped with an archived commit's time, which the active timeline starts after: the
    archived write stats decide (not the file-system view's before-the-timeline rule), for
    `mdt validate` as for the doctor: not committed, an orphan and no drift."""
    path = table_copy(V9_META)
    first = HudiTable.open(str(path)).timeline.commits().completed().first()
    assert first is not None
    archive_commit(path, first.requested_time)
    stranger = _stranger(path, first.requested_time)
    age_tree(path)
    table = HudiTable.open(str(path))
    assert min(i.requested_time for i in table.timeline) > first.requested_time
    validation = table.inspect.validate_metadata_table()
    assert validation.ok and [d.not_committed for d in validation.not_committed] == [(stranger.name,)]
    assert [f.kind for f in diagnose(HudiTable.open(str(path)))] == ["orphan-files"]


def test_mdt_drift_finding_plan_and_sync_time_in_full(table_copy) -> None:
    """MetadataCommand.validateFiles' drift as the doctor reports it, word for word, and the
    repair: one deltacommit (fetchOutofSyncFilesRecordsFromMetadataTable) removing the file and
    its column-stats entries, at a time later than every instant of the data table, requested
    or completed (HoodieBackedTableMetadataWriter writes the sync at a new instant time)."""
    from timeline.doctor.findings import Change, Severity

    path = table_copy(V9_META)
    victim = _older_version(path)
    victim.unlink()
    partition = victim.parent.name
    age_tree(path)
    table = HudiTable.open(str(path))
    (finding,) = diagnose(table, kinds=[KIND])
    assert (finding.kind, finding.severity) == (KIND, Severity.ERROR)
    assert finding.summary == ("the metadata table differs from storage in 1 partition(s): 1 file(s) listed but gone, "
                               "0 committed file(s) missing, 0 size(s) differ")
    assert finding.why == ("Readers that list files through the metadata table fail on files it lists that are gone, "
                           "or miss committed data it does not list.")
    assert finding.repair == ("write one deltacommit on the metadata table bringing its files partition to storage "
                              "(fetchOutofSyncFilesRecordsFromMetadataTable, as a restore ends)")
    evidence = finding.evidence
    assert isinstance(evidence, DriftEvidence)
    assert (evidence.uncommitted, evidence.not_committed) == (0, 0)
    assert evidence.metadata_partitions == (*table.config.metadata_partitions,
                                            *table.config.metadata_partitions_inflight)
    (drift,) = evidence.partitions
    assert (drift.only_on_storage, drift.sizes) == ((), ())
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    assert plan.changes[0] == Change("metadata deltacommit", "files", 0,
                                     "one deltacommit on the metadata table at a new time")
    assert [c for c in plan.changes if c.action == "metadata remove"] == [
        Change("metadata remove", f"{partition}/{victim.name}", 0, "listed but gone from storage")]
    stats = [c for c in plan.changes if c.action == "metadata column-stats delete"]
    assert stats and all(c.bytes == 0 and c.detail.startswith(f"{victim.name} column ") for c in stats)
    assert "the deltacommit's time is chosen when it is written: later than every instant" in plan.notes
    latest = max(t for i in table.timeline for t in (i.requested_time, i.completion_time or ""))
    result = run_repair(HudiTable.open(str(path)), plan, dry_run=False)
    assert result.ok and set(result.done) == set(plan.changes) and not result.skipped
    mdt = metadata_table(HudiTable.open(str(path)))
    assert mdt is not None
    (sync,) = [i for i in mdt.mdt.timeline.completed() if i.requested_time > latest]
    assert sync.action == "deltacommit" and len(sync.requested_time) == 17
    instants = len(mdt.mdt.timeline)
    # the approved plan once more: in sync, nothing written
    again = run_repair(HudiTable.open(str(path)), plan, dry_run=False)
    assert (again.table, again.kind, again.done, again.failed) == (table.uri, KIND, (), ())
    assert [c for c, _ in again.skipped] == list(plan.changes)
    assert all(why.startswith("already in sync (") for _, why in again.skipped)
    assert len(mdt.mdt.reload().timeline) == instants


def test_mdt_drift_refusals_say_who_must_act_word_for_word(tmp_path: Path) -> None:
    """Where only a Hudi writer brings the index partitions along, the repair is not offered and
    says why, word for word: a committed file to add under index partitions that need entries for
    it (record index, partition stats, secondary indexes); a file group, or a whole partition,
    gone while the record and secondary indexes may point into it; files of a pending write on
    storage (a sync would list them before the write completes)."""
    from tests.helpers import FIXTURES, unzip_table
    from timeline.instant import Instant, State

    def table_copy(name: str) -> Path:
        return unzip_table(FIXTURES / f"{V9_META}.zip", tmp_path / name)

    indexes = "record_index, secondary_index_merchant_idx, secondary_index_txn_date_idx"
    path = table_copy('added')
    grow_history(path, 1)
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert finding.repair == (f"{NO_REPAIR}1 committed file(s) are missing from the metadata table, and its index "
                              "partitions partition_stats, record_index, secondary_index_merchant_idx, "
                              "secondary_index_txn_date_idx would lack their entries: a Hudi writer must rebuild "
                              "them (or `cleanline mdt drop` removes the metadata table for Hudi writers to rebuild)")

    path = table_copy('group')
    table = HudiTable.open(str(path))
    group = next(g for g in table.file_system_view().file_groups() if len(g.slices) == 1)
    for name in group.slices[0].file_names:
        ((path / group.partition) / name).unlink()
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert finding.repair == (f"{NO_REPAIR}file group {group.file_id} of {group.partition!r} is gone from storage "
                              f"while {indexes} may still point at it: a Hudi writer must rebuild the index")

    path = table_copy('partition')
    gone = sorted(f for f in path.iterdir() if f.name.startswith("region="))[0]
    shutil.rmtree(gone)
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert finding.repair == (f"{NO_REPAIR}partition {gone.name!r} is gone from storage while {indexes} may still "
                              "point into it: a Hudi writer must rebuild the index")

    path = table_copy('pending')
    table = HudiTable.open(str(path))
    last = table.timeline.commits().completed().last()
    assert last is not None
    pending = "20261102000000000"
    stray = _stranger(path, pending)
    folder = Path(table.timeline.folder)
    for state in (State.REQUESTED, State.INFLIGHT):
        (folder / Instant(pending, last.action, state).file_name(2)).write_bytes(b"")
    _older_version(path).unlink()  # drift the sync would repair, if not for the pending write's file
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, DriftEvidence) and finding.evidence.uncommitted == 1
    assert finding.evidence.only_in_metadata == 1
    assert finding.repair == (f"{NO_REPAIR}1 file(s) of pending writes are on storage and a sync would list them; "
                              "roll back or finish the pending writes first (see stale-pending)")
    assert stray.exists()


def _files_only(path: Path) -> None:
    """The metadata table keeps its files partition alone: no index a sync would leave behind."""
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})


def test_mdt_drift_a_partition_gone_from_storage_is_removed_file_by_file_then_from_the_list(table_copy) -> None:
    """fetchOutofSyncFilesRecordsFromMetadataTable: a partition the metadata table lists and
    storage no longer holds loses each file of its listing, then leaves the partition list
    (a deleted entry in the `__all_partitions__` record), in one deltacommit."""
    from timeline.doctor.findings import Change

    path = table_copy(V9_META)
    _files_only(path)
    gone = sorted(f for f in path.iterdir() if f.name.startswith("region="))[0]
    names = sorted(f.name for f in gone.iterdir() if f.is_file() and not f.name.startswith(".hoodie"))
    shutil.rmtree(gone)
    age_tree(path)
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    assert list(plan.changes) == [
        Change("metadata deltacommit", "files", 0, "one deltacommit on the metadata table at a new time"),
        *[Change("metadata remove", f"{gone.name}/{n}", 0, "listed but gone from storage") for n in names],
        Change("metadata remove partition", gone.name, 0, "gone from storage")]
    result = run_repair(HudiTable.open(str(path)), plan, dry_run=False)
    assert result.ok and (result.table, result.kind) == (HudiTable.open(str(path)).uri, KIND)
    assert result.done == plan.changes and result.skipped == ()
    assert HudiTable.open(str(path)).inspect.validate_metadata_table().ok
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []


def test_mdt_drift_a_size_that_differs_is_recorded_again(table_copy) -> None:
    """MetadataCommand.validateFiles compares sizes too: a committed file whose size on storage
    differs from the listing's is listed again with its size (an add of the same name)."""
    from timeline.doctor.findings import Change

    path = table_copy(V9_META)
    _files_only(path)
    grown = _older_version(path)
    with grown.open("ab") as out:
        out.write(b"\0" * 10)
    size = grown.stat().st_size
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, DriftEvidence) and finding.evidence.sizes == 1 and finding.repairable
    (drift,) = finding.evidence.partitions
    assert drift.sizes == (SizeDrift(grown.name, size, size - 10),)
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    assert list(plan.changes)[1:] == [
        Change("metadata add", f"{grown.parent.name}/{grown.name}", size, "on storage, committed")]
    assert run_repair(HudiTable.open(str(path)), plan, dry_run=False).ok
    assert HudiTable.open(str(path)).inspect.validate_metadata_table().ok


def test_mdt_drift_on_a_table_without_partitions(table_copy) -> None:
    """A non-partitioned table's files sit in its base folder (partition ""): the sync's changes
    name the file alone, and cover the drift."""
    path = table_copy("sample_table/cow/v9_txns_nonpart_meta")
    victim = _older_version(path)
    victim.unlink()
    age_tree(path)
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    assert [c.target for c in plan.changes if c.action == "metadata remove"] == [victim.name]
    assert run_repair(HudiTable.open(str(path)), plan, dry_run=False).ok
    assert HudiTable.open(str(path)).inspect.validate_metadata_table().ok


def test_mdt_drift_column_stats_entries_of_a_file_gone_are_each_deleted(table_copy) -> None:
    """The sync marks deleted the column-stats entry of each column of a file gone (its key, as
    the metadata table keys it), one change per entry."""
    from timeline.mdt.writer import COLUMN_STATS

    path = table_copy(V9_META)
    victim = _older_version(path)
    mdt = metadata_table(HudiTable.open(str(path)))
    assert mdt is not None
    keys = {k for k, r in mdt.records(COLUMN_STATS).items() if r.column_stats and r.column_stats[0] == victim.name}
    victim.unlink()
    age_tree(path)
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    stats = [c for c in plan.changes if c.action == "metadata column-stats delete"]
    assert keys and {c.target for c in stats} == keys and len(stats) == len(keys)


def test_mdt_drift_an_orphan_beside_real_drift_is_not_adopted_by_the_sync(table_copy) -> None:
    """The sync the repair writes adds only files commit metadata names: an orphan stamped with a
    completed commit's time, on storage beside a real drift, is neither previewed nor listed."""
    path = table_copy(V9_META)
    _files_only(path)
    last = HudiTable.open(str(path)).timeline.commits().completed().last()
    assert last is not None
    stranger = _stranger(path, last.requested_time)
    _older_version(path).unlink()
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, DriftEvidence) and finding.evidence.not_committed == 1
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    assert not [c for c in plan.changes if stranger.name in c.target]
    assert run_repair(HudiTable.open(str(path)), plan, dry_run=False).ok
    mdt = metadata_table(HudiTable.open(str(path)))
    assert mdt is not None and stranger.name not in mdt.files()[stranger.parent.name]


def test_mdt_drift_run_refuses_what_it_did_not_preview_and_skips_what_is_in_sync_again(table_copy) -> None:
    """Under the lock the sync is computed again: a change the approved plan did not preview
    refuses the run (RepairInvalidated, word for word, nothing written); a previewed change
    that is no longer needed (the file came back) is skipped as already in sync, the rest runs."""
    from timeline.doctor import RepairInvalidated

    path = table_copy(V9_META)
    _files_only(path)
    table = HudiTable.open(str(path))
    first = _older_version(path)
    kept = first.read_bytes()
    first.unlink()
    age_tree(path)
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    second = _older_version(path)
    second.unlink()
    with pytest.raises(RepairInvalidated) as refused:
        run_repair(HudiTable.open(str(path)), plan, dry_run=False)
    assert str(refused.value) == (f"{table.uri}: the metadata table now needs metadata remove "
                                  f"{second.parent.name}/{second.name} (1 change(s) the plan did not preview); "
                                  "nothing was changed")
    wider = plan_repair(HudiTable.open(str(path)), KIND)
    first.write_bytes(kept)  # back: its removal is no longer needed
    age_tree(path)
    result = run_repair(HudiTable.open(str(path)), wider, dry_run=False)
    back = ("metadata remove", f"{first.parent.name}/{first.name}")
    assert [c.key for c, why in result.skipped] == [back] and [why for _, why in result.skipped] == ["already in sync"]
    assert (result.table, result.kind) == (table.uri, KIND) and back not in {c.key for c in result.done}
    assert HudiTable.open(str(path)).inspect.validate_metadata_table().ok


def test_mdt_drift_sync_time_follows_a_pending_instant_and_a_completion_ahead_of_the_clock(table_copy) -> None:
    """The sync's time is later than every time of the data table, requested or completed: a
    completion time ahead of the clock (another host's) and a requested-only write (no file
    yet) included."""
    from timeline.instant import Instant, State

    path = table_copy(V9_META)
    _files_only(path)
    table = HudiTable.open(str(path))
    folder = Path(table.timeline.folder)
    last = table.timeline.commits().completed().last()
    assert last is not None
    ahead = "20991231000000000"
    (folder / last.file_name(2)).rename(folder / Instant(last.requested_time, last.action, State.COMPLETED,
                                                         ahead).file_name(2))
    (folder / Instant("20261102000000000", last.action, State.REQUESTED).file_name(2)).write_bytes(b"")
    _older_version(path).unlink()
    age_tree(path)
    assert run_repair(HudiTable.open(str(path)), plan_repair(HudiTable.open(str(path)), KIND), dry_run=False).ok
    mdt = metadata_table(HudiTable.open(str(path)))
    assert mdt is not None
    sync = mdt.mdt.timeline.completed().last()
    assert sync is not None and sync.requested_time > ahead


def test_mdt_drift_v6_sync_carries_the_restore_suffix(tmp_path: Path) -> None:
    """Table version 6: the sync is written at a new time + "003" (0.14/0.15's
    createRestoreTimestamp), which 0.x readers count as valid."""
    from tests.helpers import FIXTURES, unzip_table
    from tests.mdt.helpers import add_v6_metadata_table

    lake = unzip_table(FIXTURES / "quickstart_trips_table/mor/avro/v6_trips_8i1u.zip", tmp_path / "t")
    add_v6_metadata_table(lake)
    victim = next(p for p in sorted(lake.rglob("*.parquet")) if ".hoodie" not in p.parts)
    victim.unlink()
    age_tree(lake)
    before = {i.requested_time for i in metadata_table(HudiTable.open(str(lake))).mdt.timeline}  # type: ignore[union-attr]
    plan = plan_repair(HudiTable.open(str(lake)), KIND)
    assert run_repair(HudiTable.open(str(lake)), plan, dry_run=False).ok
    mdt = metadata_table(HudiTable.open(str(lake)))
    assert mdt is not None
    (sync,) = [i for i in mdt.mdt.timeline if i.requested_time not in before]
    assert sync.requested_time.endswith("003") and len(sync.requested_time) == 20
    assert HudiTable.open(str(lake)).inspect.validate_metadata_table().ok


def test_mdt_drift_a_metadata_table_that_cannot_be_read_is_reported_in_full(table_copy) -> None:
    """A files partition that cannot be read (here its base HFile cut short) is one finding:
    readers and writers using the metadata table fail on it; the way out is to drop it."""
    from timeline.doctor.findings import Finding, Severity
    from timeline.doctor.mdt_drift import UnreadableEvidence

    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    (hfile,) = sorted((path / ".hoodie" / "metadata" / "files").glob("*.hfile"))[-1:]
    hfile.write_bytes(hfile.read_bytes()[:100])
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, UnreadableEvidence) and hfile.name in finding.evidence.error
    partitions = (*table.config.metadata_partitions, *table.config.metadata_partitions_inflight)
    assert finding == Finding(KIND, Severity.ERROR, "the metadata table cannot be read",
                              UnreadableEvidence(finding.evidence.error, partitions),
                              "Readers and writers that use the metadata table fail on it.",
                              f"{NO_REPAIR}drop the metadata table (cleanline mdt drop); Hudi writers rebuild it")


def test_mdt_drift_a_log_file_gone_from_a_group_that_stays_is_no_group_gone(table_copy) -> None:
    """Under a record index a file group gone is left to a Hudi writer, but a log file gone from
    a group whose base file stays is no group gone: a log file's file id is its name's without
    the leading "." (getFileIdFromLogPath), the same group as its base file's."""
    path = table_copy("sample_table/mor/avro/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    assert "record_index" in table.config.metadata_partitions
    piece = next(s for g in table.file_system_view().all_file_groups() for s in g.slices
                 if s.base_file is not None and s.log_files)
    folder = path / piece.partition if piece.partition else path
    (folder / piece.log_files[-1].name).unlink()  # its group keeps its base files
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, DriftEvidence) and finding.evidence.only_in_metadata == 1
    assert finding.repairable, finding.repair
