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

`HandMadeMdt`: a metadata table (table version 8, or 6) in memory written block by block, for the
reader's merge rules: base HFiles, log files of chosen blocks (`data_block`, `delete_block`, or
any bytes) and MDT instants in chosen states.
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
from timeline.metadata.mdt_payload import MetadataRecord
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


class HandMadeMdt:
    """A data table (version 8 unless told, in memory) and a metadata table made block by block: what a test
    of the reader's merge needs and no writer makes on demand. The `files` partition (and any
    other MDT partition named) holds the log files and base HFiles a test writes, of the file
    groups it names; MDT instants are completed (or left pending) by the test. Records are
    written with `RECORD_SCHEMA` (the `files` partition's fields of HoodieMetadataRecord)."""

    BASE = "/t"

    def __init__(self, partitions: str = "files", *, version: int = 8) -> None:
        from tests.helpers import Lake
        from timeline.storage import MemoryStorage

        storage = MemoryStorage()
        self.data = Lake(storage, self.BASE, version=version, extra_props={MDT_PARTITIONS: partitions})
        self.meta = Lake(storage, f"{self.BASE}/.hoodie/metadata", version=version, table_type="MERGE_ON_READ",
                         partitioned=False, extra_props={"hoodie.table.base.file.format": "HFILE",
                                                         "hoodie.table.recordkey.fields": "key"})
        self.storage = storage

    def folder(self, partition: str = "files") -> str:
        folder = f"{self.meta.base}/{partition}"
        marker = f"{folder}/.hoodie_partition_metadata"
        if not self.storage.exists(marker):
            self.storage.write(marker, b"#partition metadata\ncommitTime=0\npartitionDepth=1\n")
        return folder

    def deltacommit(self, time: str, state: State = State.COMPLETED) -> None:
        self.meta.commit(time, {}, action="deltacommit", state=state)

    def log(self, file_id: str, instant: str, version: int, *blocks: bytes, partition: str = "files") -> str:
        path = f"{self.folder(partition)}/{log_file_name(file_id, instant, version, '0-1-0')}"
        self.storage.write(path, b"".join(blocks))
        return path

    def base(self, file_id: str, instant: str, records: list[MetadataRecord], *, partition: str = "files",
             content: bytes | None = None) -> str:
        """A base HFile written by a completed compaction (a `commit` on the MDT) at `instant`."""
        from timeline.files import base_file_name

        path = f"{self.folder(partition)}/{base_file_name(file_id, '0-1-0', instant, '.hfile')}"
        self.storage.write(path, hfile_of(records) if content is None else content)
        self.meta.complete_compaction(instant, {})
        return path

    def reader(self) -> MetadataTable:
        return MetadataTable(HudiTable.load(self.storage, self.BASE))


def hfile_of(records: list[MetadataRecord], schema: str | None = RECORD_SCHEMA) -> bytes:
    """An HFile of records (keys sorted), `schema` in its file info (none if None)."""
    from timeline.hfile import write_hfile
    from timeline.metadata.mdt_payload import encode_record

    cells = sorted((r.key.encode(), encode_record(r, RECORD_SCHEMA)) for r in records)
    info = [] if schema is None else [("schema", schema.encode())]
    return write_hfile(cells, info, created_ms=0)


def data_block(instant: str, records: list[MetadataRecord], *, header_schema: str | None = RECORD_SCHEMA,
               info_schema: str | None = RECORD_SCHEMA, content: bytes | None = None) -> bytes:
    """An HFILE_DATA block at `instant`: the schema in its header and its HFile's file info (as
    HoodieHFileDataBlock writes both), either left out when None."""
    header = {HeaderKey.INSTANT_TIME: instant}
    if header_schema is not None:
        header[HeaderKey.SCHEMA] = header_schema
    return encode_block(BlockType.HFILE_DATA, header, hfile_of(records, info_schema) if content is None else content)


def delete_block(instant: str, keys: list[str | None], content: bytes | None = None) -> bytes:
    """A DELETE block at `instant` removing whole records (a None key is a record without one)."""
    from timeline.logformat import DeleteRecord

    body = encode_delete_records([DeleteRecord(k, "files") for k in keys]) if content is None else content
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: RECORD_SCHEMA}, body)


def compact_metadata_table_after(path: Path, table: HudiTable, requested_time: str) -> None:
    """A compaction of the metadata table of the fixture at `path` (a copy of the first one that
    table holds, 20260307162449278 in cow/v9_txns_simple_meta), completed after the metadata table's deltacommit of
    `requested_time`: that write is then compacted into the metadata table's base files."""
    mdt_folder = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    done = next(i for i in MetadataTable(table).mdt.timeline.completed() if i.requested_time == requested_time)
    later = f"{int(done.completion_time or requested_time) + 1000:017d}"
    source = min(mdt_folder.glob("*.compaction.requested")).name.split(".")[0]  # the fixture's compaction
    (mdt_folder / f"{later}.compaction.requested").write_bytes(
        (mdt_folder / f"{source}.compaction.requested").read_bytes())
    (mdt_folder / f"{later}.compaction.inflight").write_bytes(b"")
    (mdt_folder / f"{later}_{int(later) + 5:017d}.commit").write_bytes(
        next(mdt_folder.glob(f"{source}_*.commit")).read_bytes())
