"""One look at a table for every finding module: what the diagnosis reads, each piece read at
most once and only when a module asks for it (the timeline, one listing of the partitions,
the archived timeline with its payloads, the heartbeats, the marker folders), as of one moment
`now`. Nothing here writes."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import NamedTuple

from timeline.committed import CommittedFiles, committed_files
from timeline.doctor.history import ArchiveRead, read_archive
from timeline.exceptions import (
    CleanlineError,
    CorruptInstantError,
    FileNotFound,
    InvalidFileNameError,
    InvalidInstantError,
)
from timeline.files import BASE_FILE_EXTENSIONS, parse_log_file
from timeline.fsview import TableListing, list_partitions, list_some_files
from timeline.instant import (
    CLUSTERING,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    State,
    instant_time_from_epoch_ms,
    moment_of,
    split_file_name,
    zone_of,
)
from timeline.locks.discovery import writer_properties
from timeline.locks.live import live_writers, liveness_window_ms
from timeline.metadata.references import References, references_in, references_of
from timeline.perf import paused_gc
from timeline.storage import FileStatus, Storage
from timeline.table import PLANNED_ACTIONS, Table
from timeline.timeline import WRITE_ACTIONS, ActiveTimeline

HEARTBEAT_FOLDER = (".hoodie", ".heartbeat")   # HoodieTableMetaClient.HEARTBEAT_FOLDER_NAME
MARKER_FOLDER = (".hoodie", ".temp")           # HoodieTableMetaClient.TEMPFOLDER_NAME
# CleanupStaleInflightCommitsProcedure's allowed_inflight_interval_minutes default
DEFAULT_STALE_AFTER = timedelta(minutes=180)
# How old an unreferenced file must be before it counts as an orphan (at least: the horizon is
# also before the oldest pending instant and the writers' heartbeat window); Iceberg's
# remove_orphan_files keeps three days by default.
DEFAULT_ORPHAN_MIN_AGE = timedelta(days=3)
# Commits a clean may cover before the doctor calls it lagging, and the commits per capped clean
# when the table sets no `hoodie.clean.max.commits.to.clean`.
DEFAULT_CLEAN_LAG_COMMITS = 100
# State files larger than this are read as streams (a 200 MB commit decodes to gigabytes).
WHOLE_FILE_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class DoctorSettings:
    """The doctor's thresholds. `options` are Hudi writer options over `hoodie.properties` (the
    heartbeat interval and misses, the failed-writes policy, `hoodie.clean.*`, as the table's
    writers are given them). `include_ingestion_commits`: the operator's explicit word that a
    stale commit or delta commit may be rolled back although its writer keeps no heartbeat
    (EAGER policy), as Hudi's `cleanup_stale_inflight_commits(include_ingestion_commits => true)`,
    which its documentation calls dangerous: a writer still running a long write loses it.
    `index_full` / `index_sample_keys`: the index check's full record-index check, or its sample size."""

    stale_after: timedelta = DEFAULT_STALE_AFTER
    orphan_min_age: timedelta = DEFAULT_ORPHAN_MIN_AGE
    clean_lag_commits: int = DEFAULT_CLEAN_LAG_COMMITS
    max_commits_per_clean: int | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    include_ingestion_commits: bool = False
    # index-drift (timeline/doctor/indexes.py): check every record key (`index_full`) rather than
    # a sample of file groups holding about `index_sample_keys` keys on larger tables.
    index_full: bool = False
    index_sample_keys: int = 200_000


def duration(span: timedelta) -> str:
    """A threshold as a person reads it: "3 days", "180 minutes", "45 seconds"."""
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86_400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


class DataFile(NamedTuple):
    """A base or log file of the listing, parsed: its partition, status, file id, the instant
    its name carries (a base file's commit; a log file's base instant on table version 6, its
    delta commit on 8+), and whether it is a log file."""

    partition: str
    status: FileStatus
    file_id: str
    instant: str
    is_log: bool


