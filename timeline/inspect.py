"""`HudiTable.inspect`: everything the console and the CLI read about a table, as typed
results, in the manner of PyIceberg's `table.inspect`. Each answer comes from the one module
that holds its rule; this namespace only gathers them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from timeline.archive.plan import ArchivalPlan, plan_archival
from timeline.archived_timeline import load_archived_timeline
from timeline.changes import TimelineChanges, timeline_changes
from timeline.clean.protection import Protection, read_protection, why_protected
from timeline.fsview import FileGroup, FileSlice, FileSystemView
from timeline.instant import Instant, State
from timeline.locks.discovery import LockDiscovery, discover_lock
from timeline.locks.live import LiveWriter, live_writers
from timeline.mdt.reader import MetadataTableMissing, MetadataTableState, metadata_table
from timeline.mdt.validate import Validation, validate_files
from timeline.metadata import STREAM_CHECK_BYTES
from timeline.metadata.records import CleanMetadata, CommitMetadata, Record, SavepointMetadata, WriteStat
from timeline.restore import RestorePreview, preview_restore
from timeline.rollback import FailedWrite, preview_failed_writes
from timeline.savepoint import SavepointInfo, list_savepoints, savepoint_candidates
from timeline.services import CompactionWhy, TableServices, table_services, why_not_compacting
from timeline.timeline import ActiveTimeline, Timeline
from timeline.versions import VersionCheck, version_check

if TYPE_CHECKING:
    from datetime import datetime

    from timeline.doctor import DoctorSettings, Finding
    from timeline.table import Table


@dataclass(frozen=True, slots=True)
class SliceProtection:
    """One file slice and why no clean may take it now (None: only the policy decides)."""

    group: FileGroup
    slice: FileSlice
    protected_by: str | None


@dataclass(frozen=True, slots=True)
class StateFile:
    """One state file of an instant: its payload as Hudi wrote it (`content`, for the JSON
    view) and as a typed record (None for an empty file). A file left unread for its size
    (`Inspect.state_file`'s `decode_up_to`) has `decoded` False, no content and no record;
    `streams_write_stats` then says whether `Inspect.write_stats` reads its write stats as a
    stream. `size` is -1 where it was not asked for."""

    state: State
    path: str
    content: dict[str, Any] | None
    record: Record | None = None
    size: int = -1
    decoded: bool = True
    streams_write_stats: bool = False


@dataclass(frozen=True, slots=True)
class InstantSummary:
    """What a completed instant's metadata reports: partitions and files touched (written,
    deleted by a clean or held by a savepoint), records and bytes written."""

    partitions: int = 0
    files: int = 0
    records: int | None = None
    bytes: int | None = None

    @classmethod
    def of(cls, record: Record | None) -> InstantSummary | None:
        if isinstance(record, CommitMetadata) and record.has_write_stats:
            stats = record.stats()
            return cls(len(record.write_stats), len(stats), sum(s.num_writes for s in stats),
                       sum(s.total_write_bytes for s in stats))
        if isinstance(record, CleanMetadata):
            return cls(len(record.partitions), record.total_files_deleted)
        if isinstance(record, SavepointMetadata):
            return cls(len(record.files), len(record.file_names()))
        return None

    @classmethod
    def streamed(cls, entries: Iterable[tuple[str, WriteStat | None]]) -> InstantSummary:
        """What `of` reports for commit metadata, from its write stats read as a stream
        (`HudiTable.stream_write_stats`): nothing is kept but the sums."""
        partitions = files = records = written = 0
        for _, stat in entries:
            if stat is None:
                partitions += 1
            else:
                files += 1
                records += stat.num_writes
                written += stat.total_write_bytes
        return cls(partitions, files, records, written)


class WriteStatsSink(Protocol):
    """Where `Inspect.summary` hands a completed commit's write stats as it sums them, so that
    a caller indexes a huge commit in the same single pass (the console's write-stats index):
    `wants` is asked with the file's path and size; when it answers True and the file is commit
    metadata read as a stream, `add` takes each stat in the file's order and `done` follows
    the last one."""

    def wants(self, path: str, size: int) -> bool: ...

    def add(self, partition: str, stat: WriteStat) -> None: ...

    def done(self) -> None: ...


def _handed(entries: Iterable[tuple[str, WriteStat | None]],
            sink: WriteStatsSink) -> Iterator[tuple[str, WriteStat | None]]:
    """`entries` as they are, each stat handed to `sink` on the way."""
    for partition, stat in entries:
        if stat is not None:
            sink.add(partition, stat)
        yield partition, stat


class Inspect:
    """Read-only questions about one table."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def instants(self) -> Timeline:
        """The active timeline, oldest first."""
        return self.table.timeline

    def archived_instants(self) -> Timeline:
        return load_archived_timeline(self.table)

    def timeline_changes(self, previous: Collection[str] | None,
                         known: Callable[[frozenset[str]], Collection[str]] | None = None,
                         watched: Mapping[str, Sequence[int]] | None = None) -> TimelineChanges:
        """The active timeline's instants whose state files came or went since the timeline
        folder held the names `previous` (None: every instant), read and checked without
        loading the rest; `known(times)`: which of those times had instants then; `watched`: the
        newest files' sizes and times then (`timeline.changes`)."""
        return timeline_changes(self.table, previous, known, watched)

    def archive_fingerprint(self) -> str:
        """A hash of the archived timeline's folder listing (names, sizes, modification times;
        "" when there is none): while it is unchanged, so is the archived timeline."""
        folder = self.table.path(self.table.config.archive_folder)
        if not self.table.storage.exists(folder):
            return ""
        digest = hashlib.sha256()
        for status in sorted(self.table.storage.list(folder), key=lambda s: s.name):
            digest.update(f"{status.name}|{status.is_dir}|{status.size}|{status.mtime_ms}\n".encode())
        return digest.hexdigest()

    def archival(self, options: Mapping[str, str] | None = None) -> ArchivalPlan:
        """What archival would move off the active timeline now and what blocks the rest
        (savepoints, pending instants, the cleaner's window, the metadata table's compaction, a
        broken LSM history, archival switched off), as Hudi's archiver of the table's version
        decides (`timeline.archive.plan`). `options` are Hudi writer options
        (`hoodie.keep.min.commits`, `hoodie.keep.max.commits`, `hoodie.archive.beyond.savepoint`,
        the cleaner's settings, ...) over the root's `CLEANLINE_HUDI_OPTIONS` and
        `hoodie.properties`; with a metadata table, its own archival's plan too
        (`ArchivalPlan.metadata_table`). Reads only."""
        return plan_archival(self.table, options=options)

    def state_files(self, instant: Instant) -> list[StateFile]:
        """Every state file of an instant, newest state first, read by name (the timeline is
        not loaded, so a page about one instant stays cheap on a large table)."""
        found = sorted(self.table.state_files(instant).items(), reverse=True)
        return [self.state_file(state, path) for state, path in found]

    def state_file(self, state: State, path: str, *, decode_up_to: int | None = None) -> StateFile:
        """One state file (`HudiTable.state_files` names them). With `decode_up_to`, a file
        larger than that many bytes is not read: its size comes back, and whether its write
        stats can be read as a stream (`write_stats`), so that a page about a huge commit
        never holds it whole."""
        if decode_up_to is not None:
            size = self.table.storage.status(path).size
            if size > decode_up_to:
                return StateFile(state, path, None, None, size, decoded=False,
                                 streams_write_stats=self.table.streams_write_stats(path))
        else:
            size = -1
        raw = self.table.read_state_file(path)
        return StateFile(state, path, raw, None if raw is None else self.table.record_of(path, raw), size)

    def open_state_file(self, path: str) -> BinaryIO:
        """A state file (`HudiTable.state_files` names them) open for reading in chunks, as
        Hudi wrote it: a download that never holds the file whole. Close it after."""
        return self.table.storage.reader(path)

    def write_stats(self, path: str, *, partition: str | None = None, start: int = 0,
                    count: int | None = None) -> list[WriteStat]:
        """The write stats of the commit metadata at `path` from the `start`-th (of `partition`
        only, if given), at most `count` of them. Commit metadata (v6 JSON, v8+ Avro) is read as
        a stream and only as far as the last stat wanted, so memory stays that of the stats
        returned; anything else is decoded whole (and has none)."""
        stop = None if count is None else start + count
        if self.table.streams_write_stats(path):
            with self.table.stream_write_stats(path) as entries:
                stats = (s for p, s in entries or () if s is not None and (partition is None or p == partition))
                return list(islice(stats, start, stop))
        record = self.table.read_record_file(path)
        if not isinstance(record, CommitMetadata):
            return []
        every = record.stats() if partition is None else list(record.write_stats.get(partition, ()))
        return every[start:stop]

    def record(self, instant: Instant, state: State | None = None) -> Record | None:
        """The typed record of an instant in `state` (its own by default); None when empty."""
        return self.table.read_record_file(self.table.timeline.path_of(instant, instant.state if state is None
                                                                       else state))

    def summary(self, instant: Instant, timeline: Timeline | None = None, *,
                sink: WriteStatsSink | None = None) -> InstantSummary | None:
        """What a completed instant reports (None for a pending one or one that reports nothing);
        its state files found on `timeline` (default the table's; `TimelineChanges.timeline`).
        Commit metadata of a size `sink` wants (`WriteStatsSink`) is read as a stream and its
        stats handed to the sink while they are summed."""
        if not instant.is_completed:
            return None
        found = timeline if isinstance(timeline, ActiveTimeline) else self.table.timeline
        status = found.files_of(instant).get(State.COMPLETED)
        if status is None:
            return InstantSummary.of(self.record(instant, State.COMPLETED))
        handed = sink if sink is not None and sink.wants(status.path, status.size) else None
        if (handed is not None or status.size > STREAM_CHECK_BYTES) and self.table.streams_write_stats(status.path):
            # a huge commit is summed as it is read, never held (a 200 MB commit decodes to GBs)
            with self.table.stream_write_stats(status.path) as entries:
                if entries is None:  # no write stats (an index of none)
                    if handed is not None:
                        handed.done()
                    return None
                summed = InstantSummary.streamed(entries if handed is None else _handed(entries, handed))
            if handed is not None:
                handed.done()
            return summed
        return InstantSummary.of(self.table.read_record_file(status.path))

    def clean_report(self, instant: Instant) -> CleanMetadata:
        """A completed clean's HoodieCleanMetadata: per partition the files it deleted or failed to."""
        return self.table.read(instant, CleanMetadata)

    def file_system_view(self, *, as_of: str | None = None) -> FileSystemView:
        return self.table.file_system_view(as_of=as_of)

    def protection(self) -> Protection:
        return read_protection(self.table)

    @staticmethod
    def why_protected(group: FileGroup, piece: FileSlice, protection: Protection) -> str | None:
        """What keeps a slice from any clean now (a savepoint, a pending table service)."""
        return why_protected(group, piece, protection)

    def file_slices(self, partition: str | None = None) -> Iterator[SliceProtection]:
        """Every committed slice of every file group with what protects it (a savepoint, a
        pending compaction, log compaction or clustering)."""
        protection = self.protection()
        for group in self.file_system_view().all_file_groups(partition):
            for piece in group.slices:
                yield SliceProtection(group, piece, why_protected(group, piece, protection))

    def savepoints(self) -> list[SavepointInfo]:
        return list_savepoints(self.table)

    def savepoint_candidates(self) -> list[Instant]:
        """The writes a savepoint may be asked for, newest first (`savepoint_candidates`)."""
        return savepoint_candidates(self.table)

    def restore_preview(self, savepoint: str) -> RestorePreview:
        return preview_restore(self.table, savepoint)

    def lock(self, options: Mapping[str, str] | None = None) -> LockDiscovery:
        """Which lock the table's writers use and where that came from (the call's `options`,
        the root's settings, `hoodie.properties`, a lock file found on storage, or none), with
        the effective settings (`timeline.locks.discovery`)."""
        return discover_lock(self.table, options)

    def live_writers(self, options: Mapping[str, str] | None = None) -> list[LiveWriter]:
        """The writes running now (a fresh heartbeat, or a pending write requested within the
        heartbeat window), newest first (`timeline.locks.live`)."""
        return live_writers(self.table, discover_lock(self.table, options).properties)

    def failed_writes(self, options: Mapping[str, str] | None = None) -> list[FailedWrite]:
        """The failed writes under the writers' failed-writes policy (`options`: their Hudi
        options over `hoodie.properties` and the root's), each with its rollback preview."""
        return preview_failed_writes(self.table, options=options)

    def table_services(self, options: Mapping[str, str] | None = None, *,
                       now: datetime | None = None) -> TableServices:
        """The pending compactions, log compactions and clusterings with their plans, the
        compaction backlog per file group and partition, the delta commits since the last
        compaction and the metadata table's compaction state (`timeline.services`); `options`
        are the writers' Hudi options over `hoodie.properties` and the root's."""
        return table_services(self.table, options=options, now=now)

    def why_not_compacting(self, options: Mapping[str, str] | None = None, *,
                           now: datetime | None = None) -> CompactionWhy:
        """Why a writer with the writers' `options` schedules no compaction now, each reason
        naming its setting or instant and what would change it (`timeline.services.why`)."""
        return why_not_compacting(self.table, options=options, now=now)

    def version_check(self, to: int, *, options: Mapping[str, str] | None = None) -> VersionCheck:
        """The preflight of moving the table to table version `to` (6, 8 or 9): every blocker
        Hudi's upgrade and downgrade handlers would meet, step by step, each naming its instant
        or setting, what clears it and the Hudi rule (`timeline.versions`); `options` are the
        writers' Hudi options. Reads only."""
        return version_check(self.table, to, options=options)

    def metadata_table(self) -> MetadataTableState:
        """The metadata table's partitions, last instant and file groups (`timeline.mdt`)."""
        mdt = metadata_table(self.table)
        if mdt is None:
            config = self.table.config
            return MetadataTableState(False, config.metadata_partitions, config.metadata_partitions_inflight)
        return mdt.state()

    def diagnose(self, *, now: datetime | None = None, kinds: Iterable[str] | None = None,
                 settings: DoctorSettings | None = None) -> list[Finding]:
        """What is wrong with the table, worst first, each finding with its evidence, why it
        matters and the repair it offers (`timeline.doctor.diagnose`); only reads."""
        from timeline.doctor import diagnose

        return diagnose(self.table, now=now, kinds=kinds, settings=settings)

    def validate_metadata_table(self) -> Validation:
        """The metadata table's file listing against storage (`cleanline mdt validate`);
        raises MetadataTableMissing when the table has none. Files are judged committed or not
        over the active and archived timelines, as the doctor judges them (`Survey.committed`)."""
        from timeline.doctor.survey import Survey

        mdt = metadata_table(self.table)
        if mdt is None:
            raise MetadataTableMissing(f"{self.table.uri}: the metadata table is not enabled")
        survey = Survey(self.table)
        return validate_files(mdt, listing=survey.sized_listing, committed=survey.committed)
