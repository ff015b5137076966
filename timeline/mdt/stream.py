"""The metadata table's `files` partition read as a stream, one data-table partition at a time,
in partition order: what `MetadataTable.files` gives, without holding every partition's decoded
files at once, nor a base HFile's bytes (the planners of `timeline.internal.plan_store` and
`timeline.spark.clean` list 10 million files through it).

It merges as `HoodieBackedTableMetadata` reads (`HoodieMetadataLogRecordReader` over the latest
merged file slices, `HoodieMetadataPayload.preCombine` per key): the records of each file slice's
base HFile, then of its log blocks in log order, key by key. HFile cells are sorted by key (the
HFile's contract, `HoodieHBaseKVComparator`), so the sources are merged by key with
`heapq.merge`; a key's versions are combined in source order (base first), a DELETE block's key
dropping what came before, exactly as `MetadataTable._slice_records` does for the whole
partition. Base HFiles (where Hudi's initialisation and compactions put the listing) are read a
data block at a time; the log blocks' cells (the deltacommits since) are held while the stream
runs; decoded records one key at a time. `__all_partitions__` is read first (one pass over the keys,
decoding only that one), so a partition it does not list is never yielded
(`getAllFilesInPartitions` lists the partitions of `getAllPartitionPaths`)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import groupby
from operator import itemgetter

from timeline.hfile import read_hfile, stream_hfile
from timeline.logformat import BlockType, HeaderKey, decode_delete_records
from timeline.mdt.reader import FILES, SCHEMA_INFO_KEY, MetadataTable
from timeline.metadata.mdt_payload import (
    PARTITION_LIST_KEY,
    MetadataRecord,
    combine,
    decode_record,
    partition_identifier,
    partition_of,
)
from timeline.storage import Storage

# One version of a key from one source: (key, source index, cell value or None for a delete,
# the schema to decode it with, the file it came from).
Version = tuple[bytes, int, bytes | None, str, str]


def _slice_sources(mdt: MetadataTable, valid: set[str], latest: str) -> list[Callable[[], Iterable[Version]]]:
    """Every source of every merged slice of the `files` partition, each giving its versions
    sorted by key: the base HFile's cells, read a block at a time each time they are asked for
    (`stream_hfile`), then each valid log block's (DELETE blocks' keys with no value). Sources
    are numbered across slices in slice order, so a later slice's version of a key comes last
    (the `dict.update` of `MetadataTable.records`)."""
    sources: list[Callable[[], Iterable[Version]]] = []
    for file_slice in mdt.merged_slices(FILES):
        folder = Storage.join(mdt.base, file_slice.partition)
        if file_slice.base_file is not None:
            sources.append(partial(_base_versions, mdt.storage, Storage.join(folder, file_slice.base_file.name),
                                   len(sources)))
        for path, block in mdt._blocks(folder, file_slice, valid, latest):
            index = len(sources)
            versions: list[Version]
            if block.block_type is BlockType.HFILE_DATA:
                hfile = read_hfile(block.content, path=path)
                schema = block.header.get(HeaderKey.SCHEMA) or hfile.file_info.get(SCHEMA_INFO_KEY, b"").decode()
                versions = [(row, index, value, schema, path) for row, value in hfile.cells]
            else:
                keys = sorted(r.record_key.encode() for r in decode_delete_records(block.content, path=path)
                              if r.record_key is not None)
                versions = [(key, index, None, "", path) for key in keys]
            sources.append(partial(iter, versions))
    return sources


def _base_versions(storage: Storage, path: str, index: int) -> Iterator[Version]:
    with storage.reader(path) as reader:
        info, cells = stream_hfile(reader, path=path)
        schema = info.get(SCHEMA_INFO_KEY, b"").decode()
        for row, value in cells:
            yield row, index, value, schema, path


def _merged(versions: Iterable[Version]) -> MetadataRecord | None:
    """One key's versions in source order, combined as `_slice_records` does."""
    current: MetadataRecord | None = None
    first = True
    for row, _, value, schema, path in versions:
        if value is None:
            current = None
        else:
            record = decode_record(row, value, schema, path=path)
            current = record if first else combine(current, record)
        first = False
    return current if current is not None and not current.is_deleted else None


def _by_key(sources: list[Callable[[], Iterable[Version]]], only: bytes | None = None
            ) -> Iterator[tuple[bytes, list[Version]]]:
    """Each key's versions in source order, keys in order (only the key `only` when given)."""
    streams = [source() for source in sources]
    if only is not None:
        streams = [[v for v in stream if v[0] == only] for stream in streams]
    merged = heapq.merge(*streams, key=itemgetter(0, 1))
    for key, versions in groupby(merged, key=itemgetter(0)):
        yield key, list(versions)


def iter_files(mdt: MetadataTable, partitions: Iterable[str] | None = None
               ) -> Iterator[tuple[str, dict[str, int]]]:
    """(partition, file name -> size) for every partition `__all_partitions__` lists (only
    `partitions` when given: one not listed there yields no files), in partition order; the
    same entries as `MetadataTable.files`."""
    valid = mdt.valid_instants()
    last = mdt.mdt.timeline.completed().last()
    sources = _slice_sources(mdt, valid, "" if last is None else last.requested_time)
    list_key = PARTITION_LIST_KEY.encode()
    listed_record = next((_merged(v) for _, v in _by_key(sources, list_key)), None)
    listed = set(listed_record.present()) if listed_record is not None else set()
    wanted = sorted(listed if partitions is None else {partition_identifier(p) for p in partitions})
    if not wanted:
        return
    at = 0
    for key, versions in _by_key(sources):
        identifier = key.decode()
        while at < len(wanted) and wanted[at] < identifier:  # listed, but no files record
            yield partition_of(wanted[at]), {}
            at += 1
        if at == len(wanted):
            return
        if wanted[at] != identifier:
            continue
        at += 1
        if identifier not in listed:
            yield partition_of(identifier), {}
            continue
        record = _merged(versions)
        entries = (record.files or {}) if record is not None else {}
        yield partition_of(identifier), {n: i.size for n, i in entries.items() if not i.deleted}
    for identifier in wanted[at:]:
        yield partition_of(identifier), {}


__all__ = ["iter_files"]
