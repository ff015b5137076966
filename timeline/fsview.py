"""File groups and file slices from a storage listing, as Hudi's AbstractTableFileSystemView
builds them (hudi-format.md §6)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from timeline.config import META_FOLDER
from timeline.exceptions import FileNotFound, InvalidFileNameError
from timeline.files import (
    BASE_FILE_EXTENSIONS,
    LOG_ORDER,
    PARTITION_METADATA_FILES,
    BaseFile,
    LogFile,
    base_file_of,
    parse_log_file,
)
from timeline.perf import paused_gc
from timeline.storage import FileStatus, Storage
from timeline.timeline import Timeline

FileGroupId = tuple[str, str]  # (partition path, file id)
T = TypeVar("T")


class FileSlice(NamedTuple):
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




class FileGroup:
    """One file group: its committed slices newest first, and what affects it. Slices are
    built on first use (`latest_slice` builds only the newest), so answering "latest file
    slices" over a large table does not pay for every older version."""

    __slots__ = ("partition", "file_id", "replaced_by", "pending_compaction", "pending_log_compaction",
                 "_bases", "_logs", "_committed", "_slices")

    def __init__(self, partition: str, file_id: str, bases: dict[str, BaseFile | None],
                 logs: dict[str, list[LogFile]], committed: Callable[[str], bool], *,
                 replaced_by: str | None = None, pending_compaction: str | None = None,
                 pending_log_compaction: str | None = None) -> None:
        self.partition = partition
        self.file_id = file_id
        self.replaced_by = replaced_by
        self.pending_compaction = pending_compaction
        self.pending_log_compaction = pending_log_compaction
        self._bases = bases  # slice base instant -> its base file (None for a log-only slice)
        self._logs = logs
        self._committed = committed
        self._slices: tuple[FileSlice, ...] | None = None

    @property
    def id(self) -> FileGroupId:
        return (self.partition, self.file_id)

    def _slice(self, instant: str) -> FileSlice:
        logs = self._logs.get(instant)  # once per slice of a table: no Python-level __new__
        return tuple.__new__(FileSlice, (self.partition, self.file_id, instant, self._bases[instant],
                                         tuple(logs) if logs else ()))

    @property
    def slices(self) -> tuple[FileSlice, ...]:
        """Every committed slice, newest base instant first (Hudi's getAllFileSlices)."""
        if self._slices is None:
            committed, piece = self._committed, self._slice
            self._slices = tuple([piece(t) for t in sorted(self._bases, reverse=True) if committed(t)])
        return self._slices

    @property
    def latest_slice(self) -> FileSlice | None:
        if self._slices is not None:
            return self._slices[0] if self._slices else None
        for instant in sorted(self._bases, reverse=True):
            if self._committed(instant):
                return self._slice(instant)
        return None

    def __repr__(self) -> str:
        return f"FileGroup({self.partition!r}, {self.file_id!r}, replaced_by={self.replaced_by!r})"


@dataclass(frozen=True, slots=True)
class TableListing:
    """One listing of a table's partitions: partition path -> the files in it."""

    partitions: Mapping[str, tuple[FileStatus, ...]]


def list_partitions(storage: Storage, base: str, *, sizes: bool = True, within: Sequence[str] | None = None
                    ) -> TableListing:
    """Walk the table as Hudi's FileSystemBackedTableMetadata does: a folder holding a
    `.hoodie_partition_metadata` file is a partition (and is not descended into); `.hoodie`
    is never entered. The base path itself is the partition "" of a non-partitioned table.
    `Storage.walk` lists folders concurrently on object stores (one round trip each), one
    by one on local storage. Without `sizes`, a file's size and time may be -1 (unknown):
    see `Storage.list_unsized`. `within` walks only those sub-folders of the base (as
    `top_folders` names them), not the base itself: processes share a table's folders so."""
    partitions: dict[str, tuple[FileStatus, ...]] = {}
    prefix = len(base.rstrip("/")) + 1
    children: dict[str, list[str]] = {}
    for root in ([base] if within is None else within):
        for folder, entries in storage.walk(root, lambda folder, _: children.pop(folder), sizes=sizes):
            files, folders = _split_folder(entries)
            if files is not None:
                partitions[folder[prefix:] if folder != base else ""] = files
            children[folder] = folders
    return TableListing(partitions)