_BASE_ENDINGS = tuple(sorted(BASE_FILE_EXTENSIONS))
_new = tuple.__new__  # a DataFile without its Python-level __new__: this runs once per listed file


def parse_data_file(partition: str, status: FileStatus) -> DataFile | None:
    """A listed file as a base or log file (what Hudi's repair tools consider, FSUtils.
    isDataFile), or None for anything else (partition metadata, checksums, ...)."""
    parsed = parse_data_name(status.name)
    return None if parsed is None else _new(DataFile, (partition, status, *parsed))


def parse_data_name(name: str) -> tuple[str, str, bool] | None:
    """`parse_data_file` of a file's name alone: (its file id, its instant, whether it is a log
    file), or None for anything but a base or log file."""
    try:
        if name[0] == ".":
            if ".log." not in name:
                return None
            log = parse_log_file(name)
            return log.file_id, log.instant_time, True
    except InvalidFileNameError:
        return None
    # a base file (`timeline/files.py`'s `is_base_file_name`: its last extension one of a base
    # file's, which for a name not starting with "." is ending in one; then `base_file_of`: the
    # file id before the first "_", the instant from the third field up to its first "."),
    # inlined: this runs once per file a repair re-checks
    if not name.endswith(_BASE_ENDINGS):
        return None
    file_id, _, rest = name.partition("_")
    instant = rest.partition("_")[2].partition(".")[0]
    return (file_id, instant, False) if instant else None


@dataclass(slots=True)
class StateFiles:
    """What the active timeline's state files name, the completed writes without write
    details, and the checked state files that do not decode (path -> why)."""

    references: References = field(default_factory=References)
    without_details: set[str] = field(default_factory=set)
    errors: dict[str, str] = field(default_factory=dict)
    committed: set[str] = field(default_factory=set)  # what completed writes' write stats name


