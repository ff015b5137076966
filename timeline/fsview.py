"""File groups and file slices from a storage listing, as Hudi's AbstractTableFileSystemView
builds them (hudi-format.md §6)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from timeline.files import (
    PARTITION_METADATA_PREFIX, BaseFile, LogFile, is_base_file_name, parse_base_file, parse_log_file,
)
from timeline.config import META_FOLDER
from timeline.exceptions import InvalidFileNameError
from timeline.storage import FileStatus, Storage
from timeline.timeline import Timeline

FileGroupId = tuple[str, str]  # (partition path, file id)


@dataclass(frozen=True, slots=True)
class FileSlice:
    """A base instant with its optional base file and its log files (oldest first)."""

    partition: str
    file_id: str
    base_instant_time: str
    base_file: BaseFile | None = None
    log_files: tuple[LogFile, ...] = ()

    @property
    def file_names(self) -> tuple[str, ...]:
        names = tuple(log.name for log in self.log_files)
        return (self.base_file.name, *names) if self.base_file else names

    @property
    def size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + sum(log.size for log in self.log_files)

    @property
    def is_empty(self) -> bool:
        return self.base_file is None and not self.log_files


@dataclass(frozen=True, slots=True)
class FileGroup:
    """All committed slices of one file group, newest first, and what affects it."""

    partition: str
    file_id: str
    slices: tuple[FileSlice, ...]
    replaced_by: str | None = None
    pending_compaction: str | None = None
    pending_log_compaction: str | None = None

    @property
    def id(self) -> FileGroupId:
        return (self.partition, self.file_id)

    @property
    def latest_slice(self) -> FileSlice | None:
        return self.slices[0] if self.slices else None


@dataclass(frozen=True, slots=True)
class TableListing:
    """One listing of a table's partitions: partition path -> the files in it."""

    partitions: Mapping[str, tuple[FileStatus, ...]]


def list_partitions(storage: Storage, base: str) -> TableListing:
    """Walk the table as Hudi's FileSystemBackedTableMetadata does: a folder holding a
    `.hoodie_partition_metadata` file is a partition (and is not descended into); `.hoodie`
    is never entered. The base path itself is the partition "" of a non-partitioned table."""
    partitions: dict[str, tuple[FileStatus, ...]] = {}
    stack = [base]
    prefix = len(base.rstrip("/")) + 1
    while stack:
        folder = stack.pop()
        entries = storage.list(folder)
        if any(not e.is_dir and e.name.startswith(PARTITION_METADATA_PREFIX) for e in entries):
            partitions[folder[prefix:] if folder != base else ""] = tuple(e for e in entries if not e.is_dir)
            continue
        stack.extend(e.path for e in entries if e.is_dir and e.name != META_FOLDER)
    return TableListing(partitions)


@dataclass(frozen=True, slots=True)
class ViewInputs:
    """What a view needs besides the listing, all read from the timeline beforehand.

    `visible` is the timeline the view sees (completed writes plus pending compactions, or
    completed writes up to an instant for a view "as of"); `completion_times` maps requested
    to completion time of completed instants (table version 8+ log assignment);
    `replaced` maps file groups to the completed replacecommit that replaced them;
    `pending_compactions` and `pending_log_compactions` map file groups to the instant of a
    pending compaction or log compaction plan that includes them. Only a compaction opens a
    new slice; a log compaction writes a log file into the current one."""

    visible: Timeline
    table_version: int
    completion_times: Mapping[str, str] = field(default_factory=dict)
    replaced: Mapping[FileGroupId, str] = field(default_factory=dict)
    pending_compactions: Mapping[FileGroupId, str] = field(default_factory=dict)
    pending_log_compactions: Mapping[FileGroupId, str] = field(default_factory=dict)