def list_some_partitions(storage: Storage, base: str, folders: Iterable[str]) -> TableListing:
    """The partitions among `folders` (backend paths of folders below `base`, or `base` itself)
    as `list_partitions` finds them, each listed once, with sizes: a folder holding a partition
    metadata file, no folder between it and the base holding one (the walk does not descend
    into a partition), nothing inside `.hoodie`. A folder gone, or no partition, lists nothing.
    What a re-check of a few known files reads instead of the whole table."""
    return _partitions_among(storage, base, set(folders))


def list_some_files(storage: Storage, base: str, paths: Iterable[str]) -> TableListing:
    """The files among `paths` (backend paths) that `list_partitions` would find, by partition:
    `list_some_partitions` of the folders they are in, each listed once for those files alone
    (`Storage.list_only`: a local disk asks the size and time of those alone) and its partition
    metadata files (whether it is a partition). A re-check of known files (a repair's)."""
    by_folder: dict[str, set[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        names = by_folder.get(folder)
        if names is None:
            names = by_folder[folder] = set()
        names.add(name)
    return _partitions_among(storage, base, by_folder, by_folder)


def walked_folder(storage: Storage, base: str, folder: str, marked: dict[str, bool] | None = None) -> str | None:
    """The path of `folder` relative to `base` ("" for the base) when a listing of the table's
    partitions looks into it: at or below the base, outside `.hoodie`, and no folder above it
    (from the base down) a partition (its partition metadata file there). None otherwise: its
    files are never listed. `marked` caches what was found of each folder above."""
    root, folder = base.rstrip("/"), folder.rstrip("/")
    relative = "" if folder == root else folder[len(root) + 1:] if folder.startswith(root + "/") else None
    if relative is None or relative.split("/", 1)[0] == META_FOLDER:
        return None
    found = {} if marked is None else marked

    def is_partition(path: str) -> bool:
        if path not in found:
            found[path] = any(storage.exists(Storage.join(path, name)) for name in PARTITION_METADATA_FILES)
        return found[path]

    above = relative.split("/")[:-1]
    if relative and any(is_partition(Storage.join(root, *above[:depth])) for depth in range(len(above) + 1)):
        return None  # inside a partition (or below a base that is one): never walked
    return relative


def _partitions_among(storage: Storage, base: str, folders: Iterable[str],
                      wanted: Mapping[str, set[str]] | None = None) -> TableListing:
    """`list_some_partitions`; with `wanted` (folder -> names), of those files alone."""
    marked: dict[str, bool] = {}
    partitions: dict[str, tuple[FileStatus, ...]] = {}
    for given in folders:
        folder = given.rstrip("/")
        relative = walked_folder(storage, base, folder, marked)
        if relative is None:
            continue
        try:
            if wanted is None:
                files, _ = _split_folder(storage.list(folder))
            else:  # its partition metadata files too: whether it is a partition
                these = wanted[given]
                files, _ = _split_folder(storage.list_only(folder, these | PARTITION_METADATA_FILES))
                files = None if files is None else tuple(s for s in files if s.name in these)
        except FileNotFound:
            continue
        if files is not None:
            partitions[relative] = files
    return TableListing(partitions)


def top_folders(storage: Storage, base: str) -> list[str] | None:
    """The base's sub-folders to walk for partitions, in name order (`.hoodie` left out), from
    one listing; None when the base is itself the partition of a non-partitioned table (found
    by its partition metadata file, without listing the files it holds)."""
    if any(storage.exists(Storage.join(base, name)) for name in sorted(PARTITION_METADATA_FILES)):
        return None
    files, folders = _split_folder(storage.list_unsized(base))
    return None if files is not None else sorted(folders)


def list_partition(storage: Storage, base: str, partition: str) -> tuple[FileStatus, ...]:
    """The files of one partition ("" for the base of a non-partitioned table); a partition
    that is gone lists as empty."""
    folder = Storage.join(base, partition) if partition else base
    return tuple(s for s in storage.list(folder) if not s.is_dir) if storage.exists(folder) else ()


def _split_folder(entries: list[FileStatus]) -> tuple[tuple[FileStatus, ...] | None, list[str]]:
    """(the files of a partition folder, nothing to descend into), or (None, the sub-folders
    to walk) for a folder without partition metadata; `.hoodie` is never walked."""
    files: list[FileStatus] = []
    folders: list[str] = []
    is_partition = False
    for entry in entries:
        if entry.is_dir:
            if entry.name != META_FOLDER:
                folders.append(entry.path)
        else:
            files.append(entry)
            if not is_partition and entry.name in PARTITION_METADATA_FILES:
                is_partition = True
    return (tuple(files), []) if is_partition else (None, folders)


def partition_paths(storage: Storage, base: str) -> list[str]:
    """The partitions of a table without listing their files: a folder is a partition when
    its partition metadata file exists (text, or the base-format variant)."""
    markers = sorted(PARTITION_METADATA_FILES)
    prefix = len(base.rstrip("/")) + 1
    found: list[str] = []
    stack = [base]
    while stack:
        folder = stack.pop()
        if any(storage.exists(Storage.join(folder, marker)) for marker in markers):
            found.append(folder[prefix:] if folder != base else "")
            continue
        stack.extend(e.path for e in storage.list(folder) if e.is_dir and e.name != META_FOLDER)
    return sorted(found)


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
    # CompletionTimeQueryViewV2: the first instant of the active timeline (any action, any
    # state) and, for earlier instants, completion times from the archived (LSM) timeline.
    completion_cursor: str | None = None
    archived_completion_times: Mapping[str, str] = field(default_factory=dict)
    base_file_extensions: frozenset[str] = BASE_FILE_EXTENSIONS


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
        base file produced by a pending compaction hidden and, on table version 8+, the log
        files of writes not completed left out (AbstractTableFileSystemView.filterUncommittedLogs;
        the file group itself keeps them in its newest slice, where the cleaner keeps them)."""
        with paused_gc():
            slices = [s for g in self.file_groups(partition) if (s := _latest_visible(g)) is not None]
        if self.inputs.table_version < 8:
            return slices
        return [s if all(self._log_committed(log.instant_time) for log in s.log_files)
                else s._replace(log_files=tuple(log for log in s.log_files if self._log_committed(log.instant_time)))
                for s in slices]

    def _log_committed(self, instant: str) -> bool:
        """CompletionTimeQueryViewV2.isCompleted: completed on the active timeline or in the
        archived one, or older than the write timeline's first instant (isArchived)."""
        inputs = self.inputs
        return (instant in inputs.completion_times or instant in inputs.archived_completion_times
                or (inputs.completion_cursor is not None and instant < inputs.completion_cursor))


def _latest_visible(group: FileGroup) -> FileSlice | None:
    latest = group.latest_slice
    if latest is not None and latest.base_file is not None and group.pending_compaction == latest.base_instant_time:
        return latest._replace(base_file=None)
    return latest


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


def _append(groups: dict[str, list[T]], key: str, item: T) -> None:
    found = groups.get(key)  # not setdefault: that builds a throw-away list per file
    if found is None:
        groups[key] = [item]
    else:
        found.append(item)


def _parse_files(
    files: Iterable[FileStatus], extensions: frozenset[str] = BASE_FILE_EXTENSIONS,
) -> tuple[dict[str, list[BaseFile]], dict[str, list[LogFile]]]:
    bases: dict[str, list[BaseFile]] = {}
    logs: dict[str, list[LogFile]] = {}
    for status in files:
        name = status.name
        try:
            if name[0] == ".":
                if ".log." in name:
                    log = parse_log_file(name, status.size)
                    found = logs.get(log.file_id)  # inlined _append: once per file
                    if found is None:
                        logs[log.file_id] = [log]
                    else:
                        found.append(log)
            elif name[name.rfind("."):] in extensions:
                base = base_file_of(name, status.size)
                _append(bases, base.file_id, base)
        except InvalidFileNameError:
            continue
    return bases, logs


def _partition_groups(partition: str, files: Iterable[FileStatus], inputs: ViewInputs,
                      visibility: _Visibility) -> list[FileGroup]:
    bases, logs = _parse_files(files, inputs.base_file_extensions)
    by_completion = inputs.table_version >= 8
    groups = []
    for file_id in sorted(bases.keys() | logs.keys()):  # a stable order across processes
        key = (partition, file_id)
        pending = inputs.pending_compactions.get(key)
        slices: dict[str, BaseFile | None] = {}
        for base in bases.get(file_id, ()):
            slices.setdefault(base.instant_time, base)
        if pending is not None and by_completion:
            slices.setdefault(pending, None)
        group_logs = logs.get(file_id)
        slice_logs: dict[str, list[LogFile]] = {}
        if group_logs:
            group_logs.sort(key=LOG_ORDER)
            if by_completion:
                slice_logs = _place_by_completion(group_logs, slices, inputs)
            else:
                for log in group_logs:
                    _append(slice_logs, log.instant_time, log)
                    slices.setdefault(log.instant_time, None)
        if pending is not None and not by_completion:
            slices.setdefault(pending, None)
        groups.append(FileGroup(partition, file_id, slices, slice_logs, visibility.committed,
                                replaced_by=inputs.replaced.get(key), pending_compaction=pending,
                                pending_log_compaction=inputs.pending_log_compactions.get(key)))
    return groups


def _place_by_completion(logs: list[LogFile], slices: dict[str, BaseFile | None],
                         inputs: ViewInputs) -> dict[str, list[LogFile]]:
    """HoodieFileGroup.getBaseInstantTime for table version 8+, for a group's logs in log
    order. The completion time of a log's delta commit comes from the active timeline, else
    from the archived one (CompletionTimeQueryViewV2 loads the archived instants from its
    cursor on eagerly and older ones when asked, so an archived delta commit later than an
    instant left on the active timeline, an old indexing or savepoint, is found too). A
    completed log joins the newest slice whose base instant is at or before
    that completion time (its own delta commit time starts a slice when there is none); a log
    whose write has no completion time (pending, or unknown to the archive) belongs to the
    newest slice; the first log of a group without slices starts its own. Adds new slices to
    `slices`."""
    placed: dict[str, list[LogFile]] = {}
    keys = sorted(slices, reverse=True)
    active, archived = inputs.completion_times, inputs.archived_completion_times
    for log in logs:
        instant = log.instant_time
        if not keys:
            slot = instant
            slices[slot] = None
            keys = [slot]
        else:
            completion = active.get(instant)
            if completion is None:
                completion = archived.get(instant)
            if completion is None:
                slot = keys[0]  # "the log file is still pending, it always belongs to the latest file slice"
            else:
                for key in keys:
                    # a completion time of another length (a legacy instant) compares by requested time
                    if (completion if len(completion) == len(key) else instant) >= key:
                        slot = key
                        break
                else:
                    slot = instant
                    slices[slot] = None
                    keys = sorted(slices, reverse=True)
        found = placed.get(slot)
        if found is None:
            placed[slot] = [log]
        else:
            found.append(log)
    return placed


__all__ = [
    "FileGroup", "FileGroupId", "FileSlice", "FileSystemView", "TableListing", "ViewInputs", "build_view",
    "list_partition", "list_partitions", "list_some_partitions", "partition_paths", "top_folders"
]
