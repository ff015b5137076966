"""The metadata table a write keeps, as Hudi's write client does (`HoodieBackedTableMetadataWriter`),
limited to its `files` partition (the listing). No PySpark here.

- **Created with the table** when the write's options set `hoodie.metadata.enable=true`
  (Hudi's writers enable it by default; this writer only when asked), on table version 8, as
  Hudi 1.0 initialises it for a table with no completed write (`initializeFromFilesystem` ->
  `initializeFileGroups`): `.hoodie/metadata` a MERGE_ON_READ table of the same version with
  HFile base format and Hudi's metadata key generator; one deltacommit at
  `00000000000000000` that writes the file group `files-0000-0` as a log file holding one
  empty DELETE block (INSTANT_TIME header only, as Hudi 1.0's is); then `files` listed in
  `hoodie.table.metadata.partitions`. Hudi 1.0 also bulk-inserts the initial records into a base
  HFile at that instant; on a table with no files those records are only the empty partition
  list, which the first commit's record supersedes, so the log-only slice reads the same.
  Version-6 tables' metadata tables are created by Hudi writers (kept up to date here once they
  exist).
- **Updated by every commit** (writes and compactions) before the data-table instant completes
  and under the same lock (`BaseHoodieWriteClient.commit` -> `writeTableMetadata`): one MDT
  deltacommit at the instant's time with `convertMetadataToFilesPartitionRecords`
  (`timeline.mdt.writer.commit_updates`), fenced like every MDT write.
- **Refused** where the table's metadata table has partitions besides `files` (column stats,
  bloom filters, record index, ...): keeping those needs a Hudi writer (MetadataTableEnabledError).
  The metadata table's own compaction and cleaning are left to Hudi writers: its log files grow
  by one per commit until one runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from timeline import properties, transition
from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, update_config
from timeline.files import log_file_name
from timeline.instant import Instant, State
from timeline.logformat import BlockType, HeaderKey, encode_block, encode_delete_records
from timeline.mdt import MetadataTableEnabledError
from timeline.mdt.reader import FILES, METADATA_FOLDER, MetadataTable
from timeline.mdt.writer import DELTACOMMIT, update_for_commit
from timeline.metadata.records import CommitMetadata
from timeline.metadata.written import by_partition, commit_metadata, partition_metafile, write_stat
from timeline.spark.writer.create import create_table, java_date
from timeline.spark.writer.model import WriteError
from timeline.storage import Storage
from timeline.table import Table

ENABLE = "hoodie.metadata.enable"
INIT_TIME = "00000000000000000"    # Hudi 1.0: the `files` partition's initialisation instant
FILE_ID = "files-0000-0"           # HoodieTableMetadataUtil.getFileIDForFileGroup(FILES, 0)
INIT_TOKEN = "0-0-0"               # the write token of the initial log file, as Hudi 1.0 names it
METADATA_KEY_GENERATOR = "HOODIE_TABLE_METADATA"
METADATA_PAYLOAD = "org.apache.hudi.metadata.HoodieMetadataPayload"


def wanted(options: Mapping[str, str] | None) -> bool:
    """Whether the write's options ask for a metadata table (`hoodie.metadata.enable`)."""
    return str((options or {}).get(ENABLE, "false")).strip().lower() == "true"


def check_keepable(table: Table) -> None:
    """MetadataTableEnabledError unless the writer can keep the table's metadata table: none, or
    one whose only partition (available or inflight) is `files`."""
    config = table.config
    partitions = {*config.metadata_partitions, *config.metadata_partitions_inflight}
    others = sorted(partitions - {FILES})
    if others:
        raise MetadataTableEnabledError(
            f"{table.uri}: the metadata table has partitions this writer does not keep ({', '.join(others)}); "
            "writing here would leave them stale. Use a Hudi writer, or drop the metadata table explicitly "
            "(cleanline mdt drop; Hudi writers rebuild it).")


def metadata_properties(table: Table) -> dict[str, str]:
    """The metadata table's `hoodie.properties`, as Hudi 1.0 writes them for a table of version 8."""
    version = str(table.config.version)
    return {
        "hoodie.table.name": f"{table.config.name}_metadata", "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": version, "hoodie.table.initial.version": version,
        "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
        "hoodie.timeline.history.path": "history", "hoodie.archivelog.folder": "history",
        "hoodie.table.base.file.format": "HFILE", "hoodie.table.recordkey.fields": "key",
        "hoodie.populate.meta.fields": "false", "hoodie.table.keygenerator.type": METADATA_KEY_GENERATOR,
        "hoodie.compaction.payload.class": METADATA_PAYLOAD, "hoodie.record.merge.mode": "CUSTOM",
        "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        "hoodie.datasource.write.drop.partition.columns": "false",
    }


def create_metadata_table(table: Table) -> None:
    """Initialise the `files` partition of a new table's metadata table (see the module's
    docstring), under the lock of the table's first write. WriteError on a table that already
    has a completed write or a table version before 8; nothing is changed then."""
    if table.config.version < 8:
        raise WriteError(f"{table.uri}: this writer creates metadata tables on table version 8 only; a version-6 "
                         "table's metadata table is created by a Hudi writer")
    if table.config.metadata_table_enabled:
        return
    if list(table.timeline.writes().completed()):
        raise WriteError(f"{table.uri}: the table already has completed writes; its metadata table is initialised "
                         "from storage by a Hudi writer")
    storage = table.storage
    mdt_base = table.containment.meta_path(METADATA_FOLDER)
    transition.fence(table)
    if not storage.exists(Storage.join(mdt_base, ".hoodie", "hoodie.properties")):
        create_table(storage, mdt_base, metadata_properties(table))
    mdt_table = Table.load(storage, mdt_base)
    folder = Storage.join(mdt_base, FILES)
    metafile = properties.dumps(partition_metafile(INIT_TIME, 1),
                                comments=["partition metadata", java_date(datetime.now(UTC))])
    requested = Instant(INIT_TIME, DELTACOMMIT, State.REQUESTED)
    for stale in (requested, requested.at(State.INFLIGHT)):  # a crashed creation starts again
        path = transition.state_path(mdt_table, stale)
        if storage.exists(path):
            storage.delete(path)
    transition.write_state(mdt_table, requested, None)
    inflight = transition.start(mdt_table, requested, None)
    transition.fence(table)
    storage.write(Storage.join(folder, ".hoodie_partition_metadata"), metafile.encode("ascii"))
    name = log_file_name(FILE_ID, INIT_TIME, 1, INIT_TOKEN)
    block = encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: INIT_TIME}, encode_delete_records([]))
    transition.fence(table)
    storage.write(Storage.join(folder, name), block)
    stat = write_stat(file_id=FILE_ID, path=f"{FILES}/{name}", prev_commit=INIT_TIME, partition_path=FILES,
                      total_write_bytes=len(block), file_size_in_bytes=len(block), log_version=1, log_offset=0,
                      base_file="", log_files=[name])
    transition.complete(mdt_table, inflight, commit_metadata(by_partition([stat]), "UPSERT_PREPPED", None))
    transition.fence(table)
    update_config(storage, table.base, {MDT_PARTITIONS: FILES, MDT_PARTITIONS_INFLIGHT: ""})
    table.reload()


def update_for_write(table: Table, instant_time: str, content: Mapping[str, object]) -> None:
    """Before a write or compaction at `instant_time` completes with `content` (its commit
    metadata): its records in the metadata table, when the table has one."""
    if not table.config.metadata_table_enabled:
        return
    check_keepable(table)
    update_for_commit(MetadataTable(table), instant_time, CommitMetadata.from_raw(dict(content)))
