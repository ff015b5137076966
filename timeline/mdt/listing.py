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

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from enum import Enum
from functools import partial
from typing import TypeVar

from timeline.fsview import TableListing, list_partition, list_partitions, top_folders
from timeline.mdt.reader import MetadataTable, MetadataTableMissing
from timeline.storage import FileStatus, Storage
from timeline.table import Table

T = TypeVar("T")


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
    return TableListing({p: statuses_of(table.base, p, listed.get(p, {})) for p in wanted}), used


def statuses_of(base: str, partition: str, files: dict[str, int]) -> tuple[FileStatus, ...]:
    """A partition's files as the metadata table lists them (name -> size): sizes from the
    records, modification times unknown (-1)."""
    folder = Storage.join(base, partition) if partition else base
    prefix = Storage.join(folder, "_")[:-1]  # what Storage.join puts before a plain file name, joined once
    new, status = tuple.__new__, FileStatus  # once per file listed: no Python-level __new__
    return tuple(new(status, (prefix + name, name, size, -1, False)) for name, size in sorted(files.items()))


def iter_listing(table: Table, source: ListingSource | str = ListingSource.STORAGE, *,
                 partitions: Iterable[str] | None = None) -> Iterator[tuple[str, tuple[FileStatus, ...]]]:
    """`table_listing` as a stream, in partition order, without the whole table at once: the
    metadata table's `files` partition read key by key (`timeline.mdt.stream.iter_files`), or
    storage walked a top folder at a time (the folders whose partitions may interleave in
    partition order walked together; a few folders listed ahead on stores that list in
    threads). Only `partitions` when given (a partition that is gone lists as empty)."""
    used = resolve(table, source)
    storage, base = table.storage, table.base
    if used is ListingSource.METADATA:
        from timeline.mdt.stream import iter_files

        for partition, files in iter_files(MetadataTable(table), partitions):
            yield partition, statuses_of(base, partition, files)
        return
    ahead = max(1, storage.listing_threads)
    if partitions is not None:
        wanted = sorted(set(partitions))
        listed = _in_order([partial(list_partition, storage, base, p) for p in wanted], ahead)
        yield from zip(wanted, listed)
        return
    folders = top_folders(storage, base)
    if folders is None:
        yield from sorted(list_partitions(storage, base).partitions.items())
        return
    calls = [partial(list_partitions, storage, base, within=group) for group in folder_groups(folders)]
    for listing in _in_order(calls, ahead):
        for partition in sorted(listing.partitions):
            yield partition, listing.partitions[partition]


def folder_groups(folders: list[str]) -> list[list[str]]:
    """The base's top folders in groups whose partitions follow one another in partition order,
    groups in that order. A folder's partitions are the folder itself or lie below it ("a",
    "a/x"); they sort apart from another folder's unless one folder's name is the start of the
    other's followed by a character before "/" ("a" and "a-b": "a" < "a-b" < "a/x"): such
    folders are one group."""
    named = sorted(folders, key=lambda f: f.rstrip("/").rsplit("/", 1)[-1])
    groups: list[list[str]] = []
    heads: list[str] = []  # the names of the current group
    for folder in named:
        name = folder.rstrip("/").rsplit("/", 1)[-1]
        if groups and any(name.startswith(h) and len(name) > len(h) and name[len(h)] < "/" for h in heads):
            groups[-1].append(folder)
            heads.append(name)
        else:
            groups.append([folder])
            heads = [name]
    return groups


def _in_order(calls: Sequence[Callable[[], T]], ahead: int) -> Iterator[T]:
    """Each call's result in order, at most `ahead` calls running at once."""
    if ahead <= 1 or len(calls) <= 1:
        for call in calls:
            yield call()
        return
    with ThreadPoolExecutor(ahead, thread_name_prefix="cleanline-list-ahead") as pool:
        window: deque[Future[T]] = deque()
        try:
            for call in calls:
                window.append(pool.submit(call))
                if len(window) >= ahead:
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
        finally:
            for future in window:
                future.cancel()


def describe(source: ListingSource) -> str:
    """What a plan says of the listing it used."""
    if source is ListingSource.METADATA:
        return "listed through the metadata table's `files` partition (HoodieBackedTableMetadata), as Hudi does"
    return "listed from storage (FileSystemBackedTableMetadata)"


__all__ = ["ListingSource", "describe", "folder_groups", "iter_listing", "resolve", "statuses_of", "table_listing"]
