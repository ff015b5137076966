"""A clean run in shares, for an engine whose workers each take some of a plan's partitions
(`timeline/spark/clean.py`), with nothing per file on the driver. It follows the same rules as
`timeline.clean.executor` (CleanActionExecutor) and writes the same files; only the work is
spread out:

1. The driver reads the requested plan as slices (`timeline.metadata.planfile`) and deals
   contiguous runs of partitions out as shares (`shares`), with the timeline's state files
   that `HudiTable.ensure_intact` would decode. It reads the plan's protection (savepoints,
   pending compactions and clusterings: `protection.read_protection`).
2. Each worker checks its share (`check_share`): its state files decode; it reads its byte
   range of the requested plan (a digest proves it is the file the driver read), decodes it,
   and applies the containment rule (`timeline/storage/containment.py`) and the protection
   check (`protection.conflicts_with`). The driver reads the timeline again and refuses the
   whole clean before any delete when one worker found a state file or plan bytes that do
   not decode, a path outside the table or a protected file, exactly as
   `executor.begin_clean` does; then the clean goes inflight.
3. Each worker deletes its share (`clean_share`): sizes first (`Storage.sizes_of`), the
   storage's batch delete, and per partition its HoodieCleanPartitionMetadata entry, encoded
   there; the driver joins the entries into the completed clean (`finish`).

Only a regular plan goes this way: no metadata table to update, a version-2 plan in Hudi's
layout, and every file named as `<table>/<partition>/<name>` once, by plain names, no
bootstrap source file. Anything else (None from `prepare` or `begin`) is run whole by the
executor, on the driver, as before.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from typing import Any, NamedTuple

from timeline import transition
from timeline.clean.executor import (
    CLEAN_METADATA_VERSION,
    CleanResult,
    FileOutcome,
    Status,
    refuse_protected,
)
from timeline.clean.protection import Protection, conflicts_with, read_protection
from timeline.exceptions import CorruptInstantError, StorageError
from timeline.instant import Instant, State
from timeline.mdt.reader import metadata_table
from timeline.metadata.planfile import (
    PartitionSlice,
    PlanSlices,
    decode_files,
    decode_partition_entry,
    digest_of,
    encode_clean_metadata,
    encode_partition_entry,
    read_slices,
)
from timeline.metadata.records import CleanerPlan, CleanMetadata, CleanPartitionMetadata
from timeline.storage import FolderIdentity, Storage
from timeline.storage.containment import Containment, OutsideTableError
from timeline.table import Table, check_state_file_at

CONFLICTS_SHOWN = 5
# A worker checks JSON state files up to this size whole with simdjson (it holds the file and
# its parse, a few times the file's size, in the executor's memory); larger ones as a stream.
WORKER_STREAM_CHECK_BYTES = 256 << 20


class Share(NamedTuple):
    """A worker's part of a plan: a contiguous byte range of the requested plan file (its
    digest) holding the arrays of some partitions (offsets within the range), and some of
    the timeline's state files to check as `HudiTable.ensure_intact` does (path, size, codec)."""

    plan_path: str
    start: int
    end: int
    digest: bytes
    partitions: tuple[tuple[str, int, int], ...]
    state_files: tuple[tuple[str, int, int, dict[str, Any]], ...] = ()  # path, size, mtime (ms), codec


class Checked(NamedTuple):
    """What a worker found in its share: a reason the plan is not regular, the first path
    outside the table (entry, reason), bytes that do not decode, or the protected files."""

    files: int
    irregular: str = ""
    outside: tuple[str, str] | None = None
    corrupt: str = ""
    corrupt_state: tuple[str, str] | None = None  # a state file that does not decode: path, reason
    unreadable: tuple[str, str] | None = None     # a file the store would not read: path, reason
    conflicts: tuple[str, ...] = ()
    conflict_count: int = 0


class Cleaned(NamedTuple):
    """A partition's outcome from its worker: its metadata entry, per file the bytes deleted,
    the statuses' values (None when every file was deleted) and errors by position."""

    partition: str
    entry: bytes
    sizes: list[int]
    codes: list[str] | None
    errors: dict[int, str]


@dataclass(frozen=True, slots=True)
class Begun:
    """A clean checked in shares and moved to inflight."""

    clean: Instant
    plan: CleanerPlan
    shares: tuple[Share, ...]
    root: str        # the table's URI and a slash: every planned path starts with it
    files: int


