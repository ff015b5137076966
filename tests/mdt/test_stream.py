"""Listing as a stream in partition order (timeline/mdt/listing.py `iter_listing`,
timeline/mdt/stream.py `iter_files`): the metadata table's `files` partition merged key by key
is its whole listing (`MetadataTable.files`) on every fixture with a metadata table, a partition
at a time; storage's top folders whose partitions interleave are walked together."""

from __future__ import annotations

import json
import re
from itertools import islice
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, unzip_table
from tests.mdt.helpers import RECORD_SCHEMA, HandMadeMdt, data_block, delete_block, hfile_of
from timeline import HudiTable
from timeline.exceptions import CleanlineError
from timeline.hfile import write_hfile
from timeline.instant import State
from timeline.mdt.listing import folder_groups, iter_listing, table_listing
from timeline.mdt.reader import MetadataTable
from timeline.mdt.stream import iter_files
from timeline.metadata.mdt_payload import MetadataRecord, files_record, partition_list_record

MDT_FIXTURES = sorted(p for p in FIXTURES.rglob("*.zip") if p.stem.endswith("_meta") or p.stem == "v8_trips_8i3u1d")


@pytest.mark.parametrize("archive", MDT_FIXTURES, ids=[p.stem + "-" + p.parent.name for p in MDT_FIXTURES])
def test_the_metadata_tables_stream_is_its_listing(archive: Path, tmp_path: Path) -> None:
    table = HudiTable.open(str(unzip_table(archive, tmp_path)))
    whole = MetadataTable(table).files()
    assert whole and list(iter_files(MetadataTable(table))) == sorted(whole.items())
    some = sorted(whole)[:1] + ["no/such/partition"]
    assert dict(iter_files(MetadataTable(table), some)) == {some[0]: whole[some[0]], "no/such/partition": {}}
    assert dict(iter_listing(table, "metadata")) == table_listing(table, "metadata")[0].partitions
    assert dict(iter_listing(table, "storage")) == table_listing(table, "storage")[0].partitions


def test_top_folders_are_grouped_where_their_partitions_interleave() -> None:
    folders = ["/t/b", "/t/a", "/t/a-b", "/t/a.c", "/t/ab", "/t/a-b-c", "/t/c"]
    assert folder_groups(folders) == [["/t/a", "/t/a-b", "/t/a-b-c", "/t/a.c"], ["/t/ab"], ["/t/b"], ["/t/c"]]


# A hand-made metadata table (tests/mdt/helpers.py `HandMadeMdt`), merged by both readers: the
# whole-partition one (`MetadataTable.files`) and the stream (`iter_files`).
T1, T2, T3, T4 = "20260101000000000", "20260102000000000", "20260103000000000", "20260104000000000"
GROUP = "files-0000-0"


def listing(mdt: MetadataTable, partitions: list[str] | None = None) -> dict[str, dict[str, int]]:
    """What the stream lists (at most 20 partitions: a merge that loops shows as a wrong answer),
    checked against `MetadataTable.files` when the whole table is listed."""
    streamed = list(islice(iter_files(mdt, partitions), 20))
    if partitions is None:
        assert streamed == sorted(mdt.files().items())
    return dict(streamed)


def test_the_merge_is_base_file_then_log_blocks_in_log_order_with_deletes_dropping_what_came_before() -> None:
    """HoodieBackedTableMetadata.readFromBaseAndMergeWithLogRecords over
    HoodieMetadataLogRecordReader (HoodieMergedLogRecordScanner.processNextRecord /
    processNextDeletedRecord): a key's base-file record, then its log records in log order, each
    merged by HoodieMetadataPayload.preCombine (combineFileSystemMetadata: a tombstone removes a
    file, sizes take the larger); a DELETE block's key drops the record so far, and a record after
    it stands alone; a delete entry without a key deletes nothing. A partition listed without a
    files record (d) lists no files, wherever it sorts."""
    mdt = HandMadeMdt()
    mdt.base(GROUP, T1, [partition_list_record(["a", "b", "c", "d", "e"], deleted=False),
                         files_record("a", added={"f1": 10, "f2": 10}), files_record("b", added={"g1": 5}),
                         files_record("c", added={"h1": 1}), files_record("e", added={"k1": 3})])
    mdt.deltacommit(T2)
    mdt.log(GROUP, T2, 1, data_block(T2, [files_record("a", added={"f3": 20}, deleted=["f1"]),
                                          files_record("b", added={"g1": 7})]),
            delete_block(T2, ["c"]))
    mdt.deltacommit(T3)
    mdt.log(GROUP, T3, 1, data_block(T3, [files_record("a", added={"f2": 4}), files_record("c", added={"h2": 2})]),
            delete_block(T3, ["b", None]))
    assert listing(mdt.reader()) == {"a": {"f2": 10, "f3": 20}, "b": {}, "c": {"h2": 2}, "d": {}, "e": {"k1": 3}}


def test_a_partition_dropped_from_the_partition_list_lists_no_files_though_its_files_record_stays() -> None:
    """getAllFilesInPartitions lists the partitions of getAllPartitionPaths: a partition with a
    tombstone in `__all_partitions__` (0.x keeps its `files` record, its files tombstoned or
    not) lists no files, asked for alone or with others."""
    mdt = HandMadeMdt()
    mdt.deltacommit(T2)
    mdt.log(GROUP, T2, 1, data_block(T2, [partition_list_record(["a", "b", "c"], deleted=False),
                                          files_record("a", added={"x": 1}), files_record("b", added={"y": 2}),
                                          files_record("c", added={"z": 3})]))
    mdt.deltacommit(T3)
    mdt.log(GROUP, T3, 1, data_block(T3, [partition_list_record(["b"], deleted=True)]))
    assert listing(mdt.reader()) == {"a": {"x": 1}, "c": {"z": 3}}
    assert listing(mdt.reader(), ["b", "c"]) == {"b": {}, "c": {"z": 3}}


