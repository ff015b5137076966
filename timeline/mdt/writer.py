"""Writing the metadata table's update for an action, as `HoodieBackedTableMetadataWriter` does:
a deltacommit on the MDT timeline at the data-table instant's time, one new log file per touched
file group holding an HFILE_DATA block (the records, keys unique and sorted) and a DELETE block
(whole records removed), with the INSTANT_TIME and SCHEMA headers; completed **before** the
data-table instant is.

Table versions 8 and 9 (Hudi 1.x): the log file is named after the deltacommit
(`.<fileId>_<T>.log.1_<token>`), its HFile as Hudi 1.1+'s own writer writes it. Table version 6
(Hudi 0.14/0.15): the log file continues the file group's latest slice
(`.<fileId>_<slice base instant>.log.<next version>_<token>`, `HoodieAppendHandle` on a store
that cannot append rolls over to a new version), its HFile as HBase's writer writes it; the
0.x conversions of clean, rollback and restore metadata apply (`*_v6` below, from
`HoodieTableMetadataUtil` and `HoodieBackedTableMetadataWriter` of release 0.14/0.15).

Records go to file groups by `HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex` over the
partition's latest slices sorted by file id. A re-run finds what a crash left: an MDT
deltacommit already completed at T (the data-table instant still pending) is kept, as its
content depends only on the plan; a pending one is rolled back first (its log files and state
files removed, `rollbackFailedWrites`), then written again.

Clean (`HoodieTableMetadataUtil.convertMetadataToRecords` for a HoodieCleanMetadata): per
cleaned partition a `files` record with a tombstone for every planned file (`deletePathPatterns`,
whether or not its delete succeeded); a deleted partition's record is removed whole and the
partition gets a tombstone in `__all_partitions__`. With `column_stats`: a deleted stub for every
planned file and indexed column (the columns the partition holds stats for); with
`bloom_filters`: a deleted entry for every planned base file. `record_index`, `partition_stats`
and secondary indexes get nothing, as in Hudi.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files as files_pkg

from timeline import transition
from timeline.committed import is_data_file
from timeline.exceptions import CleanlineError
from timeline.files import is_base_file_name, log_file_name, parse_log_file
from timeline.fsview import FileSlice
from timeline.hfile import read_hfile, write_hfile
from timeline.instant import Instant, State
from timeline.logformat import BlockType, DeleteRecord, HeaderKey, encode_block, encode_delete_records, read_blocks
from timeline.mdt.reader import FILES, METADATA_FOLDER, SCHEMA_INFO_KEY, MetadataTable
from timeline.metadata.mdt_payload import (
    MetadataRecord,
    bloom_filter_key,
    bloom_filter_tombstone,
    column_stats_key,
    column_stats_tombstone,
    encode_record,
    files_record,
    partition_identifier,
    partition_list_record,
)
from timeline.metadata.records import CleanMetadata, CommitMetadata, RollbackPartitionMetadata
from timeline.metadata.written import by_partition, commit_metadata, runtime_stats, write_stat
from timeline.storage import Storage

DELTACOMMIT = "deltacommit"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
CLEAN_PARTITIONS = (FILES, COLUMN_STATS, BLOOM_FILTERS)  # the MDT partitions a clean writes to, when enabled
WRITE_TOKEN = "1-0-1"            # FSUtils' UNKNOWN_WRITE_TOKEN
OPERATION = "UPSERT_PREPPED"
# HoodieMetadataRecord as Hudi 1.0 writes it in a log block's SCHEMA header (read from a table
# Hudi 1.0.x wrote; see timeline/metadata/schemas/README.md).
RECORD_SCHEMA_V1 = (files_pkg("timeline.metadata") / "schemas" / "HoodieMetadataRecord-1.0.json").read_text("utf-8")


RESTORE_SUFFIX = "003"    # HoodieTableMetadataUtil.OperationSuffix.RESTORE (table version 6)
ROLLBACK_SUFFIX = "006"   # OperationSuffix.ROLLBACK: the MDT's own rollback of a rolled-back deltacommit (v6)


class MetadataTableUnsupported(CleanlineError):
    """A metadata table Cleanline cannot keep up to date (a table version before 6, or a state
    Hudi itself refuses to update)."""


def is_v6(mdt: MetadataTable) -> bool:
    """Whether the table is kept as Hudi 0.14/0.15 keeps it (table version 6)."""
    return mdt.table.config.version < 8


@dataclass(frozen=True)
class MdtUpdate:
    """The records one action writes to one MDT partition: upserts and whole-record deletes."""

    partition: str
    records: tuple[MetadataRecord, ...] = ()
    deletes: tuple[str, ...] = ()


def clean_updates(metadata: CleanMetadata, mdt: MetadataTable | None = None, instant_time: str = ""
                  ) -> list[MdtUpdate]:
    """`convertMetadataToRecords` for a HoodieCleanMetadata: the `files` partition's records, and
    with `mdt` those of its enabled `column_stats` and `bloom_filters` partitions. Table version
    6 (0.14/0.15): every cleaned partition gets a `files` record (a deleted partition too, with
    its files as tombstones, never a whole-record delete), and column-stats stubs only for
    parquet files."""
    v6 = mdt is not None and is_v6(mdt)
    updates = _files_updates_v6(metadata) if v6 else _files_updates(metadata)
    enabled = ({*mdt.table.config.metadata_partitions, *mdt.table.config.metadata_partitions_inflight}
               if mdt is not None else set())
    deleted = [(partition_identifier(p), name) for p, entry in sorted(metadata.partitions.items())
               for name in entry.delete_path_patterns]
    stats_of = [(p, n) for p, n in deleted if n.endswith(".parquet")] if v6 else deleted
    if mdt is not None and COLUMN_STATS in enabled and stats_of:
        updates += _column_stats_deletions(mdt, stats_of)
    if mdt is not None and BLOOM_FILTERS in enabled:
        entries = [bloom_filter_tombstone(bloom_filter_key(identifier, name), instant_time)
                   for identifier, name in deleted if is_base_file_name(name)]
        if entries:
            updates.append(MdtUpdate(BLOOM_FILTERS, tuple(entries)))
    return updates


def _files_updates(metadata: CleanMetadata) -> list[MdtUpdate]:
    """`convertMetadataToFilesPartitionRecords` for a HoodieCleanMetadata."""
    records: list[MetadataRecord] = []
    deletes: list[str] = []
    deleted_partitions: list[str] = []
    for partition, entry in sorted(metadata.partitions.items()):
        identifier = partition_identifier(partition)
        if entry.is_partition_deleted:
            deletes.append(identifier)
            deleted_partitions.append(identifier)
        elif entry.delete_path_patterns:
            records.append(files_record(identifier, deleted=entry.delete_path_patterns))
    if deleted_partitions:
        records.append(partition_list_record(deleted_partitions, deleted=True))
    return [MdtUpdate(FILES, tuple(records), tuple(deletes))] if records or deletes else []


def _files_updates_v6(metadata: CleanMetadata) -> list[MdtUpdate]:
    """0.14/0.15 `convertMetadataToFilesPartitionRecords` for a HoodieCleanMetadata: a record
    per partition of the clean with its deleted files, and the deleted partitions as
    tombstones of the partition list."""
    records = [files_record(partition_identifier(p), deleted=entry.delete_path_patterns)
               for p, entry in sorted(metadata.partitions.items())]
    gone = [partition_identifier(p) for p, entry in sorted(metadata.partitions.items()) if entry.is_partition_deleted]
    if gone:
        records.append(partition_list_record(gone, deleted=True))
    return [MdtUpdate(FILES, tuple(records))] if records else []


def commit_updates(metadata: CommitMetadata) -> list[MdtUpdate]:
    """`HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords` for a HoodieCommitMetadata
    (commit, deltacommit, replacecommit and compaction alike): the partition-list record naming
    every partition the write has stats for (`getPartitionsAdded`; for a DELETE_PARTITION
    replacecommit the replaced partitions as deleted, `getPartitionsDeleted`, Hudi 1.x), then per
    partition a `files` record of every written file with the largest size its stats report
    (sizes only grow within one transaction). A stat without a path (an empty partition) adds
    nothing; nothing is removed: replaced files leave the listing when a clean deletes them."""
    stats = metadata.write_stats
    listed = partition_list_record([partition_identifier(p) for p in stats], deleted=False)
    if metadata.operation_type == "DELETE_PARTITION" and metadata.replaced_file_ids:  # one record with both
        gone = partition_list_record([partition_identifier(p) for p in metadata.replaced_file_ids], deleted=True)
        listed = MetadataRecord(listed.key, listed.type, {**(listed.files or {}), **(gone.files or {})})
    records = [listed]
    for partition, entries in stats.items():
        sizes: dict[str, int] = {}
        for stat in entries:
            if stat.path and stat.file_size > 0:
                sizes[stat.file_name] = max(stat.file_size, sizes.get(stat.file_name, 0))
        records.append(files_record(partition_identifier(partition), added=sizes))
    return [MdtUpdate(FILES, tuple(records))]


def rollback_updates_v6(partitions: Mapping[str, RollbackPartitionMetadata]) -> list[MdtUpdate]:
    """0.14/0.15 `convertMetadataToRollbackRecords`: only the `files` partition, and only the
    log files a merge-on-read rollback leaves (its rollback-block files and the rolled-back
    write's own log files, `processRollbackMetadata`; the larger size when named twice). What
    the rolled-back write added is undone by rolling back its MDT deltacommit."""
    records = []
    for partition, entry in sorted(partitions.items()):
        if not entry.rollback_log_files:
            continue
        appended: dict[str, int] = {}
        for path, size in [*entry.rollback_log_files.items(), *entry.log_files_from_failed_commit.items()]:
            name = path.rstrip("/").rpartition("/")[2]
            appended[name] = max(size, appended.get(name, 0))
        records.append(files_record(partition_identifier(entry.partition or partition),
                                    added={n: size for n, size in appended.items() if size > 0}))
    return [MdtUpdate(FILES, tuple(records))] if records else []


def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def file_group_index(key: str, file_groups: int) -> int:
    """`HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex`: abs(abs(hash) % n), Java's
    remainder and Math.abs (which keeps Integer.MIN_VALUE)."""
    if file_groups == 1:
        return 0
    h = java_string_hash(key)
    h = h if h == -(1 << 31) else abs(h)
    remainder = abs(h) % file_groups
    remainder = -remainder if h < 0 else remainder
    return abs(remainder)


def check_supported(mdt: MetadataTable) -> None:
    if mdt.table.config.version < 6:
        raise MetadataTableUnsupported(
            f"{mdt.table.uri}: table version {mdt.table.config.version} predates the metadata table Cleanline keeps "
            "(versions 6, 8 and 9); drop the metadata table explicitly (cleanline mdt drop) or use a Hudi writer")


def check_writable(mdt: MetadataTable) -> None:
    """Refuse, before an action deletes anything, a metadata table its update could not be
    written to: a table version Cleanline does not keep, or an enabled partition a clean writes
    to without a file group or a record schema (a damaged MDT: drop it explicitly, Hudi
    rebuilds it)."""
    check_supported(mdt)
    enabled = {*mdt.table.config.metadata_partitions, *mdt.table.config.metadata_partitions_inflight}
    for partition in (p for p in CLEAN_PARTITIONS if p in enabled):
        if not mdt.latest_slices(partition):
            raise MetadataTableUnsupported(
                f"{mdt.base}/{partition}: the metadata table partition has no file group; nothing was changed. Drop "
                "the metadata table explicitly (cleanline mdt drop; Hudi writers rebuild it)")
        _schema_of(mdt, partition)


def _schema_of(mdt: MetadataTable, partition: str) -> str:
    """The record schema the partition's latest writes carry (their SCHEMA header, else the base
    file's), so that Cleanline writes what the table's own Hudi version wrote."""
    for file_slice in mdt.merged_slices(partition):
        folder = Storage.join(mdt.base, partition)
        for log in reversed(file_slice.log_files):
            path = Storage.join(folder, log.name)
            for block in reversed(read_blocks(mdt.storage.read(path), path=path)):
                schema = block.header.get(HeaderKey.SCHEMA)
                if schema:
                    return schema
        if file_slice.base_file is not None:
            path = Storage.join(folder, file_slice.base_file.name)
            found = read_hfile(mdt.storage.read(path), path=path).file_info.get(SCHEMA_INFO_KEY)
            if found:
                return found.decode()
    if not is_v6(mdt) and partition == FILES and mdt.latest_slices(partition):
        return RECORD_SCHEMA_V1  # a `files` partition only initialised: Hudi 1.x writes with its own schema
    raise MetadataTableUnsupported(f"{mdt.base}/{partition}: no record schema found in the metadata table; drop it "
                                   "explicitly (cleanline mdt drop; Hudi writers rebuild it)")


def roll_back_pending(mdt: MetadataTable, instant_time: str) -> None:
    """Remove what a pending MDT deltacommit at `instant_time` wrote (its log files in every
    MDT partition, then its state files): `rollbackFailedWrites` for a write that never
    completed, whose files no reader merges. Its log files: on table versions 8 and 9 those
    named after it; on version 6 (named after their slice) those whose every block it wrote,
    as Cleanline writes one new log file per file group and deltacommit. The partition names
    come from `hoodie.properties`: each folder must resolve inside `.hoodie/metadata`
    (`Containment.meta_path`), or nothing is deleted."""
    storage = mdt.storage
    v6 = is_v6(mdt)
    transition.fence(mdt.mdt)  # removing MDT files is a change too: only while the lock is ours
    partitions = (*mdt.table.config.metadata_partitions, *mdt.table.config.metadata_partitions_inflight)
    folders = [mdt.table.containment.meta_path(METADATA_FOLDER, p) for p in partitions]  # all checked first
    for folder in folders:
        if not storage.exists(folder):
            continue
        for status in storage.list(folder):
            if ".log." not in status.name:
                continue
            try:
                log = parse_log_file(status.name)
            except ValueError:
                continue
            if v6:
                blocks = read_blocks(storage.read(status.path), path=status.path)
                if blocks and all(b.header.get(HeaderKey.INSTANT_TIME) == instant_time for b in blocks):
                    storage.delete(status.path)
            elif log.instant_time == instant_time:
                storage.delete(status.path)
    for state in (State.INFLIGHT, State.REQUESTED):
        path = transition.state_path(mdt.mdt, Instant(instant_time, DELTACOMMIT, state))
        if storage.exists(path):
            storage.delete(path)
    mdt.mdt.reload()


def _resume(mdt: MetadataTable, instant_time: str) -> Instant | None:
    """Before an MDT deltacommit at `instant_time`: the completed one a crashed run left (kept,
    returned), or None after a pending one it left is rolled back."""
    check_supported(mdt)
    mdt.mdt.reload()
    existing = [i for i in mdt.mdt.timeline if i.requested_time == instant_time and i.action == DELTACOMMIT]
    if any(i.state is State.COMPLETED for i in existing):
        return next(i for i in existing if i.state is State.COMPLETED)
    if existing:
        roll_back_pending(mdt, instant_time)
    return None


def write_update(mdt: MetadataTable, instant_time: str, updates: Sequence[MdtUpdate]) -> Instant | None:
    """Publish one MDT deltacommit at `instant_time` holding `updates` (only partitions the
    table lists as available or inflight), before the caller completes the data-table instant.
    Returns the completed MDT instant (the one found when a crashed run completed it)."""
    done = _resume(mdt, instant_time)
    if done is not None:
        return done
    table = mdt.mdt
    allowed = {*mdt.table.config.metadata_partitions, *mdt.table.config.metadata_partitions_inflight}
    updates = [u for u in updates if u.partition in allowed]
    requested = Instant(instant_time, DELTACOMMIT, State.REQUESTED)
    transition.write_state(table, requested, None)
    planned = [(u, _route(mdt, u)) for u in updates]
    profile = [write_stat(file_id=file_id, path=None, prev_commit=instant_time, partition_path=u.partition)
               for u, groups in planned for file_id in groups]
    inflight = transition.start(table, requested, commit_metadata(by_partition(profile), OPERATION, None))
    schemas = {p: _schema_of(mdt, p) for p in {u.partition for u in updates} | ({FILES} & allowed)}
    stats = []
    for update, groups in planned:
        slices = {s.file_id: s for s in mdt.latest_slices(update.partition)}
        for file_id, (records, deletes) in sorted(groups.items()):
            stats.append(_write_log(mdt, update.partition, slices[file_id], instant_time, schemas[update.partition],
                                    records, deletes))
    record_schema = schemas.get(FILES)
    return transition.complete(table, inflight, commit_metadata(by_partition(stats), OPERATION, record_schema))


def _route(mdt: MetadataTable, update: MdtUpdate) -> dict[str, tuple[list[MetadataRecord], list[str]]]:
    """file id -> (records, deleted keys) of one partition's update."""
    slices = mdt.latest_slices(update.partition)
    if not slices:
        raise CleanlineError(f"{mdt.base}/{update.partition}: the metadata table partition has no file group")
    groups: dict[str, tuple[list[MetadataRecord], list[str]]] = {}
    for record in update.records:
        file_id = slices[file_group_index(record.key, len(slices))].file_id
        groups.setdefault(file_id, ([], []))[0].append(record)
    for key in update.deletes:
        file_id = slices[file_group_index(key, len(slices))].file_id
        groups.setdefault(file_id, ([], []))[1].append(key)
    return groups


def _write_log(mdt: MetadataTable, partition: str, file_slice: FileSlice, instant_time: str, schema: str,
               records: list[MetadataRecord], deletes: list[str]) -> dict[str, object]:
    """One new log file of a file group: an HFILE_DATA block and a DELETE block."""
    keys = [r.key for r in records]
    if len(set(keys)) != len(keys) or len(set(deletes)) != len(deletes):
        raise ValueError(f"{partition}/{file_slice.file_id}: one key twice in one block (Hudi refuses it too)")
    v6 = is_v6(mdt)
    header = {HeaderKey.SCHEMA: schema, HeaderKey.INSTANT_TIME: instant_time}
    blocks = b""
    if records:
        cells = sorted((r.key.encode(), encode_record(r, schema)) for r in records)
        hfile = write_hfile(cells, [("schema", schema.encode())], created_ms=int(time.time() * 1000), hbase=v6)
        blocks += encode_block(BlockType.HFILE_DATA, header, hfile)
    if deletes:
        blocks += encode_block(BlockType.DELETE, header, encode_delete_records(
            [DeleteRecord(key, partition) for key in sorted(deletes)]))
    folder = Storage.join(mdt.base, partition)
    file_id = file_slice.file_id
    named_after = file_slice.base_instant_time if v6 else instant_time
    prefix = f".{file_id}_{named_after}.log."
    versions = [parse_log_file(s.name).version for s in mdt.storage.list(folder) if s.name.startswith(prefix)]
    version = max(versions, default=0) + 1  # HoodieLogFormatWriter rolls over rather than append
    name = log_file_name(file_id, named_after, version, WRITE_TOKEN)
    transition.fence(mdt.mdt)  # the data table's lock, checked before every MDT log file
    mdt.storage.write(Storage.join(folder, name), blocks)
    base_file = file_slice.base_file.name if v6 and file_slice.base_file is not None else ""
    return write_stat(file_id=file_id, path=f"{partition}/{name}", prev_commit=named_after,
                      num_writes=len(records) + len(deletes), num_deletes=len(deletes),
                      num_update_writes=len(records), total_write_bytes=len(blocks), partition_path=partition,
                      file_size_in_bytes=len(blocks), log_version=version, log_offset=0, base_file=base_file,
                      log_files=[name], runtime_stats=runtime_stats())


def check_metadata_rollback(mdt: MetadataTable, target_time: str) -> None:
    """`HoodieBackedTableMetadataWriter.validateRollback`, checked before the data table's
    rollback deletes anything: a deltacommit an MDT compaction has already folded into base files
    cannot be rolled back alone ("should be handled using restore")."""
    table = mdt.mdt.reload()
    target = next((i for i in table.timeline.completed() if i.requested_time == target_time
                   and i.action == DELTACOMMIT), None)
    if is_v6(mdt):  # 0.14/0.15 write records at the rollback's time, and check it whether or not the MDT holds it
        check_writable(mdt)
        target = target or Instant(target_time, DELTACOMMIT, State.COMPLETED)
    if target is not None:
        _check_not_compacted(mdt, target)


def _check_not_compacted(mdt: MetadataTable, target: Instant) -> None:
    compactions = [i for i in mdt.mdt.timeline.completed() if i.action == "commit"]
    if not compactions:
        return
    latest = compactions[-1].requested_time
    if is_v6(mdt):  # 0.14/0.15: the requested times compared (compaction times carry the "001" suffix)
        compacted = target.requested_time <= latest
    else:
        compacted = len(target.requested_time) == len(latest) and (target.completion_time or "") <= latest
    if compacted:
        raise CleanlineError(
            f"{mdt.table.uri}: the metadata table compacted {target.requested_time} at {latest}; rolling it back "
            "alone would corrupt the metadata table (Hudi refuses it too: restore instead)")


def restore_deletes_metadata_table(mdt: MetadataTable, savepoint_time: str) -> str | None:
    """Why Apache Hudi deletes the metadata table before restoring to `savepoint_time`
    (`BaseHoodieWriteClient.restoreToSavepoint`), or None when it restores it with the table: the
    savepoint is not after the MDT's oldest completed compaction, or it lies before the MDT's
    commits timeline starts (its instants before it were archived)."""
    timeline = mdt.mdt.reload().timeline
    compactions = [i for i in timeline.completed() if i.action == "commit"]
    if compactions and savepoint_time <= compactions[0].requested_time:
        return (f"the savepoint {savepoint_time} is not after the metadata table's oldest compaction "
                f"{compactions[0].requested_time}")
    writes = [i for i in timeline if i.action in ("commit", "deltacommit", "replacecommit")]
    if writes and savepoint_time < writes[0].requested_time:
        return f"the metadata table's timeline starts after the savepoint {savepoint_time}"
    return None


# MetadataPartitionType.shouldDeletePartitionOnRestore is false only for these.
KEPT_ON_RESTORE = frozenset({FILES, "record_index", COLUMN_STATS})


def dropped_on_restore(mdt: MetadataTable) -> list[str]:
    """The MDT partitions a restore deletes (`dropIndexOnRestore`, Hudi 1.x); none on table
    version 6, whose restore (0.14/0.15) rolls every partition back with the MDT."""
    if is_v6(mdt):
        return []
    config = mdt.table.config
    return [p for p in (*config.metadata_partitions, *config.metadata_partitions_inflight) if p not in KEPT_ON_RESTORE]


def check_restorable(mdt: MetadataTable, savepoint_time: str) -> None:
    """`HoodieBackedTableMetadataWriter.update(HoodieRestoreMetadata)`'s preconditions: the MDT
    holds a completed instant at the savepoint's time (its restore point), and every `files`
    file group has a slice starting at or before it."""
    table = mdt.mdt.reload()
    point = table.timeline.completed().find(savepoint_time)
    if point is None:
        raise MetadataTableUnsupported(
            f"{mdt.table.uri}: the metadata table has no completed instant at the savepoint {savepoint_time}, so it "
            "cannot be restored with the table (Hudi fails the same way); drop it explicitly first (cleanline mdt "
            "drop)")
    for group in table.file_system_view().all_file_groups(FILES):
        if not any(s.base_instant_time <= savepoint_time for s in group.slices):
            raise MetadataTableUnsupported(
                f"{mdt.table.uri}: metadata file group {group.file_id} starts after the savepoint {savepoint_time}; "
                "Hudi cannot restore the metadata table either (delete it and retry): cleanline mdt drop")


def sync_updates(mdt: MetadataTable, *, admit: Callable[[str], bool] | None = None) -> list[MdtUpdate]:
    """What makes the `files` partition list what storage holds, and the column-stats
    deletions of files no longer there. With `admit`, a file the metadata table does not list is
    added only if `admit(name)` (the doctor's drift repair adds only what commit metadata names,
    `timeline/committed.py`)."""
    listed = mdt.files()
    stored = {p: {s.name: s.size for s in files if is_data_file(s.name)}
              for p, files in mdt.table.list_partitions().partitions.items()
              if p in listed}  # fetchOutofSyncFilesRecordsFromMetadataTable: partitions the MDT lists
    records: list[MetadataRecord] = []
    gone_partitions: list[str] = []
    deleted: list[tuple[str, str]] = []
    for partition in sorted(set(listed) | set(stored)):
        identifier = partition_identifier(partition)
        indexed, present = listed.get(partition, {}), stored.get(partition)
        if present is None:
            gone_partitions.append(identifier)
            removed = sorted(indexed)
            added: dict[str, int] = {}
        else:
            removed = sorted(n for n in indexed if n not in present)
            added = {n: size for n, size in present.items() if size > 0 and indexed.get(n) != size
                     and (admit is None or n in indexed or admit(n))}
        deleted += [(identifier, name) for name in removed]
        if removed or added:
            records.append(files_record(identifier, added=added, deleted=removed))
    if gone_partitions:
        records.append(partition_list_record(gone_partitions, deleted=True))
    updates = [MdtUpdate(FILES, tuple(records))] if records else []
    if COLUMN_STATS in mdt.table.config.metadata_partitions and deleted and not is_v6(mdt):  # 0.x: files only
        updates += _column_stats_deletions(mdt, deleted)
    return updates


def _column_stats_deletions(mdt: MetadataTable, deleted: list[tuple[str, str]]) -> list[MdtUpdate]:
    columns = sorted({stats[1] for record in mdt.records(COLUMN_STATS).values()
                      if (stats := record.column_stats) is not None})
    value_type = mdt.table.config.version >= 9  # HoodieIndexVersion V2 from table version 9
    stubs = [column_stats_tombstone(column_stats_key(column, identifier, name), name, column, value_type=value_type)
             for identifier, name in deleted for column in columns]
    return [MdtUpdate(COLUMN_STATS, tuple(stubs))] if stubs else []


def update_for_commit(mdt: MetadataTable, instant_time: str, metadata: CommitMetadata) -> Instant | None:
    return write_update(mdt, instant_time, commit_updates(metadata))


def update_for_clean(mdt: MetadataTable, instant_time: str, metadata: CleanMetadata) -> Instant | None:
    return write_update(mdt, instant_time, clean_updates(metadata, mdt, instant_time))


__all__ = ["CLEAN_PARTITIONS", "KEPT_ON_RESTORE", "RECORD_SCHEMA_V1", "MdtUpdate", "MetadataTableUnsupported",
           "check_metadata_rollback", "check_restorable", "check_writable", "clean_updates", "commit_updates",
           "dropped_on_restore", "file_group_index", "is_v6", "restore_deletes_metadata_table", "roll_back_pending",
           "rollback_updates_v6", "sync_updates", "update_for_clean", "update_for_commit", "write_update"]


def write_routed_update(mdt: MetadataTable, instant_time: str, partition: str,
                        groups: Mapping[str, tuple[Sequence[MetadataRecord], Sequence[str]]]) -> Instant | None:
    """`write_update` of one partition with its records already routed: file id -> (records,
    deleted keys). For an index rebuild (`timeline/doctor/index_repair.py`), which sends each
    record to the file group that holds its key, and a secondary index's records (Hudi 1.1 routes
    them by their secondary value, `SecondaryIndexRecordGenerationUtils`, not by
    `mapRecordKeyToFileGroupIndex` of the whole key). A crashed run's pending deltacommit at
    `instant_time` is rolled back first; a completed one is kept."""
    done = _resume(mdt, instant_time)
    if done is not None:
        return done
    table = mdt.mdt
    allowed = {*mdt.table.config.metadata_partitions, *mdt.table.config.metadata_partitions_inflight}
    if partition not in allowed:
        raise MetadataTableUnsupported(f"{mdt.base}/{partition}: not a partition hoodie.properties lists")
    slices = {s.file_id: s for s in mdt.latest_slices(partition)}
    unknown = sorted(set(groups) - set(slices))
    if unknown:
        raise CleanlineError(f"{mdt.base}/{partition}: no file group {unknown[0]}")
    requested = Instant(instant_time, DELTACOMMIT, State.REQUESTED)
    transition.write_state(table, requested, None)
    profile = [write_stat(file_id=file_id, path=None, prev_commit=instant_time, partition_path=partition)
               for file_id in sorted(groups)]
    inflight = transition.start(table, requested, commit_metadata(by_partition(profile), OPERATION, None))
    schema = _schema_of(mdt, partition)
    stats = [_write_log(mdt, partition, slices[file_id], instant_time, schema, list(records), list(deletes))
             for file_id, (records, deletes) in sorted(groups.items()) if records or deletes]
    record_schema = _schema_of(mdt, FILES) if FILES in allowed else None
    return transition.complete(table, inflight, commit_metadata(by_partition(stats), OPERATION, record_schema))