def begin(table: Table, clean: Instant, plan_data: bytes, slices: PlanSlices, dealt: tuple[Share, ...],
          protection: Protection, checked: Sequence[Checked]) -> Begun | None:
    """After the workers checked every share (`check_share`) against `protection`: refuse as
    `begin_clean` does, or move the clean to inflight; None when it is to run whole (the plan
    is not regular, or the timeline changed meanwhile: a new protection or a metadata table)."""
    table.reload()  # the workers' checks took a while: what came since is looked at here
    path = table.timeline.path_of(clean, State.REQUESTED)
    for found in checked:
        if found.unreadable is not None:
            raise StorageError(*found.unreadable)
        if found.corrupt_state is not None:
            raise CorruptInstantError(*found.corrupt_state)
    for found in checked:
        if found.corrupt:
            raise CorruptInstantError(path, found.corrupt)
    for found in checked:
        if found.outside is not None:
            raise OutsideTableError(table.uri, *found.outside)
    if any(found.irregular for found in checked):
        return None
    if metadata_table(table) is not None or read_protection(table) != protection:
        return None  # begin_clean checks every file again, on the timeline as it is now
    conflicts = [c for found in checked for c in found.conflicts]
    count = sum(found.conflict_count for found in checked)
    if count:
        refuse_protected(table, clean, conflicts, count)
    status = table.timeline.files_of(clean).get(State.REQUESTED)
    if status is not None:
        table.note_intact(status)  # every share of it decoded
    checked_files = {(path, size, mtime) for share in dealt for path, size, mtime, _ in share.state_files}
    for status, _ in table.unchecked_state_files():
        if (status.path, status.size, status.mtime_ms) in checked_files:
            table.note_intact(status)  # a worker decoded it (its size and time unchanged since)
    table.ensure_intact()  # anything else, e.g. an instant written since
    if clean.is_requested:  # the inflight state holds a copy of the plan
        transition.start(table, clean, plan_data)
    return Begun(clean, slices.header, dealt, root_of(table), slices.files)


def root_of(table: Table) -> str:
    return table.storage.uri(table.base.rstrip("/")) + "/"


def prepare(table: Table, clean: Instant, shares_wanted: int
            ) -> tuple[bytes, PlanSlices, tuple[Share, ...], Protection] | None:
    """The driver's first step, under the table's lock: the plan read as slices and dealt into
    at most `shares_wanted` shares, and the protection to check them against; None when the
    clean is to run whole (a metadata table to update, a plan not in Hudi's version-2 layout,
    no files)."""
    table.reload()
    if metadata_table(table) is not None or any(c in table.base for c in _URI_CHARS):
        return None
    path = table.timeline.path_of(clean, State.REQUESTED)
    data = table.storage.read(path)
    if not data:  # an empty plan: begin_clean reads it as one that deletes nothing
        return None
    slices = read_slices(data, path=path)
    if slices is None or not slices.slices:
        return None
    containment = table.containment
    for partition in slices.header.partitions_to_delete:
        containment.partition_path(partition)
    dealt = shares(path, data, slices.slices, shares_wanted)
    unchecked = [(status.path, status.size, status.mtime_ms, codec) for status, codec in table.unchecked_state_files()
                 if status.path != path]
    unchecked.sort(key=lambda file: -file[1])  # the largest first, dealt round the shares
    dealt = tuple(share._replace(state_files=tuple(unchecked[i::len(dealt)])) for i, share in enumerate(dealt))
    return data, slices, dealt, read_protection(table)


def shares(path: str, data: bytes, slices: Sequence[PartitionSlice], wanted: int) -> tuple[Share, ...]:
    """Contiguous runs of partitions with about the same number of files each: a run ends
    where a partition's middle file would pass the next of `wanted` even boundaries."""
    total = sum(s.files for s in slices)
    count = max(1, min(wanted, len(slices)))
    found: list[Share] = []
    run: list[PartitionSlice] = []
    taken = 0
    for piece in slices:
        boundary = total * (len(found) + 1) / count
        if run and len(found) < count - 1 and taken + piece.files / 2 > boundary:
            found.append(_share(path, data, run))
            run = []
        run.append(piece)
        taken += piece.files
    found.append(_share(path, data, run))
    return tuple(found)


def _share(path: str, data: bytes, run: Sequence[PartitionSlice]) -> Share:
    start, end = run[0].start, run[-1].end
    return Share(path, start, end, digest_of(data, start, end),
                 tuple((s.partition, s.start - start, s.end - start) for s in run))


def _read_share(storage: Storage, share: Share) -> bytes:
    with storage.reader(share.plan_path) as handle:
        handle.seek(share.start)
        data = handle.read(share.end - share.start)
    if len(data) != share.end - share.start or digest_of(data, 0, len(data)) != share.digest:
        raise ValueError(f"bytes {share.start}-{share.end} of the plan are not those the driver read "
                         "(the file changed)")
    return bytes(data)


