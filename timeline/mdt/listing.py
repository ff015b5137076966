"""Listing a table through its metadata table, as Hudi's readers, file-system view and cleaner do
(`HoodieTableMetadata.create`: `HoodieBackedTableMetadata` when the table's `files` partition is
available, `FileSystemBackedTableMetadata` otherwise), or through storage.

- `ListingSource.METADATA`: the `files` partition's records
  (`HoodieBackedTableMetadata.getAllFilesInPartitions`): every partition of `__all_partitions__`
  with its live files and their sizes, merged over the metadata table's valid instants
  (`MetadataTable.files`, the reader the rest of Cleanline uses). Nothing per file is read from
  storage: sizes come from the records, modification times are unknown (-1). Refused
  (MetadataTableMissing) when the table has no available `files` partition.
- `ListingSource.STORAGE`: storage walked as `FileSystemBackedTableMetadata` does
  (`timeline.fsview.list_partitions`).
- `ListingSource.AUTO`: Hudi's choice, the metadata table when its `files` partition is available
  (`HoodieTableConfig.isMetadataTableAvailable`, listed in `hoodie.table.metadata.partitions`, not
  only inflight), storage otherwise.

Where the two differ (`cleanline mdt validate`), the metadata table's listing is what Hudi's own
cleaner plans from; a file on storage that no completed write put in the metadata table (a failed
write's leftover) is then not seen, as Hudi does not see it."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from timeline.fsview import TableListing, list_partition, list_partitions
from timeline.mdt.reader import MetadataTable, MetadataTableMissing
from timeline.storage import FileStatus, Storage
from timeline.table import Table


class ListingSource(str, Enum):
    """Where a table's files are listed from."""

    AUTO = "auto"
    METADATA = "metadata"
    STORAGE = "storage"


def resolve(table: Table, source: ListingSource | str) -> ListingSource:
    """METADATA or STORAGE for `source` on this table (AUTO: Hudi's choice). MetadataTableMissing
    when METADATA is asked of a table without an available `files` partition."""
    wanted = ListingSource(source)
    available = table.config.metadata_table_enabled
    if wanted is ListingSource.METADATA and not available:
        raise MetadataTableMissing(f"{table.uri}: no metadata table with an available `files` partition to list "
                                   "the table from (list storage instead: --listing storage)")
    if wanted is ListingSource.AUTO:
        return ListingSource.METADATA if available else ListingSource.STORAGE
    return wanted


def table_listing(table: Table, source: ListingSource | str = ListingSource.STORAGE, *,
                  partitions: Iterable[str] | None = None) -> tuple[TableListing, ListingSource]:
    """The table's partitions and files from `source` (only `partitions` when given: a partition
    that is gone lists as empty), and the source used."""
    used = resolve(table, source)
    if used is ListingSource.STORAGE:
        if partitions is None:
            return list_partitions(table.storage, table.base), used
        return TableListing({p: list_partition(table.storage, table.base, p) for p in partitions}), used
    listed = MetadataTable(table).files()
    wanted = sorted(listed) if partitions is None else list(partitions)
    return TableListing({p: _statuses(table.base, p, listed.get(p, {})) for p in wanted}), used


def _statuses(base: str, partition: str, files: dict[str, int]) -> tuple[FileStatus, ...]:
    folder = Storage.join(base, partition) if partition else base
    return tuple(FileStatus(Storage.join(folder, name), name, size, -1) for name, size in sorted(files.items()))


def describe(source: ListingSource) -> str:
    """What a plan says of the listing it used."""
    if source is ListingSource.METADATA:
        return "listed through the metadata table's `files` partition (HoodieBackedTableMetadata), as Hudi does"
    return "listed from storage (FileSystemBackedTableMetadata)"


__all__ = ["ListingSource", "describe", "resolve", "table_listing"]