class FileSystemView:
    """File groups per partition with committed slices, replaced groups and pending
    compactions; answers Hudi's "latest file slices" questions."""

    def __init__(self, groups: Mapping[str, list[FileGroup]], inputs: ViewInputs) -> None:
        self._groups = groups
        self.inputs = inputs

    @property
    def partitions(self) -> list[str]:
        return sorted(self._groups)

    def all_file_groups(self, partition: str | None = None) -> Iterator[FileGroup]:
        """Every file group, replaced ones included (Hudi's getAllFileGroupsStateless)."""
        names = self.partitions if partition is None else [partition]
        for name in names:
            yield from self._groups.get(name, ())

    def file_groups(self, partition: str | None = None) -> Iterator[FileGroup]:
        """File groups not replaced by a completed replacecommit."""
        return (g for g in self.all_file_groups(partition) if g.replaced_by is None)

    def latest_slices(self, partition: str | None = None) -> list[FileSlice]:
        """Hudi's getLatestFileSlices: the newest committed slice of every live group, with a
        base file produced by a pending compaction hidden."""
        result = []
        for group in self.file_groups(partition):
            latest = group.latest_slice
            if latest is None:
                continue
            if group.pending_compaction == latest.base_instant_time and latest.base_file is not None:
                latest = FileSlice(latest.partition, latest.file_id, latest.base_instant_time, None,
                                   latest.log_files)
            result.append(latest)
        return result


class _Visibility:
    """Hudi's HoodieFileGroup.isFileSliceCommitted, precomputed for one timeline."""

    def __init__(self, visible: Timeline) -> None:
        self.times = frozenset(i.requested_time for i in visible)
        last, first = visible.last(), visible.first_non_savepoint()
        self.last = last.requested_time if last else None
        self.start = first.requested_time if first else None

    def committed(self, base_instant: str) -> bool:
        if self.last is None or base_instant > self.last:
            return False
        return base_instant in self.times or (self.start is not None and base_instant < self.start)


def build_view(listing: TableListing, inputs: ViewInputs) -> FileSystemView:
    visibility = _Visibility(inputs.visible)
    groups = {
        partition: _partition_groups(partition, files, inputs, visibility)
        for partition, files in listing.partitions.items()
    }
    return FileSystemView(groups, inputs)


def _parse_files(files: Iterable[FileStatus]) -> tuple[dict[str, list[BaseFile]], dict[str, list[LogFile]]]:
    bases: dict[str, list[BaseFile]] = {}
    logs: dict[str, list[LogFile]] = {}
    for status in files:
        name = status.name
        try:
            if name[0] == ".":
                if ".log." in name:
                    log = parse_log_file(name, status.size)
                    logs.setdefault(log.file_id, []).append(log)
            elif is_base_file_name(name):
                base = parse_base_file(name, status.size)
                bases.setdefault(base.file_id, []).append(base)
        except InvalidFileNameError:
            continue
    return bases, logs


def _partition_groups(partition: str, files: Iterable[FileStatus], inputs: ViewInputs,
                      visibility: _Visibility) -> list[FileGroup]:
    bases, logs = _parse_files(files)
    by_completion = inputs.table_version >= 8
    groups = []
    for file_id in bases.keys() | logs.keys():
        key = (partition, file_id)
        pending = inputs.pending_compactions.get(key)
        slices: dict[str, tuple[BaseFile | None, list[LogFile]]] = {}
        for base in bases.get(file_id, ()):
            slices.setdefault(base.instant_time, (base, []))
        if pending is not None and by_completion:
            slices.setdefault(pending, (None, []))
        for log in sorted(logs.get(file_id, ()), key=lambda f: f.sort_key):
            if by_completion:
                slot = _slice_for_log(log, slices, inputs, visibility)
                if slot is None:
                    continue
            else:
                slot = log.instant_time
            slices.setdefault(slot, (None, []))[1].append(log)
        if pending is not None and not by_completion:
            slices.setdefault(pending, (None, []))
        committed = tuple(
            FileSlice(partition, file_id, instant, base, tuple(group_logs))
            for instant, (base, group_logs) in sorted(slices.items(), reverse=True)
            if visibility.committed(instant)
        )
        groups.append(FileGroup(partition, file_id, committed, inputs.replaced.get(key), pending,
                                inputs.pending_log_compactions.get(key)))
    return groups


def _slice_for_log(log: LogFile, slices: Mapping[str, object], inputs: ViewInputs,
                   visibility: _Visibility) -> str | None:
    """HoodieFileGroup.getBaseInstantTime for table version 8+: the newest slice whose base
    instant is at or before the completion time of the log's delta commit. Logs of delta
    commits that are not completed in the visible timeline are not visible (None)."""
    completion = inputs.completion_times.get(log.instant_time)
    if completion is None:
        if visibility.start is not None and log.instant_time < visibility.start:
            completion = log.instant_time
        else:
            return None
    if not slices:
        return log.instant_time
    for instant in sorted(slices, reverse=True):
        if completion >= instant:
            return instant
    return log.instant_time