def _files_of(data: bytes, share: Share) -> Iterator[tuple[str, list[tuple[str | None, bool | None]]]]:
    view = memoryview(data)
    for partition, start, end in share.partitions:
        yield partition, decode_files(view[start:end])


def _irregular(root: str, partition: str, files: list[tuple[str | None, bool | None]]
               ) -> tuple[list[str], list[str], str]:
    """The plan's paths and their file names, or why the partition's files are not named the
    regular way (each `<folder><name>` once, none a bootstrap source file)."""
    folder = folder_of(root, partition)
    paths = [p for p, _ in files]
    if any(c in partition for c in (":", *_URI_CHARS)):
        return [], [], f"the partition {partition!r} holds a character a URI parser reads"
    if any(flag for _, flag in files):
        return [], [], "it deletes bootstrap source files"
    if None in paths:
        return [], [], "a file entry names no path"
    cut = len(folder)
    if not all(p.startswith(folder) for p in paths):  # type: ignore[union-attr]  # None ruled out above
        return [], [], f"a file is not named in its partition's folder {folder}"
    names = [p[cut:] for p in paths]  # type: ignore[index]  # None ruled out above
    if any(not n or any(c in n for c in _NOT_IN_NAMES) for n in names):
        return [], [], f"a file is not named directly in its partition's folder {folder}, by a plain name"
    if len(set(names)) != len(names):
        return [], [], "a file is named twice"
    return paths, names, ""  # type: ignore[return-value]  # None ruled out above


# What a URI parser reads in a path; a regular partition or file name holds none of them, nor a
# colon, and a file name no folder separator (so that a file's store path is its folder's store
# path and its name, `_clean_partition`).
_URI_CHARS = ("%", "?", "#", "\\", "\x00")
_NOT_IN_NAMES = ("/", ":", *_URI_CHARS)


def folder_of(root: str, partition: str) -> str:
    return f"{root}{partition}/" if partition else root


def check_share(uri: str, s3: Any, root: str, protection: Protection, share: Share) -> Checked:
    """Runs on a worker: step 2 for one share."""
    from timeline.storage import storage_for

    storage, base = storage_for(uri, s3=s3)
    try:
        for path, size, _, codec in share.state_files:
            try:
                check_state_file_at(storage, path, size, codec, stream_above=WORKER_STREAM_CHECK_BYTES)
            except CorruptInstantError as exc:
                return Checked(0, corrupt_state=(exc.path, exc.reason))
        data = _read_share(storage, share)
    except StorageError as exc:
        return Checked(0, unreadable=(exc.path, exc.reason))
    except ValueError as exc:  # not the bytes the driver read
        return Checked(0, corrupt=str(exc))
    containment = Containment(storage, base, uri)
    conflicts: list[str] = []
    files = 0
    try:
        decoded = list(_files_of(data, share))
    except (ValueError, IndexError) as exc:  # UnicodeDecodeError is a ValueError
        return Checked(0, corrupt=f"invalid Avro container: {exc!r}")
    for partition, infos in decoded:
        paths, _, irregular = _irregular(root, partition, infos)
        if irregular:
            return Checked(files, irregular=f"{partition}: {irregular}")
        files += len(paths)
        try:
            containment.check_data_paths(paths)
        except OutsideTableError as exc:
            return Checked(files, outside=(exc.entry, exc.reason))
        conflicts += conflicts_with(protection, zip(repeat(partition), paths))
    return Checked(files, conflicts=tuple(conflicts[:CONFLICTS_SHOWN]), conflict_count=len(conflicts))


def clean_share(uri: str, s3: Any, root: str, plan: CleanerPlan, share: Share, *,
                identity: FolderIdentity | None = None) -> Iterator[Cleaned]:
    """Runs on a worker: step 3 for one share, a partition at a time, through the table's folder
    the driver holds (`identity`), when it holds one."""
    from timeline.storage import storage_for

    storage, _ = storage_for(uri, s3=s3, anchored=identity)
    doomed = frozenset(plan.partitions_to_delete)
    for partition, infos in _files_of(_read_share(storage, share), share):
        folder = folder_of(root, partition)
        _, names, irregular = _irregular(root, partition, infos)
        if irregular:  # checked before: the file changed
            raise ValueError(f"{partition}: {irregular}")
        if not names:  # no outcome, so no entry in the completed clean (executor.clean_metadata)
            yield Cleaned(partition, b"", [], None, {})
            continue
        yield _clean_partition(storage, partition, storage.path_of(folder), names, plan.policy, partition in doomed)