def test_nothing_is_listed_before_the_metadata_tables_first_deltacommit_completes() -> None:
    """HoodieBackedTableMetadata reads log blocks up to the MDT's last completed instant
    (SOLO_COMMIT_TIMESTAMP when it has none): while the MDT has no completed instant no block
    counts, even one of an instant the data table completed."""
    mdt = HandMadeMdt()
    mdt.data.commit(T2, {})
    mdt.deltacommit(T2, State.INFLIGHT)
    mdt.log(GROUP, T2, 1, data_block(T2, [partition_list_record(["a"], deleted=False),
                                          files_record("a", added={"x": 1})]))
    assert listing(mdt.reader()) == {}
    assert listing(mdt.reader(), ["a"]) == {"a": {}}
    # the slice of a block older than the MDT's timeline is committed (the timeline's history
    # starts later); with only a pending compaction on it, the MDT has no completed instant
    mdt = HandMadeMdt()
    mdt.data.commit(T1, {})
    mdt.meta.schedule_compaction(T3, [("files", GROUP, T1)])
    mdt.log(GROUP, T1, 1, data_block(T1, [partition_list_record(["a"], deleted=False),
                                          files_record("a", added={"x": 1})]))
    assert mdt.reader().merged_slices("files")
    assert listing(mdt.reader()) == {}


def test_only_the_files_partitions_file_groups_are_merged() -> None:
    """getPartitionLatestMergedFileSlices(metaClient, "files"): a record of another MDT partition
    whose key is a partition's name (a record-index entry for record key "a") is not merged."""
    mdt = HandMadeMdt("files,record_index")
    mdt.deltacommit(T2)
    mdt.log(GROUP, T2, 1, data_block(T2, [partition_list_record(["a"], deleted=False),
                                          files_record("a", added={"x": 1})]))
    mdt.log("record-index-0000-0", T2, 1, data_block(T2, [MetadataRecord("a", 5, None)]), partition="record_index")
    assert listing(mdt.reader()) == {"a": {"x": 1}}
    assert MetadataTable(HudiTable.load(mdt.storage, mdt.BASE)).records("record_index")["a"].type == 5


# A HoodieMetadataRecord schema without `filesystemMetadata`: a files record decoded with it has no files.
SCHEMA_WITHOUT_FILES = json.dumps({"type": "record", "name": "HoodieMetadataRecord",
                                   "namespace": "org.apache.hudi.avro.model",
                                   "fields": [{"name": "key", "type": "string"}, {"name": "type", "type": "int"}]})


def test_a_data_block_is_decoded_with_its_headers_schema_else_with_its_hfiles() -> None:
    """HoodieHFileDataBlock.deserializeRecords decodes a block's records with the header's
    SCHEMA (getSchemaFromHeader), whatever the HFile's file info says; a block without one is
    read with its HFile's (Hudi writes the same schema in both); a block or base HFile without
    records needs none (a base HFile's records use its file info's, HoodieAvroHFileReader)."""
    mdt = HandMadeMdt()
    mdt.base(GROUP, T1, [], content=hfile_of([], schema=None))
    mdt.deltacommit(T2)
    mdt.log(GROUP, T2, 1,
            data_block(T2, [partition_list_record(["a", "b"], deleted=False), files_record("a", added={"x": 1})],
                       info_schema=SCHEMA_WITHOUT_FILES),
            data_block(T2, [files_record("b", added={"y": 2})], header_schema=None),
            data_block(T2, [], header_schema=None, info_schema=None))
    assert listing(mdt.reader()) == {"a": {"x": 1}, "b": {"y": 2}}


@pytest.mark.parametrize("broken", ["base file", "base record", "log file", "data block", "data record",
                                    "delete block"])
def test_a_metadata_file_that_cannot_be_read_is_an_error_naming_it(broken: str) -> None:
    """A base HFile, a record, a log file, an HFILE_DATA or a DELETE block that cannot be read stops the
    listing with an error naming its file (nothing is listed from a partial merge)."""
    mdt = HandMadeMdt()
    listed = [partition_list_record(["a"], deleted=False), files_record("a", added={"x": 1})]
    if broken == "base file":
        path = mdt.base(GROUP, T1, [], content=b"not an hfile" * 20)
    elif broken == "base record":
        path = mdt.base(GROUP, T1, [], content=write_hfile([(b"__all_partitions__", b"\xff")],
                                                           [("schema", RECORD_SCHEMA.encode())], created_ms=0))
    elif broken == "log file":
        mdt.deltacommit(T2)
        path = mdt.log(GROUP, T2, 1, b"not a log file")
    else:
        mdt.deltacommit(T2)
        bad_record = write_hfile([(b"a", b"\xff")], [("schema", RECORD_SCHEMA.encode())], created_ms=0)
        block = {"data block": data_block(T2, [], content=b"not an hfile" * 20),
                 "data record": data_block(T2, [], content=bad_record),
                 "delete block": delete_block(T2, [], content=b"\x00\x00\x00\x03\x00\x00\x00\x09abc")}[broken]
        path = mdt.log(GROUP, T2, 1, data_block(T2, listed), block)
    name = re.escape(path)
    with pytest.raises(CleanlineError, match=name):
        mdt.reader().files()
    with pytest.raises(CleanlineError, match=name):
        list(iter_files(mdt.reader()))
