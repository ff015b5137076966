"""What the metadata table's reader merges (timeline/mdt/reader.py): the valid instants of
`HoodieTableMetadataUtil.getValidInstantTimestamps` (Hudi 1.x, and 0.14/0.15 on table version 6),
the merged file slices of `getPartitionLatestMergedFileSlices`, and the log blocks a
`HoodieMetadataLogRecordReader` scan keeps; on hand-made metadata tables (tests/mdt/helpers.py)."""

from __future__ import annotations

from itertools import islice

from tests.mdt.helpers import HandMadeMdt, data_block, delete_block
from timeline.instant import Instant, State
from timeline.logformat import BlockType, HeaderKey, command_block, encode_block
from timeline.mdt.stream import iter_files
from timeline.metadata.mdt_payload import files_record, partition_list_record

T1, T2, T3, T4, T5 = (f"2026010{d}000000000" for d in range(1, 6))
GROUP = "files-0000-0"
INIT = "00000000000000010"


def rollback_content(time: str, commits: list[str]) -> dict[str, object]:
    return {"startRollbackTime": time, "timeTakenInMillis": 0, "totalFilesDeleted": 0, "commitsRollback": commits,
            "partitionMetadata": {}, "version": 1, "instantsRollback": []}


def test_valid_instants_of_hudi_1x() -> None:
    """getValidInstantTimestamps (1.x): the data table's completed instants; the MDT's completed
    deltacommits unless the data table's instant is pending (isValidInstant: a write that
    failed after its MDT deltacommit completed), not its compactions; its completed rollbacks
    and restores; nothing still pending on the MDT."""
    mdt = HandMadeMdt()
    mdt.data.commit(T1, {})
    mdt.data.commit(T2, {}, state=State.INFLIGHT)
    for time in (INIT, T1, T2, T3):
        mdt.deltacommit(time)
    mdt.deltacommit(T5, State.INFLIGHT)
    mdt.meta.complete_compaction("20260103500000000", {})
    mdt.meta.instant_file(Instant("20260104000000000", "rollback", State.COMPLETED, "20260104000000999"),
                          rollback_content("20260104000000000", []))
    mdt.meta.instant_file(Instant("20260104500000000", "restore", State.COMPLETED, "20260104500000999"),
                          {"startRestoreTime": "20260104500000000", "timeTakenInMillis": 0, "instantsToRollback": [],
                           "hoodieRestoreMetadata": {}, "version": 1})
    assert mdt.reader().valid_instants() == {INIT, T1, T3, "20260104000000000", "20260104500000000"}


def test_valid_instants_of_hudi_0x_on_table_version_6() -> None:
    """0.14/0.15 getValidInstantTimestamps: the data table's completed instants; an MDT
    deltacommit only with an operation suffix (isValidInstant: 17 digits and "001".."006", or an
    index initialisation's from "010"); the instants completed data-table rollbacks and restores
    rolled back, when after the earliest valid instant (an empty rollback's from its plan); the
    MDT's completed rollbacks and restores, and its initialisation deltacommit."""
    assert HandMadeMdt(version=6).reader().valid_instants() == set()
    mdt = HandMadeMdt(version=6)
    data = mdt.data
    data.instant_file(Instant("20251231000000000", "rollback", State.COMPLETED),    # the earliest: skipped
                      rollback_content("20251231000000000", ["20251230000000000"]))
    data.commit(T1, {})
    data.commit(T2, {}, state=State.INFLIGHT)
    data.instant_file(Instant("20260102100000000", "rollback", State.COMPLETED),
                      rollback_content("20260102100000000", ["20260102050000000"]))
    data.instant_file(Instant("20260102200000000", "rollback", State.REQUESTED),
                      {"instantToRollback": {"commitTime": "20260102150000000", "action": "commit"},
                       "RollbackRequests": [], "version": 1})
    data.instant_file(Instant("20260102200000000", "rollback", State.COMPLETED),
                      rollback_content("20260102200000000", []))  # empty: its plan names the instant
    data.instant_file(Instant("20260102250000000", "rollback", State.REQUESTED),
                      {"instantToRollback": None, "RollbackRequests": [], "version": 1})
    data.instant_file(Instant("20260102250000000", "rollback", State.COMPLETED),
                      rollback_content("20260102250000000", []))  # empty, its plan naming nothing: nothing
    data.instant_file(Instant("20260102300000000", "rollback", State.COMPLETED),
                      rollback_content("20260102300000000", []))  # empty, and no plan: nothing
    data.instant_file(Instant("20260102400000000", "restore", State.COMPLETED),
                      {"startRestoreTime": "20260102400000000", "timeTakenInMillis": 0, "instantsToRollback": [],
                       "hoodieRestoreMetadata": {"20260102350000000": [
                           rollback_content("20260102400000000", ["20260102350000000", "20260102360000000"])]},
                       "version": 1})
    data.instant_file(Instant("20260102500000000", "rollback", State.COMPLETED),
                      rollback_content("20260102500000000", ["20260102450000000"]))
    suffixed = {s: f"20260103000000000{s}" for s in ("001", "006", "007", "010", "011")}
    for time in (INIT, T2, T3, *suffixed.values(), "20260103000000001009", "20260103000000500"):
        mdt.deltacommit(time)
    mdt.meta.complete_compaction("20260103000000000002", {})
    mdt.meta.complete_compaction("00000000000000011", {})
    mdt.meta.instant_file(Instant("20260104000000000006", "rollback", State.COMPLETED),
                          rollback_content("20260104000000000006", []))
    mdt.meta.instant_file(Instant("20260104000000000003", "restore", State.COMPLETED),
                          {"startRestoreTime": "20260104000000000003", "timeTakenInMillis": 0,
                           "instantsToRollback": [], "hoodieRestoreMetadata": {}, "version": 1})
    completed_data = {"20251231000000000", T1, "20260102100000000", "20260102200000000", "20260102250000000",
                      "20260102300000000", "20260102400000000", "20260102500000000"}
    rolled_back = {"20260102050000000", "20260102150000000", "20260102350000000", "20260102360000000",
                   "20260102450000000"}
    mdt_own = {INIT, suffixed["001"], suffixed["006"], suffixed["010"], suffixed["011"],
               "20260104000000000006", "20260104000000000003"}
    assert mdt.reader().valid_instants() == completed_data | rolled_back | mdt_own