def _clean_partition(storage: Storage, partition: str, folder: str, names: list[str], policy: str,
                     doomed: bool) -> Cleaned:
    paths = [folder + n for n in names]  # storage.path_of of each plan path: plain names (_NOT_IN_NAMES)
    known = storage.sizes_of(paths)
    answers = storage.delete_many(paths)
    codes: list[str] = []
    sizes: list[int] = []
    errors: dict[int, str] = {}
    ok: list[str] = []
    failed: list[str] = []
    for index, (path, name) in enumerate(zip(paths, names)):
        answer = answers.get(path, "failed: no answer from the store")
        if answer == "deleted":
            sizes.append(known.get(path, 0))
            ok.append(name)
        elif answer == "gone":
            sizes.append(0)
            ok.append(name)  # listed deleted, as Hudi does (apache/hudi#18035)
        else:
            sizes.append(0)
            failed.append(name)
            errors[index] = answer.removeprefix("failed: ")
        codes.append(answer if answer in ("deleted", "gone") else "failed")
    entry = encode_partition_entry(CleanPartitionMetadata(partition, policy, tuple(names), tuple(ok), tuple(failed),
                                                          doomed))
    return Cleaned(partition, entry, sizes, None if all(c == "deleted" for c in codes) else codes, errors)


def finish(table: Table, begun: Begun, cleaned: Sequence[Cleaned], started: float) -> CleanResult:
    """Delete the plan's partitions, then publish the completed clean (`executor.finish_clean`:
    no metadata table to update here), its record joined from the workers' entries."""
    clean, plan = begun.clean, begun.plan
    containment = table.containment
    for partition in plan.partitions_to_delete:
        table.storage.delete_dir(containment.partition_path(partition))
    cleaned = [c for c in cleaned if c.entry]  # a partition listed with no files has no entry
    outcomes = OutcomeColumns(begun.root, cleaned)
    deleted, gone, failed, size = outcomes.totals
    ectr = plan.earliest_instant_to_retain
    metadata = CleanMetadata(
        start_clean_time=clean.requested_time, time_taken_ms=int((time.monotonic() - started) * 1000),
        total_files_deleted=deleted + gone, earliest_commit_to_retain="" if ectr is None else ectr.time,
        last_completed_commit=plan.last_completed_commit, extra_metadata=dict(plan.extra_metadata),
        version=CLEAN_METADATA_VERSION)  # its partitions: the workers' entries, joined as they are
    completed = transition.complete(table, clean, encode_clean_metadata(metadata, [c.entry for c in cleaned]))
    metadata = replace(metadata, partitions=EncodedPartitions(cleaned))
    return CleanResult(completed, outcomes, metadata, (deleted, gone, failed, size))


_STATUS = {s.value: s for s in Status}


class OutcomeColumns(Sequence[FileOutcome]):
    """A clean's outcomes as its workers sent them (per partition: names in its metadata entry,
    sizes, statuses), made into FileOutcomes only when read."""

    def __init__(self, root: str, cleaned: Sequence[Cleaned]) -> None:
        self._root = root
        self._cleaned = cleaned
        deleted = gone = failed = size = 0
        for c in cleaned:
            size += sum(c.sizes)
            if c.codes is None:
                deleted += len(c.sizes)
            else:
                deleted += c.codes.count("deleted")
                gone += c.codes.count("gone")
                failed += c.codes.count("failed")
        self.totals = (deleted, gone, failed, size)
        self._length = deleted + gone + failed

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[FileOutcome]:
        for c in self._cleaned:
            metadata = decode_partition_entry(c.entry)
            folder = folder_of(self._root, c.partition)
            statuses = repeat(Status.DELETED) if c.codes is None else map(_STATUS.__getitem__, c.codes)
            for index, (name, status, size) in enumerate(zip(metadata.delete_path_patterns, statuses, c.sizes)):
                yield FileOutcome(c.partition, folder + name, status, False, size, c.errors.get(index, ""))

    def __getitem__(self, index: Any) -> Any:
        return list(self)[index]


class EncodedPartitions(Mapping[str, CleanPartitionMetadata]):
    """The completed clean's `partitionMetadata` as a mapping, each entry decoded when read."""

    def __init__(self, cleaned: Sequence[Cleaned]) -> None:
        self._entries = {c.partition: c.entry for c in cleaned}

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __getitem__(self, partition: str) -> CleanPartitionMetadata:
        return decode_partition_entry(self._entries[partition])