class Survey:
    """What the finding modules read, as of `now` (an aware datetime, not later than the
    clock: a diagnosis as of the past only keeps more)."""

    def __init__(self, table: Table, *, now: datetime | None = None, settings: DoctorSettings | None = None,
                 only: Collection[str] | None = None) -> None:
        clock = datetime.now(UTC)
        if now is not None and now.tzinfo is None:
            raise ValueError("now must carry a time zone")
        if now is not None and now > clock + timedelta(seconds=1):
            raise ValueError(f"now ({now.isoformat()}) is later than the clock: a diagnosis as of the future "
                             "would take files being written for old ones")
        self.table = table.reload()
        self.now = now or clock
        self.now_ms = int(self.now.timestamp() * 1000)
        self.settings = settings or DoctorSettings()
        # A repair's re-check under the lock (`Session.survey`): the listing holds only these files
        # (backend paths), from one listing of each folder they are in.
        self.only = None if only is None else frozenset(only)

    @property
    def storage(self) -> Storage:
        return self.table.storage

    @cached_property
    def props(self) -> dict[str, str]:
        """The writers' settings: `hoodie.properties` under the root's and the doctor's options
        (`writer_properties`, as the lock is found)."""
        return writer_properties(self.table, self.settings.options)

    @cached_property
    def timeline(self) -> ActiveTimeline:
        return self.table.timeline

    @cached_property
    def listing(self) -> TableListing:
        """One listing of the table's partitions, without a size or time per file where the
        storage would have to ask for each (a local disk): `sized` asks for the few that need it.
        With `only`: those files alone as `list_partitions` would find them, each folder they are
        in listed once, with sizes (no status call per file after it)."""
        with paused_gc():
            if self.only is not None:
                wanted = self.only
                found = list_some_files(self.storage, self.table.base, wanted)
                return TableListing({partition: files for partition, files in found.partitions.items() if files})
            return list_partitions(self.storage, self.table.base, sizes=False)

    @cached_property
    def sized_listing(self) -> TableListing:
        """The listing with every file's size (what a comparison of sizes needs)."""
        if all(s.size >= 0 for files in self.listing.partitions.values() for s in files):
            return self.listing
        return self.table.list_partitions()

    def sized(self, status: FileStatus) -> FileStatus:
        """A listed file with its size and modification time (one status call when the listing
        left them unknown); the same status with size -1 when the file is gone meanwhile."""
        if status.size >= 0 and status.mtime_ms >= 0:
            return status
        try:
            return self.storage.status(status.path)
        except FileNotFound:
            return status

    def files_written_at(self, times: set[str]) -> dict[str, list[DataFile]]:
        """The base and log files whose names carry one of `times` (their instant), by time."""
        found: dict[str, list[DataFile]] = {t: [] for t in times}
        if not times:
            return found
        for partition, files in self.listing.partitions.items():
            for status in files:
                if any(t in status.name for t in times):
                    data = parse_data_file(partition, status)
                    if data is not None and data.instant in found:
                        found[data.instant].append(data)
        return found

    @cached_property
    def state_files(self) -> StateFiles:
        """Every state file of the active timeline read once: what each names, the completed
        writes without write details, and the files `Table.ensure_intact` checks that do not
        decode (those that do are noted intact, so a clean planned next does not decode them
        again)."""
        table, timeline, storage = self.table, self.timeline, self.storage
        checked = {status.path for status, _ in table.unchecked_state_files()}
        layout = table.config.layout_version
        found = StateFiles()
        for instant in timeline:
            ensured = (State.COMPLETED if instant.is_completed
                       else State.REQUESTED if instant.action in PLANNED_ACTIONS else None)
            for state, status in timeline.files_of(instant).items():
                if status.size == 0:
                    if state is State.COMPLETED and instant.action in WRITE_ACTIONS:
                        found.without_details.add(instant.requested_time)  # Hudi: "no instant details"
                    continue
                action = split_file_name(status.name, layout)[1]  # a completed compaction's plan is a compaction's
                try:
                    if status.size > WHOLE_FILE_BYTES:
                        named = self._streamed(status, action, state)
                    else:
                        named = references_in(storage.read(status.path), path=status.path, action=action,
                                              state=state, layout=layout)
                except CorruptInstantError as exc:
                    if state is ensured:
                        found.errors[status.path] = exc.reason
                    continue
                except CleanlineError as exc:
                    if state is ensured:
                        found.errors[status.path] = str(exc)
                    continue
                found.references.update(named)
                if state is State.COMPLETED and instant.action in WRITE_ACTIONS:
                    found.committed |= named.names
                    if not named.details:
                        found.without_details.add(instant.requested_time)
                if status.path in checked:
                    table.note_intact(status)
        return found

    def _streamed(self, status: FileStatus, action: str, state: State) -> References:
        """What a state file too large to hold names, read as a stream (commit metadata: its
        write stats one at a time; anything else decoded whole after the intact check)."""
        self.table.check_state_file(status.path, status.size)
        if self.table.streams_write_stats(status.path):
            found = References(details=False)
            with self.table.stream_write_stats(status.path) as entries:
                for _, stat in entries or ():
                    if stat is not None:
                        found.details = True
                        found.names.add(stat.file_name)
                        found.file_ids.add(stat.file_id)
            if action in (REPLACE_COMMIT, CLUSTERING):  # its replaced file ids are another map
                found.update(references_of(self.table.read_state_file(status.path), action=action, state=state))
            return found
        return references_of(self.table.read_state_file(status.path), action=action, state=state)

    @cached_property
    def archive(self) -> ArchiveRead:
        return read_archive(self.table)

    @cached_property
    def known_instants(self) -> frozenset[str]:
        """Every instant time the timelines know: on the active timeline (any state), archived,
        named by a payload (rolled back, restored) or by a completed rollback or restore."""
        named = self.state_files.references.instants | self.archive.references.instants
        return frozenset({i.requested_time for i in self.timeline} | set(self.archive.instants) | named
                         | set(self.rolled_back))

    @cached_property
    def committed(self) -> CommittedFiles:
        """Which files are committed (`timeline/committed.py`), over the active and archived
        timelines: the drift check and the orphan check read this one answer."""
        return committed_files(self.state_files.committed | self.archive.committed, self.known_instants,
                               (i.requested_time for i in self.timeline.pending()))

    @cached_property
    def heartbeat_window_ms(self) -> int:
        return liveness_window_ms(self.props)

    @cached_property
    def heartbeats(self) -> dict[str, FileStatus]:
        """`.hoodie/.heartbeat/<instant>` files by instant time."""
        return {s.name: s for s in self._children(*HEARTBEAT_FOLDER) if not s.is_dir}

    @cached_property
    def marker_folders(self) -> dict[str, FileStatus]:
        """`.hoodie/.temp/<instant>` folders by instant time."""
        return {s.name: s for s in self._children(*MARKER_FOLDER) if s.is_dir}

    def _children(self, *parts: str) -> list[FileStatus]:
        folder = self.table.path(*parts)
        try:
            return self.storage.list(folder) if self.storage.exists(folder) else []
        except FileNotFound:
            return []

    @cached_property
    def live(self) -> frozenset[str]:
        """The instants a writer is running now, as `timeline/locks/live.py`'s `live_writers`
        finds them at `now` (a fresh heartbeat of an unfinished instant, or a pending write just
        requested): never stale, and none of their files an orphan. A superset of
        `timeline/failed_writes.py`'s `live_writes`, whose rule it shares."""
        return frozenset(w.requested_time for w in live_writers(self.table, self.props, now_ms=self.now_ms))

    def heartbeat_alive(self, instant_time: str) -> bool:
        """HoodieHeartbeatClient.isHeartbeatExpired, negated, at `now`: touched within the
        heartbeat interval x tolerable misses (a missing heartbeat counts as expired)."""
        beat = self.heartbeats.get(instant_time)
        return beat is not None and 0 < beat.mtime_ms and self.now_ms - beat.mtime_ms <= self.heartbeat_window_ms

    @cached_property
    def rolled_back(self) -> dict[str, str]:
        """Instants named by the active timeline's completed rollbacks and restores -> the
        rollback or restore naming them."""
        found: dict[str, str] = {}
        for instant in self.timeline.completed().with_actions({ROLLBACK, RESTORE}):
            try:
                raw = self.table.read_instant(instant)
            except CleanlineError:
                continue
            for named in references_of(raw, action=instant.action, state=instant.state).instants:
                found.setdefault(named, f"{instant.action} {instant.requested_time}")
        return found

    @cached_property
    def finished(self) -> dict[str, str]:
        """Instants whose writer is done with them -> how: completed on the active timeline,
        archived, or rolled back (by a completed rollback or restore). A pending instant is
        never finished."""
        pending = {i.requested_time for i in self.timeline.pending()}
        found = {i.requested_time: "completed" for i in self.timeline.completed()}
        for time_ in self.archive.instants:
            found.setdefault(time_, "archived")
        for time_, by in self.rolled_back.items():
            found.setdefault(time_, f"rolled back by {by}")
        return {t: how for t, how in found.items() if t not in pending}

    def moment_ms(self, instant_time: str) -> int | None:
        """An instant time as epoch milliseconds in the table's timeline zone (None if it is
        not a time)."""
        try:
            return int(moment_of(instant_time[:17], self.table.config.timezone).timestamp() * 1000)
        except InvalidInstantError:
            return None

    def instant_at(self, epoch_ms: int) -> str:
        """An epoch time as a 17-digit instant time in the table's timeline zone."""
        return instant_time_from_epoch_ms(epoch_ms, zone_of(self.table.config.timezone))

    def age_seconds(self, epoch_ms: int) -> int:
        return max(0, (self.now_ms - epoch_ms) // 1000)


