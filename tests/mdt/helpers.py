"""A hand-made metadata table for a table-version-6 fixture, shaped as Hudi 0.14/0.15 keeps one
when it is enabled from the table's creation (no v6 fixture has one):

- `.hoodie/metadata` a MERGE_ON_READ table of version 6, timeline layout 1, HFile base format;
- `files` partition initialised at `00000000000000010` (`createIndexInitTimestamp` of
  `SOLO_COMMIT_TIMESTAMP`): one file group `files-0000-0` whose slice starts with an empty
  DELETE-block log file (`initializeFileGroups`);
- then, for every completed write of the data table in timeline order, a deltacommit at the
  write's time with `convertMetadataToFilesPartitionRecords` of its commit metadata (the
  partitions it wrote to, and each file it wrote with its size), appended as the next log
  version of that slice (`timeline.mdt.writer.write_update`, which writes what 0.14/0.15 write);
- `hoodie.table.metadata.partitions=files` on the data table.
"""

from __future__ import annotations

import json
from pathlib import Path

from timeline import HudiTable, transition
from timeline.config import MDT_PARTITIONS, update_config
from timeline.files import log_file_name
from timeline.instant import Instant, State
from timeline.logformat import BlockType, HeaderKey, encode_block, encode_delete_records
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import commit_updates, write_update
from timeline.metadata.records import CommitMetadata
from timeline.spark.writer.create import create_table

INIT = "00000000000000010"
FILE_ID = "files-0000-0"

# HoodieMetadataRecord with the `files` partition's fields (Hudi's names).
RECORD_SCHEMA = json.dumps({
    "type": "record", "name": "HoodieMetadataRecord", "namespace": "org.apache.hudi.avro.model", "fields": [
        {"name": "key", "type": "string"}, {"name": "type", "type": "int"},
        {"name": "filesystemMetadata", "type": ["null", {"type": "map", "values": {
            "type": "record", "name": "HoodieMetadataFileInfo",
            "fields": [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}]}}]}]})


def add_v6_metadata_table(lake: Path) -> HudiTable:
    table = HudiTable.open(str(lake))
    assert table.config.version == 6
    storage, mdt_base = table.storage, table.path(".hoodie", "metadata")
    create_table(storage, mdt_base, {
        "hoodie.table.name": f"{table.config.name}_metadata", "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": "6", "hoodie.timeline.layout.version": "1", "hoodie.archivelog.folder": "archived",
        "hoodie.table.base.file.format": "HFILE", "hoodie.table.recordkey.fields": "key",
        "hoodie.populate.meta.fields": "false",
        "hoodie.table.keygenerator.class": "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload"})
    files = lake / ".hoodie" / "metadata" / "files"
    files.mkdir()
    (files / ".hoodie_partition_metadata").write_text(f"#partition metadata\ncommitTime={INIT}\npartitionDepth=1\n")
    mdt_table = HudiTable.open(mdt_base)
    init = Instant(INIT, "deltacommit", State.REQUESTED)
    transition.write_state(mdt_table, init, None)
    inflight = transition.start(mdt_table, init, None)
    header = {HeaderKey.INSTANT_TIME: INIT, HeaderKey.SCHEMA: RECORD_SCHEMA}
    (files / log_file_name(FILE_ID, INIT, 1, "0-0-0")).write_bytes(
        encode_block(BlockType.DELETE, header, encode_delete_records([])))
    transition.complete(mdt_table, inflight, None)
    update_config(storage, table.base, {MDT_PARTITIONS: "files"})
    table.reload()
    mdt = MetadataTable(table)
    for write in table.timeline.writes().completed():
        write_update(mdt, write.requested_time, commit_updates(table.read(write, CommitMetadata)))
    return table.reload()


# Runs the pending clean and kills its own process (SIGKILL, no clean-up) at one point:
#   "before-clean-completes": right before the data table's completed clean is written (the
#                             metadata table's deltacommit is complete);
#   "mid-mdt":                right after the metadata table's new log file is written (its
#                             deltacommit is still inflight).
KILLER = """
import os, signal, sys
from timeline import transition
from timeline.storage.arrow import LocalStorage
from timeline.clean.executor import run_pending_cleans
from timeline import HudiTable
point = sys.argv[2]
real_complete, real_write = transition.complete, LocalStorage.write
def complete(table, instant, content, **kw):
    if point == "before-clean-completes" and instant.action == "clean":
        os.kill(os.getpid(), signal.SIGKILL)
    return real_complete(table, instant, content, **kw)
def write(self, path, data):
    real_write(self, path, data)
    if point == "mid-mdt" and "/.hoodie/metadata/files/" in path and ".log." in path:
        os.kill(os.getpid(), signal.SIGKILL)
transition.complete, LocalStorage.write = complete, write
run_pending_cleans(HudiTable.open(sys.argv[1]))
"""
