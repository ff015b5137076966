"""`cleanline mdt validate`: the metadata table's file listing against the storage listing, per
partition (Hudi CLI's `metadata validate-files`, `MetadataCommand.validateFiles`, which compares
`HoodieBackedTableMetadata` with `FileSystemBackedTableMetadata` file by file and size by size).

Files on storage written by an instant that is not completed on the data table (a write in
flight, or a failed one awaiting rollback) are not in the metadata table by design; they are
reported apart as uncommitted and are no difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from timeline.files import PARTITION_METADATA_FILES, is_base_file_name, parse_base_file, parse_log_file
from timeline.fsview import TableListing, list_partitions
from timeline.mdt.reader import MetadataTable


@dataclass(frozen=True)
class PartitionDifference:
    partition: str
    only_on_storage: tuple[str, ...] = ()
    only_in_metadata: tuple[str, ...] = ()
    sizes: tuple[tuple[str, int, int], ...] = ()       # (file, storage size, metadata size)
    uncommitted: tuple[str, ...] = ()                  # on storage, from instants not completed

    @property
    def differs(self) -> bool:
        return bool(self.only_on_storage or self.only_in_metadata or self.sizes)


@dataclass(frozen=True)
class Validation:
    partitions: int
    files: int
    differences: tuple[PartitionDifference, ...] = field(default_factory=tuple)
    uncommitted: tuple[PartitionDifference, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.differences


def _instant_of(name: str) -> str | None:
    try:
        return parse_base_file(name).instant_time if is_base_file_name(name) else parse_log_file(name).instant_time
    except ValueError:
        return None


def validate_files(mdt: MetadataTable, *, listing: TableListing | None = None) -> Validation:
    """Compare the MDT's `files` partition with a storage walk of the data table (`listing`,
    when the caller listed the table already)."""
    table = mdt.table
    listed = mdt.files()
    on_storage = (listing or list_partitions(table.storage, table.base)).partitions
    pending = {i.requested_time for i in table.timeline.pending()}
    differences, uncommitted = [], []
    files = 0
    for partition in sorted(set(listed) | set(on_storage)):
        stored = {s.name: s.size for s in on_storage.get(partition, ()) if s.name not in PARTITION_METADATA_FILES}
        indexed = listed.get(partition, {})
        files += len(stored)
        fresh = tuple(sorted(n for n in stored if n not in indexed and _instant_of(n) in pending))
        only_storage = tuple(sorted(n for n in stored if n not in indexed and n not in fresh))
        only_mdt = tuple(sorted(n for n in indexed if n not in stored))
        sizes = tuple((n, stored[n], indexed[n]) for n in sorted(stored) if n in indexed and stored[n] != indexed[n])
        if only_storage or only_mdt or sizes:
            differences.append(PartitionDifference(partition, only_storage, only_mdt, sizes))
        if fresh:
            uncommitted.append(PartitionDifference(partition, uncommitted=fresh))
    return Validation(len(set(listed) | set(on_storage)), files, tuple(differences), tuple(uncommitted))