def listed(mdt: HandMadeMdt) -> dict[str, dict[str, int]]:
    """The listing of the whole-partition merge, the same as the stream's."""
    whole = mdt.reader().files()
    assert list(islice(iter_files(mdt.reader()), 20)) == sorted(whole.items())
    return whole


def test_a_scan_keeps_the_data_and_delete_blocks_of_valid_instants_up_to_the_last_completed_one() -> None:
    """BaseHoodieLogRecordReader.scanInternal: a block after the MDT's last completed instant is
    not read, nor one of an instant that is not valid (here the MDT deltacommit of a write the
    data table has pending); a ROLLBACK command block drops the blocks of its target instant read
    so far, in every log file of the slice, and no other command does; blocks of other types
    (an AVRO_DATA block) and blocks without an instant time are skipped, and the scan goes on."""
    mdt = HandMadeMdt()
    mdt.data.commit(T2, {}, state=State.REQUESTED)   # failed after its MDT deltacommit completed
    mdt.data.commit(T5, {})                          # its MDT deltacommit still inflight
    for time in (T1, T2, T3, T4):
        mdt.deltacommit(time)
    mdt.deltacommit(T5, State.INFLIGHT)
    listing = [partition_list_record(["a", "b", "c", "d", "e", "f"], deleted=False)]
    mdt.log(GROUP, T1, 1, data_block(T1, [*listing, files_record("a", added={"a1": 1})]))
    mdt.log(GROUP, T2, 1, data_block(T2, [files_record("b", added={"b2": 2})]))
    mdt.log(GROUP, T3, 1, data_block(T3, [files_record("c", added={"c3": 3})]))
    mdt.log(GROUP, T3, 2, data_block(T3, [files_record("d", added={"d3": 3})]))
    other_command = encode_block(BlockType.COMMAND, {HeaderKey.INSTANT_TIME: T4, HeaderKey.COMMAND_BLOCK_TYPE: "1",
                                                     HeaderKey.TARGET_INSTANT_TIME: T1}, b"")
    mdt.log(GROUP, T4, 1, encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: T4}, b"not avro"),
            encode_block(BlockType.HFILE_DATA, {}, b"no instant time, not read"),
            data_block(T4, [files_record("e", added={"e4": 4})]), other_command,
            command_block(T4, T3), data_block(T4, [files_record("f", added={"f4": 4})]))
    mdt.log(GROUP, T5, 1, data_block(T5, [files_record("a", added={"a5": 5})]), delete_block(T5, ["e"]))
    assert listed(mdt) == {"a": {"a1": 1}, "b": {}, "c": {}, "d": {}, "e": {"e4": 4}, "f": {"f4": 4}}


def test_a_slice_waiting_for_its_compaction_is_merged_with_the_slice_before_it() -> None:
    """getPartitionLatestMergedFileSlices: while an MDT compaction is pending its slice has no
    base file; the reader merges the slice before it (base file, then its log files, then the
    pending slice's, in that order). A file group whose only slice waits for its compaction is
    read as it is; a file group with no committed slice adds nothing, and the next is read."""
    mdt = HandMadeMdt()
    mdt.base(GROUP, T1, [partition_list_record(["a", "b", "c"], deleted=False), files_record("a", added={"a1": 1})])
    mdt.deltacommit(T2)
    mdt.log(GROUP, T2, 1, data_block(T2, [files_record("b", added={"b2": 2})]))
    mdt.meta.schedule_compaction(T3, [("files", GROUP, T1), ("files", "files-0002-0", T3)])
    mdt.deltacommit(T4)
    mdt.log(GROUP, T4, 1, delete_block(T4, ["b"]))
    mdt.log("files-0002-0", T4, 1, data_block(T4, [files_record("c", added={"c4": 4})]))
    mdt.log("files-0001-0", T5, 1, data_block(T5, [files_record("c", added={"c5": 5})]))  # T5 never started
    slices = mdt.reader().merged_slices("files")
    assert [(s.file_id, s.base_instant_time, [log.instant_time for log in s.log_files]) for s in slices] == [
        (GROUP, T1, [T2, T4]), ("files-0002-0", T3, [T4])]
    assert listed(mdt) == {"a": {"a1": 1}, "b": {}, "c": {"c4": 4}}
    # sorted by file id (getPartitionLatestMergedFileSlices), not in the order storage lists them
    # (a log file's name starts with a dot)
    mdt = HandMadeMdt()
    mdt.base(GROUP, T1, [])
    mdt.deltacommit(T2)
    mdt.log("files-0001-0", T2, 1, data_block(T2, [partition_list_record(["a"], deleted=False)]))
    assert [s.file_id for s in mdt.reader().merged_slices("files")] == [GROUP, "files-0001-0"]
