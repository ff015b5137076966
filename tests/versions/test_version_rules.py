"""The preflight of a table version change (timeline/versions/): each blocker on a hand-made
timeline that has it, the change refused while it stands and the blocker gone once cleared;
the steps Hudi takes; what is only a note (settings rewritten, indexes dropped, readers)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from tests.helpers import ROOT, Lake, T
from timeline import HudiTable
from timeline.instant import Instant, State
from timeline.storage import MemoryStorage
from timeline.versions import READERS, BlockerKind, VersionChangeUnsupported, VersionCheck

P = "city=sf"


def check(lake: Lake, to: int, options: Mapping[str, str] | None = None) -> VersionCheck:
    return HudiTable.load(lake.storage, "/t").inspect.version_check(to, options=options)


def found(answer: VersionCheck, kind: BlockerKind) -> list[tuple[int, int, str | None, bool]]:
    """(step from, step to, instant or setting, blocking) of every blocker of `kind`."""
    return [(s.step.from_version, s.step.to_version, b.instant.requested_time if b.instant else b.setting, b.blocking)
            for s in answer.steps for b in s.blockers if b.kind is kind]


def cow(version: int, **props: str) -> Lake:
    lake = Lake(MemoryStorage(), "/t", version=version, extra_props=props)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    return lake


def test_version_check_same_version_has_nothing_to_do() -> None:
    answer = check(cow(8), 8)
    assert answer.steps == () and answer.ready and (answer.current, answer.target) == (8, 8)


@pytest.mark.parametrize("target", [5, 7, 10])
def test_version_check_refuses_a_target_it_does_not_check(target: int) -> None:
    with pytest.raises(VersionChangeUnsupported, match=f"target version {target} is not one"):
        check(cow(8), target)


@pytest.mark.parametrize(("current", "target", "steps"), [
    (6, 9, [(6, 8), (8, 9)]), (9, 6, [(9, 8), (8, 6)]), (6, 8, [(6, 8)]), (8, 6, [(8, 6)]), (8, 9, [(8, 9)]),
    (9, 8, [(9, 8)])])
def test_version_check_goes_step_by_step(current: int, target: int, steps: list[tuple[int, int]]) -> None:
    answer = check(cow(current), target)
    assert [(s.step.from_version, s.step.to_version) for s in answer.steps] == steps
    handlers = {(6, 8): "SevenToEightUpgradeHandler", (8, 9): "EightToNineUpgradeHandler",
                (9, 8): "NineToEightDowngradeHandler", (8, 6): "EightToSevenDowngradeHandler"}
    assert all(handlers[(s.step.from_version, s.step.to_version)] in s.step.handler for s in answer.steps)


@pytest.mark.parametrize(("version", "target"), [(6, 8), (8, 6), (8, 9), (9, 8), (9, 6)])
def test_version_check_pending_write_blocks_every_step_until_completed(version: int, target: int) -> None:
    lake = cow(version)
    written = {P: [lake.base_file(P, "h", T[1])]}
    lake.commit(T[1], written, state=State.INFLIGHT)
    answer = check(lake, target)
    assert {(b[2], b[3]) for b in found(answer, BlockerKind.PENDING_WRITE)} == {(T[1], True)}
    assert len(found(answer, BlockerKind.PENDING_WRITE)) == len(answer.steps) and not answer.ready
    assert all("rollbackFailedWrites" in b.rule for b in answer.blockers)
    complete(lake, T[1], written)
    assert found(check(lake, target), BlockerKind.PENDING_WRITE) == []


def test_version_check_pending_write_names_its_live_writer() -> None:
    lake = cow(8)
    lake.commit(T[1], {P: [lake.base_file(P, "h", T[1])]}, state=State.INFLIGHT)
    assert "(no live writer seen)" in check(lake, 9).blockers[0].why
    lake.storage.write(f"/t/.hoodie/.heartbeat/{T[1]}", b"")
    assert f"(its writer is live: commit {T[1]} (heartbeat touched" in check(lake, 9).blockers[0].why


def complete(lake: Lake, time: str, written: Mapping[str, list[str]]) -> None:
    """The pending commit at `time` completed (its completed state file written)."""
    done = Instant(time, "commit", State.COMPLETED, time[:-3] + "999" if lake.layout == 2 else None)
    lake.instant_file(done, lake.commit_metadata(written, None, "UPSERT", time=time))


def test_version_check_v6_clustering_replacecommit_is_no_write() -> None:
    lake = cow(6)
    lake.instant_file(Instant(T[1], "replacecommit", State.REQUESTED), {"operationType": "cluster", "version": 1,
                                                                        "clusteringPlan": None})
    lake.commit(T[2], {}, replaced={P: []}, state=State.INFLIGHT)  # an insert_overwrite: a write
    assert found(check(lake, 8), BlockerKind.PENDING_WRITE) == [(6, 8, T[2], True)]


def mor(version: int) -> Lake:
    lake = Lake(MemoryStorage(), "/t", version=version, table_type="MERGE_ON_READ")
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    return lake


@pytest.mark.parametrize("version", [6, 8])
def test_version_check_pending_compaction_blocks_merge_on_read_until_completed(version: int) -> None:
    lake = mor(version)
    lake.schedule_compaction(T[1], [(P, "g", T[0])])
    target = 8 if version == 6 else 6
    assert found(check(lake, target), BlockerKind.PENDING_TABLE_SERVICE) == [(version, target, T[1], True)]
    lake.complete_compaction(T[1], {P: [lake.base_file(P, "g", T[1])]})
    assert found(check(lake, target), BlockerKind.PENDING_TABLE_SERVICE) == []


def test_version_check_pending_log_compaction_is_rolled_back_as_a_write() -> None:
    lake = mor(8)
    lake.instant_file(Instant(T[1], "logcompaction", State.REQUESTED), {"operations": [], "version": 2})
    answer = check(lake, 9)
    assert found(answer, BlockerKind.PENDING_WRITE) == [(8, 9, T[1], True)]
    assert found(answer, BlockerKind.PENDING_TABLE_SERVICE) == []


def test_version_check_pending_clustering_of_copy_on_write_is_carried_over() -> None:
    lake = cow(8)
    lake.instant_file(Instant(T[1], "clustering", State.REQUESTED), {"operationType": "cluster", "version": 1,
                                                                     "clusteringPlan": None})
    assert found(check(lake, 6), BlockerKind.PENDING_TABLE_SERVICE) == []


def test_version_check_log_files_block_merge_on_read_until_compacted() -> None:
    lake = mor(8)
    lake.commit(T[1], {P: [lake.log_file(P, "g", T[1])]})
    answer = check(lake, 9)
    (blocker,) = [b for b in answer.blockers if b.kind is BlockerKind.LOG_FILES]
    assert blocker.file_groups == ((P, "g"),) and "UnBoundedCompactionStrategy" in blocker.rule
    lake.schedule_compaction(T[2], [(P, "g", T[0])])
    lake.complete_compaction(T[2], {P: [lake.base_file(P, "g", T[2])]})
    assert found(check(lake, 9), BlockerKind.LOG_FILES) == []


def test_version_check_pending_rollback_blocks_until_finished() -> None:
    lake = cow(9)
    lake.instant_file(Instant(T[1], "rollback", State.REQUESTED))
    answer = check(lake, 6)
    assert found(answer, BlockerKind.PENDING_ROLLBACK) == [(9, 8, T[1], True), (8, 6, T[1], True)]
    assert "#14110" in [b for b in answer.blockers if b.kind is BlockerKind.PENDING_ROLLBACK][1].why
    lake.storage.delete(f"{lake.timeline_folder}/{Instant(T[1], 'rollback', State.REQUESTED).file_name(2)}")
    assert found(check(lake, 6), BlockerKind.PENDING_ROLLBACK) == []


def test_version_check_non_blocking_concurrency_writers_block_the_downgrade_to_6() -> None:
    lake = cow(8)
    nbcc = {"hoodie.write.concurrency.mode": "non_blocking_concurrency_control"}
    assert found(check(lake, 6, nbcc), BlockerKind.NON_BLOCKING_CONCURRENCY) == [
        (8, 6, "hoodie.write.concurrency.mode", True)]
    assert found(check(lake, 9, nbcc), BlockerKind.NON_BLOCKING_CONCURRENCY) == []
    occ = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}
    assert found(check(lake, 6, occ), BlockerKind.NON_BLOCKING_CONCURRENCY) == []


def test_version_check_indexing_instant_blocks_the_downgrade_to_6_only() -> None:
    lake = cow(9)
    indexing = Instant(T[1], "indexing", State.COMPLETED, T[1][:-3] + "999")
    lake.instant_file(Instant(T[1], "indexing", State.REQUESTED))
    lake.instant_file(indexing)
    answer = check(lake, 6)
    assert found(answer, BlockerKind.INDEXING_ON_TIMELINE) == [(8, 6, T[1], True)]
    assert "#13908" in answer.blockers[0].rule
    assert found(check(lake, 8), BlockerKind.INDEXING_ON_TIMELINE) == []
    for state in (indexing, Instant(T[1], "indexing", State.REQUESTED)):  # archived: off the active timeline
        lake.storage.delete(f"{lake.timeline_folder}/{state.file_name(2)}")
    assert check(lake, 6).ready


def mdt_properties(lake: Lake, version: int) -> None:
    lake.storage.write("/t/.hoodie/metadata/.hoodie/hoodie.properties",
                       f"hoodie.table.name=lake_metadata\nhoodie.table.version={version}\n".encode(),
                       overwrite=True)


def test_version_check_metadata_table_on_another_version_blocks_until_they_agree() -> None:
    lake = cow(8)
    mdt_properties(lake, 6)
    answer = check(lake, 9)
    assert found(answer, BlockerKind.METADATA_TABLE_VERSION) == [(8, 9, "hoodie.table.version", True)]
    assert "the metadata table is on table version 6, the data table on 8" in answer.blockers[0].why
    mdt_properties(lake, 8)
    assert found(check(lake, 9), BlockerKind.METADATA_TABLE_VERSION) == []


def test_version_check_record_index_blocks_the_upgrade_from_6_to_9() -> None:
    partitions = "hoodie.table.metadata.partitions"
    lake = cow(6, **{partitions: "files,record_index"})
    assert found(check(lake, 9), BlockerKind.RECORD_INDEX_UPGRADE) == [(8, 9, partitions, True)]
    assert found(check(lake, 8), BlockerKind.RECORD_INDEX_UPGRADE) == []
    assert found(check(cow(6, **{partitions: "files"}), 9), BlockerKind.RECORD_INDEX_UPGRADE) == []
    assert found(check(cow(8, **{partitions: "files,record_index"}), 9), BlockerKind.RECORD_INDEX_UPGRADE) == []


def test_version_check_index_partitions_version_6_cannot_hold_are_dropped() -> None:
    lake = cow(8, **{"hoodie.table.metadata.partitions": "files,column_stats,partition_stats,secondary_index_a"})
    answer = check(lake, 6)
    notes = [b for b in answer.notes if b.kind is BlockerKind.INDEX_PARTITION]
    assert [n.why.split("'s ")[1].split(" partition")[0] for n in notes] == ["partition_stats", "secondary_index_a"]
    assert answer.ready and all(n.rule == "EightToSevenDowngradeHandler.downgradeMetadataPartitions" for n in notes)


def test_version_check_index_partitions_above_v1_are_dropped_going_to_8() -> None:
    lake = cow(9, **{"hoodie.table.metadata.partitions": "files,record_index,secondary_index_a",
                     "hoodie.table.index.defs.path": ".hoodie/.index_defs/index.json"})
    lake.storage.write("/t/.hoodie/.index_defs/index.json", json.dumps({"indexDefinitions": {
        "record_index": {"indexName": "record_index", "version": "V1"},
        "secondary_index_a": {"indexName": "secondary_index_a", "version": "V2"}}}).encode())
    notes = [b for b in check(lake, 8).notes if b.kind is BlockerKind.INDEX_PARTITION]
    assert [("secondary_index_a" in n.why, n.rule) for n in notes] == [
        (True, "UpgradeDowngradeUtils.dropNonV1IndexPartitions")]


def test_version_check_custom_merge_mode_without_a_payload_blocks_the_downgrade_to_6() -> None:
    lake = cow(8, **{"hoodie.record.merge.mode": "CUSTOM"})
    assert found(check(lake, 6), BlockerKind.SETTING) == [(8, 6, "hoodie.record.merge.mode", True)]
    payload = cow(8, **{"hoodie.record.merge.mode": "CUSTOM",
                        "hoodie.compaction.payload.class": "com.example.MyPayload"})
    assert found(check(payload, 6), BlockerKind.SETTING) == [(8, 6, "hoodie.record.merge.mode", False)]


def test_version_check_complex_key_generator_with_one_key_blocks_the_downgrade_to_8() -> None:
    props = {"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
             "hoodie.table.recordkey.fields": "id"}
    lake = cow(9, **props)
    assert (9, 8, "hoodie.table.keygenerator.class", True) in found(check(lake, 8), BlockerKind.SETTING)
    off = {"hoodie.write.complex.keygen.validation.enable": "false"}
    assert check(lake, 8, off).ready
    assert check(cow(9, **{**props, "hoodie.table.recordkey.fields": "id,name"}), 8).ready


def test_version_check_settings_the_target_spells_differently_will_be_rewritten() -> None:
    payload = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ", extra_props={
        "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"})
    assert found(check(payload, 9), BlockerKind.SETTING) == [(8, 9, "hoodie.compaction.payload.class", False)]
    six = cow(6, **{"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator"})
    assert found(check(six, 8), BlockerKind.SETTING) == [(6, 8, "hoodie.record.merge.mode", False),
                                                          (6, 8, "hoodie.table.keygenerator.type", False)]


def test_version_check_upgrades_name_the_readers_that_break() -> None:
    answer = check(cow(6), 9)
    assert found(answer, BlockerKind.READERS) == [(6, 8, "hoodie.table.version", False),
                                                  (8, 9, "hoodie.table.version", False)]
    readers = [b.why for b in answer.notes if b.kind is BlockerKind.READERS]
    assert readers[0].startswith("Apache Hudi 0.14.x and 0.15.x") and readers[1].startswith("Apache Hudi 0.x and 1.0.x")
    assert found(check(cow(9), 6), BlockerKind.READERS) == []


def test_version_check_unreadable_metadata_table_blocks() -> None:
    lake = cow(8)
    lake.storage.write("/t/.hoodie/metadata/.hoodie/hoodie.properties",
                       b"hoodie.table.name=lake_metadata\nhoodie.table.checksum=1\nhoodie.table.version=8\n")
    (blocker,) = check(lake, 9).blockers
    assert blocker.kind is BlockerKind.METADATA_TABLE_VERSION and "cannot be read" in blocker.why


def test_version_check_metadata_table_behind_is_deleted_by_the_upgrade() -> None:
    lake = cow(8, **{"hoodie.table.metadata.partitions": "files"})
    lake.commit(T[1], {P: [lake.base_file(P, "h", T[1])]})
    mdt = Lake(lake.storage, "/t/.hoodie/metadata", version=8, table_type="MERGE_ON_READ", partitioned=False)
    mdt.commit(T[0], {})
    answer = check(lake, 9)
    assert found(answer, BlockerKind.METADATA_TABLE_BEHIND) == [(8, 9, T[0], False)] and answer.ready
    assert found(check(lake, 9, {"hoodie.metadata.enable": "false"}), BlockerKind.METADATA_TABLE_BEHIND) == []
    assert found(check(lake, 6), BlockerKind.METADATA_TABLE_BEHIND) == []
    mdt.commit(T[1], {})
    assert found(check(lake, 9), BlockerKind.METADATA_TABLE_BEHIND) == []


def test_version_check_readers_are_the_readme_table() -> None:
    """The readers the preflight names are README's table ("Table versions: the preflight")."""
    rows = {int(cells[1]): cells[3].strip() for line in (ROOT / "README.md").read_text().splitlines()
            if (cells := line.split("|")) and len(cells) > 4 and cells[1].strip() in ("6", "8", "9")}
    assert rows == READERS
