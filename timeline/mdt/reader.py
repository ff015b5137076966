"""Reading the metadata table as Hudi's `HoodieBackedTableMetadata` does: the latest file slice of
each file group of an MDT partition (the MDT is a MERGE_ON_READ table with HFile base files,
read here with the library's own file-system view), its base HFile's records, then its log
files' HFILE_DATA and DELETE blocks in log order, each record merged onto the older one by
`HoodieMetadataPayload.preCombine` (`timeline.metadata.mdt_payload.combine`).

Blocks count only when written by a valid instant (`HoodieTableMetadataUtil.
getValidInstantTimestamps`): a completed MDT deltacommit (or compaction) whose time is not a
pending data-table instant, or a completed data-table instant, or the MDT's initialisation
(`00000000000000…`); blocks after the last completed MDT instant are skipped
(`BaseHoodieLogRecordReader.scanInternal`), and a table-version-6 ROLLBACK command block drops
the blocks of its target instant.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from timeline.exceptions import CleanlineError
from timeline.fsview import FileSlice
from timeline.hfile import read_hfile
from timeline.instant import State
from timeline.logformat import BlockType, CommandBlockType, HeaderKey, LogBlock, decode_delete_records, read_blocks
from timeline.metadata.mdt_payload import (
    PARTITION_LIST_KEY,
    MetadataRecord,
    combine,
    decode_record,
    partition_of,
)
from timeline.storage import Storage
from timeline.table import Table

METADATA_FOLDER = "metadata"
FILES = "files"
SCHEMA_INFO_KEY = b"schema"
INIT_PREFIX = "00000000000000"  # HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP
_ROLLBACK_COMMAND = str(int(CommandBlockType.ROLLBACK_PREVIOUS_BLOCK))
_V6_SUFFIXES = frozenset({"001", "002", "003", "004", "005", "006"})  # 0.14/0.15 OperationSuffix


class MetadataTableMissing(CleanlineError, LookupError):
    """The table has no metadata table (or not the partition asked for)."""


@dataclass(frozen=True, slots=True)
class MetadataTableState:
    """Whether the table keeps a metadata table, which of its partitions are available and
    being built, its last completed instant and its file groups per partition."""

    enabled: bool
    partitions: tuple[str, ...]                        # hoodie.table.metadata.partitions
    inflight: tuple[str, ...]                          # hoodie.table.metadata.partitions.inflight
    last_instant: str | None = None                    # the MDT's last completed instant
    file_groups: Mapping[str, int] = field(default_factory=dict)  # MDT partition -> file groups


class MetadataTable:
    """The metadata table of one data table (`.hoodie/metadata`), opened as a Hudi table."""

    def __init__(self, table: Table) -> None:
        if not table.config.metadata_table_enabled:
            raise MetadataTableMissing(f"{table.uri}: the metadata table is not enabled")
        self.table = table
        self.base = table.containment.meta_path(METADATA_FOLDER)
        self.mdt = Table.load(table.storage, self.base)
        # Every write to the metadata table is fenced by the data table's lock: the same
        # held-lock check, looked up when the write happens (timeline.transition.fence).
        self.mdt.publish_check = self.fence
        # Its new instant and completion times wait out the data table's clock skew while the
        # data table's lock is held (SkewAdjustingTimeGenerator, per write client in Hudi).
        self.mdt.lock_owner = table

    def fence(self) -> None:
        """The data table's held-lock check (`HudiTable.publish_check`), when a state change
        holds its lock: LockLost if the lease is gone or nearly over."""
        check = self.table.publish_check
        if check is not None:
            check()

    @property
    def storage(self) -> Storage:
        return self.table.storage

    def reload(self) -> MetadataTable:
        self.table.reload()
        self.mdt.reload()
        return self

    def state(self) -> MetadataTableState:
        last = self.mdt.timeline.completed().last()
        view = self.mdt.file_system_view()
        config = self.table.config
        partitions = (*config.metadata_partitions, *config.metadata_partitions_inflight)
        groups = {p: len(view.latest_slices(p)) for p in partitions}
        return MetadataTableState(True, config.metadata_partitions, config.metadata_partitions_inflight,
                                  None if last is None else last.requested_time, groups)

    # Instants

    def valid_instants(self) -> set[str]:
        """`HoodieTableMetadataUtil.getValidInstantTimestamps` (of Hudi 1.x; of 0.14/0.15 on
        table version 6, `_valid_instants_v6`): the data table's completed instants, the MDT's
        completed deltacommits whose instant is not pending on the data table (`isValidInstant`;
        its initialisation's "00000000000000…" never is), its completed rollbacks and restores.
        (Hudi 1.x also adds the instants the data table's rollbacks rolled back: their MDT blocks
        are gone, the MDT deltacommit rolled back with them.)"""
        if self.table.config.version < 8:
            return self._valid_instants_v6()
        data = self.table.timeline
        pending = {i.requested_time for i in data.pending()}
        valid = {i.requested_time for i in data.completed()}
        for instant in self.mdt.timeline.completed():
            if instant.action in ("rollback", "restore") or (
                    instant.action == "deltacommit" and instant.requested_time not in pending):
                valid.add(instant.requested_time)
        return valid

    def _valid_instants_v6(self) -> set[str]:
        """0.14/0.15 `getValidInstantTimestamps`: the data table's completed instants; the MDT's
        completed deltacommits with an operation suffix (`isValidInstant`: 17 digits + "001".."006",
        or an index-initialisation suffix from "010"); the instants the data table's completed
        rollbacks and restores rolled back (their blocks are dropped by rollback command blocks,
        not by this filter); the MDT's completed rollbacks and restores; its initialisation."""
        from timeline.metadata.records import RestoreMetadata, RollbackMetadata, RollbackPlan

        data = self.table.timeline
        valid = {i.requested_time for i in data.completed()}
        for instant in self.mdt.timeline.completed():
            t = instant.requested_time
            if instant.action == "deltacommit" and len(t) == 20 and (t[-3:] in _V6_SUFFIXES or t[-3:] >= "010"):
                valid.add(t)
        earliest = min(valid) if valid else INIT_PREFIX
        for instant in data.completed():
            if instant.action not in ("rollback", "restore") or instant.requested_time <= earliest:
                continue
            if instant.action == "restore":
                for entries in self.table.read(instant, RestoreMetadata).rolled_back.values():
                    for entry in entries:
                        valid.update(entry.commits_rollback)
                continue
            commits = self.table.read(instant, RollbackMetadata).commits_rollback
            if not commits:  # an empty completed rollback: its plan names the instant
                try:
                    plan = self.table.read(instant, RollbackPlan, State.REQUESTED)
                except CleanlineError:
                    continue
                commits = (plan.instant_to_rollback.time,) if plan.instant_to_rollback is not None else ()
            valid.update(commits)
        for instant in self.mdt.timeline.completed():
            if instant.action in ("rollback", "restore") or (
                    instant.action == "deltacommit" and instant.requested_time.startswith(INIT_PREFIX)):
                valid.add(instant.requested_time)
        return valid

    # Records

    def latest_slices(self, partition: str) -> list[FileSlice]:
        """The latest slice of every file group of an MDT partition, sorted by file id (the
        order records are routed by, `HoodieTableMetadataUtil.getPartitionLatestFileSlices`)."""
        return sorted(self.mdt.file_system_view().latest_slices(partition), key=lambda s: s.file_id)

    def merged_slices(self, partition: str) -> list[FileSlice]:
        """What a reader merges (`getPartitionLatestMergedFileSlices`): the latest slice of each
        file group, joined with the slice before it while a compaction that starts the latest
        one is pending (its base file is not written yet), sorted by file id."""
        merged = []
        for group in self.mdt.file_system_view().file_groups(partition):
            slices = group.slices
            if not slices:
                continue
            latest = slices[0]
            if (len(slices) > 1 and latest.base_file is None
                    and group.pending_compaction == latest.base_instant_time):
                before = slices[1]
                latest = before._replace(log_files=before.log_files + latest.log_files)
            merged.append(latest)
        return sorted(merged, key=lambda s: s.file_id)

    def records(self, partition: str) -> dict[str, MetadataRecord]:
        """Every live record of an MDT partition, merged across base file and log blocks."""
        valid = self.valid_instants()
        last = self.mdt.timeline.completed().last()
        latest = "" if last is None else last.requested_time
        merged: dict[str, MetadataRecord] = {}
        for file_slice in self.merged_slices(partition):
            merged.update(self._slice_records(file_slice, valid, latest))
        return merged

    def _slice_records(self, file_slice: FileSlice, valid: set[str], latest: str) -> dict[str, MetadataRecord]:
        folder = Storage.join(self.base, file_slice.partition)
        current: dict[str, MetadataRecord | None] = {}
        if file_slice.base_file is not None:
            path = Storage.join(folder, file_slice.base_file.name)
            hfile = read_hfile(self.storage.read(path), path=path)
            schema = hfile.file_info.get(SCHEMA_INFO_KEY, b"").decode()
            for row, value in hfile.cells:
                current[row.decode()] = decode_record(row, value, schema, path=path)
        for path, block in self._blocks(folder, file_slice, valid, latest):
            if block.block_type is BlockType.HFILE_DATA:
                hfile = read_hfile(block.content, path=path)
                # HoodieHFileDataBlock.deserializeRecords decodes with the header's SCHEMA
                # (getSchemaFromHeader); the HFile's own file info only where the header has none
                schema = block.header.get(HeaderKey.SCHEMA) or hfile.file_info.get(SCHEMA_INFO_KEY, b"").decode()
                for row, value in hfile.cells:
                    key = row.decode()
                    current[key] = combine(current.get(key), decode_record(row, value, schema, path=path))
            elif block.block_type is BlockType.DELETE:
                for record in decode_delete_records(block.content, path=path):
                    if record.record_key is not None:
                        current[record.record_key] = None
        return {key: record for key, record in current.items() if record is not None and not record.is_deleted}

    def _blocks(self, folder: str, file_slice: FileSlice, valid: set[str], latest: str
                ) -> Iterator[tuple[str, LogBlock]]:
        """The slice's data and delete blocks in log order that a Hudi reader would merge."""
        found: list[tuple[str, LogBlock]] = []
        for log in file_slice.log_files:  # the view orders them as LogFileComparator does
            path = Storage.join(folder, log.name)
            for block in read_blocks(self.storage.read(path), path=path):
                if block.block_type is BlockType.COMMAND:
                    if block.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == _ROLLBACK_COMMAND:
                        target = block.header.get(HeaderKey.TARGET_INSTANT_TIME)
                        found = [(p, b) for p, b in found if b.header.get(HeaderKey.INSTANT_TIME) != target]
                    continue
                if block.block_type not in (BlockType.HFILE_DATA, BlockType.DELETE):
                    continue
                instant = block.header.get(HeaderKey.INSTANT_TIME, "")
                if instant > latest or instant not in valid:
                    continue
                found.append((path, block))
        return iter(found)

    # The files partition

    def partition_paths(self) -> list[str]:
        """The data table's partitions as the MDT lists them (`__all_partitions__`)."""
        record = self.records(FILES).get(PARTITION_LIST_KEY)
        return sorted(partition_of(p) for p in (record.present() if record is not None else []))

    def files(self) -> dict[str, dict[str, int]]:
        """Data-table partition -> file name -> size, as the MDT lists them: the partitions of
        `__all_partitions__`, each with its `files` record's live entries."""
        records = self.records(FILES)
        listing = records.get(PARTITION_LIST_KEY)
        out: dict[str, dict[str, int]] = {}
        for identifier in listing.present() if listing is not None else []:
            record = records.get(identifier)
            entries = (record.files or {}) if record is not None else {}
            out[partition_of(identifier)] = {n: i.size for n, i in entries.items() if not i.deleted}
        return out


def metadata_table(table: Table) -> MetadataTable | None:
    """The table's metadata table, or None when it has none enabled."""
    return MetadataTable(table) if table.config.metadata_table_enabled else None


__all__ = ["FILES", "METADATA_FOLDER", "MetadataTable", "MetadataTableMissing", "MetadataTableState", "metadata_table"]
