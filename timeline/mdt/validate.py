"""`cleanline mdt validate`: the metadata table's file listing against the storage listing, per
partition (Hudi CLI's `metadata validate-files`, `MetadataCommand.validateFiles`, which compares
`HoodieBackedTableMetadata` with `FileSystemBackedTableMetadata` file by file and size by size).

Only base and log files are compared (`FSUtils.getAllDataFilesInPartition`). A file on storage
that the metadata table does not list is a difference only when it is committed
(`timeline/committed.py`): Hudi fills the `files` partition from commit metadata alone
(`HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords`). Files of a pending instant
(a write in flight, or a failed one awaiting rollback) are reported apart as uncommitted, and
files no completed write names (a failed task's output, a file copied in) apart as not
committed: neither is a difference (the second is the orphan check's business).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from timeline.committed import Commitment, CommittedFiles, active_committed_files
from timeline.fsview import TableListing, list_partitions
from timeline.mdt.reader import MetadataTable


@dataclass(frozen=True)
class PartitionDifference:
    partition: str
    only_on_storage: tuple[str, ...] = ()
    only_in_metadata: tuple[str, ...] = ()
    sizes: tuple[tuple[str, int, int], ...] = ()       # (file, storage size, metadata size)
    uncommitted: tuple[str, ...] = ()                  # on storage, from instants not completed
    not_committed: tuple[str, ...] = ()                # on storage, no completed write names them

    @property
    def differs(self) -> bool:
        return bool(self.only_on_storage or self.only_in_metadata or self.sizes)


@dataclass(frozen=True)
class Validation:
    partitions: int
    files: int
    differences: tuple[PartitionDifference, ...] = field(default_factory=tuple)
    uncommitted: tuple[PartitionDifference, ...] = field(default_factory=tuple)
    not_committed: tuple[PartitionDifference, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.differences


def validate_files(mdt: MetadataTable, *, listing: TableListing | None = None,
                   committed: CommittedFiles | None = None) -> Validation:
    """Compare the MDT's `files` partition with a storage walk of the data table (`listing`,
    when the caller listed the table already), judging files by `committed` (the active
    timeline's reading when not given; the doctor passes its reading of both timelines)."""
    table = mdt.table
    listed = mdt.files()
    on_storage = (listing or list_partitions(table.storage, table.base)).partitions
    judge = committed or active_committed_files(table)
    differences, uncommitted, not_committed = [], [], []
    files = 0
    for partition in sorted(set(listed) | set(on_storage)):
        indexed = listed.get(partition, {})
        stored: dict[str, int] = {}
        missing: dict[Commitment, list[str]] = {}
        for status in on_storage.get(partition, ()):
            standing = judge.of(status.name)
            if standing is Commitment.NOT_DATA:
                continue
            stored[status.name] = status.size
            if status.name not in indexed:
                missing.setdefault(standing, []).append(status.name)
        files += len(stored)
        only_storage = tuple(sorted(n for c, names in missing.items() if c.committed for n in names))
        only_mdt = tuple(sorted(n for n in indexed if n not in stored))
        sizes = tuple((n, stored[n], indexed[n]) for n in sorted(stored) if n in indexed and stored[n] != indexed[n])
        if only_storage or only_mdt or sizes:
            differences.append(PartitionDifference(partition, only_storage, only_mdt, sizes))
        if missing.get(Commitment.PENDING):
            uncommitted.append(PartitionDifference(partition, uncommitted=tuple(sorted(missing[Commitment.PENDING]))))
        if missing.get(Commitment.NOT_COMMITTED):
            not_committed.append(PartitionDifference(
                partition, not_committed=tuple(sorted(missing[Commitment.NOT_COMMITTED]))))
    return Validation(len(set(listed) | set(on_storage)), files, tuple(differences), tuple(uncommitted),
                      tuple(not_committed))


__all__ = ["PartitionDifference", "Validation", "validate_files"]
