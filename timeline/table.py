"""`HudiTable`: the entry point to one table: its config, timelines, instant contents and
file-system view."""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self

from timeline import metadata
from timeline.archived_timeline import load_archived_timeline
from timeline.config import TableConfig, read_config
from timeline.fsview import FileGroupId, FileSystemView, TableListing, ViewInputs, build_view, list_partitions
from timeline.instant import (
    COMPACTION,
    COMPLETED_ACTION,
    LOG_COMPACTION,
    Instant,
    State,
    format_instant_time,
    parse_file_name,
    zone_of,
)
from timeline.metadata.records import (
    CommitMetadata,
    CompactionPlan,
    R,
    Record,
    SliceInfo,
    WriteStat,
    expect,
    hudi_fields,
    to_record,
)
from timeline.perf import paused_gc
from timeline.storage import Containment, FileStatus, FolderIdentity, Storage, storage_for
from timeline.timeline import ActiveTimeline, Timeline, load_active_timeline

if TYPE_CHECKING:
    from timeline.roots import LakeRoots
    from timeline.storage.s3 import S3Settings

# Pending instants whose requested file holds a plan that table services read.
PLANNED_ACTIONS = frozenset({"clean", "compaction", "logcompaction", "clustering", "replacecommit", "rollback",
                             "restore"})


# State files that decoded in this process, by URI, size and modification time (ensure_intact).
_INTACT: set[str] = set()
_INTACT_MAX = 1_000_000


class Table:
    """A Hudi table at a base path: its storage, `hoodie.properties`, timeline, containment and
    intact check, what every rule module works on. The active timeline is loaded once and kept
    until `reload()`; everything else is read on demand. A library user holds the `HudiTable`
    subclass (timeline/hudi_table.py), which adds the `inspect` and `maintenance` namespaces."""

    def __init__(self, storage: Storage, base: str, config: TableConfig) -> None:
        self.storage = storage
        self.base = base
        self.config = config
        self._timeline: ActiveTimeline | None = None
        self._archived_completion: dict[str, str] | None = None
        # Called before every state file `timeline.transition` publishes: while a state change
        # holds the table's lock, it checks the lock is still held (timeline/transactions.py).
        self.publish_check: Callable[[], None] | None = None
        # The base resolved by `ensure_located`: later containment checks hold paths against it.
        self._located: str | None = None
        self._containment: Containment | None = None  # one per location and loaded timeline
        # The folder `ensure_located` or `hold_folder` holds (local storage), for a run's workers to hold too.
        self.folder_identity: FolderIdentity | None = None
        self._held = False  # whether a run of this table object holds its folder (`hold_folder`)
        # While a state change holds the table's lock: how long a new instant time waits after
        # reading the clock (SkewAdjustingTimeGenerator; 0 without a lock).
        self.clock_skew_ms = 0
        # The table whose lock this one's writes are under, when not its own: a metadata table's
        # data table (timeline/mdt/reader.py), whose skew its new times wait out.
        self.lock_owner: Table | None = None
        # The settings the table was opened with (`open`), read by the layers below instead of
        # any process-wide setting: the S3 settings its store uses (None: not on S3), the Hudi
        # writer options given for it, and the lake-wide settings per root.
        self.storage_options: S3Settings | None = None
        self.hudi_options: dict[str, str] = {}
        self.roots: LakeRoots | None = None

    @classmethod
    def open(cls, uri: str, *, storage_options: S3Settings | None = None,
             hudi_options: Mapping[str, str] | None = None, roots: LakeRoots | None = None) -> Self:
        """Open the table at a URI or local path. Raises NotAHudiTableError or
        TableConfigError naming the path when there is no usable table.

        Configuration is passed, never read from a module: `storage_options` are the S3
        settings of an `s3://` table (else those of its root in `roots`, over the `AWS_*`
        environment); `hudi_options` are Hudi writer options given for this table (the lock's
        `hoodie.write.*`, over its root's and `hoodie.properties`, under a call's own);
        `roots` are the lake-wide settings per root (`timeline.roots.LakeRoots`: S3 settings
        and Hudi writer options, the longest root a table lies in applying)."""
        from timeline.roots import LakeRoots

        s3 = storage_options or (roots if roots is not None else LakeRoots()).storage_options_for(uri)
        table = cls.load(*storage_for(uri, s3=s3))
        table.storage_options, table.roots = s3, roots
        table.hudi_options = {k: str(v) for k, v in (hudi_options or {}).items()}
        return table

    @classmethod
    def load(cls, storage: Storage, base: str) -> Self:
        """Open the table at `base` inside an existing storage backend (with no settings of its
        own: `with_settings_of` gives it another table's)."""
        return cls(storage, base, read_config(storage, base))

    def with_settings_of(self, source: Table) -> Self:
        """This table, given the settings `source` was opened with (a metadata table its data
        table's, or the other way round: the same store and writers)."""
        self.storage_options, self.roots = source.storage_options, source.roots
        self.hudi_options = dict(source.hudi_options)
        return self

    @property
    def uri(self) -> str:
        return self.storage.uri(self.base)

    @property
    def containment(self) -> Containment:
        """The containment rule for paths this table's plans name (nothing outside the table):
        one object until the table is located again or reloaded, so that each folder a run's
        paths lie in is resolved and listed once (a run of N paths costs O(N))."""
        if self._containment is None:
            self._containment = Containment(self.storage, self.base, self.uri, resolved_base=self._located)
        return self._containment

    def ensure_located(self, *, roots: Iterable[str], identity: FolderIdentity | None = None) -> FolderIdentity | None:
        """Before a change to a table opened at its registered location (resolved then, so no
        symbolic link in it): refuse (`TableMovedError`, an OutsideTableError) when it now
        resolves elsewhere (its folder or a parent swapped for a symbolic link) or outside
        `roots`, or, on local storage, when its folder is not the one registered (`identity`,
        its device and inode). Once checked, the resolved base is pinned for containment, and
        the folder is opened and held (`Storage.anchor`): every delete, write and rename below it
        goes through that handle, so a swap after this check changes nothing outside the table
        and stops the change with TableMovedError. Returns the folder's identity (None on an
        object store), for the caller to record when it had none."""
        self._located = None
        self._containment = None
        self._located = self.containment.ensure_located(list(roots))
        self._containment = None
        self.folder_identity = self.storage.anchor(self.base, self.uri, identity)
        self._held = True
        return self.folder_identity

    def hold_folder(self) -> FolderIdentity | None:
        """At the start of every change (`Transactions.state_change`, which every run enters
        before its first change): hold the table's folder, as it resolves now, unless a run of
        this table object holds it already (`ensure_located`, which the console calls with its
        roots and the registered identity). No roots are checked here: a library or CLI run
        names its table itself. From then on every delete, write and rename below the folder
        goes through its handle (`Storage.anchor`), so a swap later in the run changes nothing
        outside the table and stops the run with TableMovedError. Returns the identity held
        (None on an object store). A base opened through a symbolic link holds the folder it leads
        to, answering for both paths; its workers (which open the base as given, not following a
        link) are then not given the identity to hold."""
        if self._held:
            return self.folder_identity
        resolved = self.storage.resolve(self.base)
        identity = self.storage.anchor(resolved, self.uri, alias=self.base)
        self.folder_identity = identity if resolved == posixpath.normpath(self.base) else None
        self._held = True
        return identity

    @property
    def version(self) -> int:
        return self.config.version

    @property
    def timeline(self) -> ActiveTimeline:
        if self._timeline is None:
            with paused_gc():
                self._timeline = load_active_timeline(self.storage, self.base, self.config)
        return self._timeline

    def reload(self) -> Self:
        """Forget the loaded timeline and config so the next access re-reads them."""
        self.config = read_config(self.storage, self.base)
        self._timeline = None
        self._archived_completion = None
        self._containment = None
        return self

    def ensure_intact(self) -> None:
        """Refuse to plan or mutate a table whose timeline holds an undecodable state file:
        every completed instant's metadata and every pending instant's non-empty plan must
        decode (Hudi fails on the same files when it reads them). Raises CorruptInstantError
        naming the file. `hoodie.properties` was checked when the config was read.

        A state file that decoded before in this process is not decoded again while its size
        and modification time are unchanged (a worker plans, approves and runs cleans of the
        same table over and over; the first check of a large table decodes every instant)."""
        for status, codec in self.unchecked_state_files():
            check_state_file_at(self.storage, status.path, status.size, codec)
            self.note_intact(status)

    def unchecked_state_files(self) -> list[tuple[FileStatus, dict[str, Any]]]:
        """The state files `ensure_intact` decodes now (none decoded in this process since it
        last changed), each with how it is decoded: an engine may check them on its workers
        (`check_state_file_at`) and `note_intact` them."""
        found = []
        for instant in self.timeline:
            if not instant.is_completed and instant.action not in PLANNED_ACTIONS:
                continue
            state = State.COMPLETED if instant.is_completed else State.REQUESTED
            status = self.timeline.files_of(instant).get(state)
            if status is None or status.size == 0:
                continue
            if self._intact_key(status.path, status.size, status.mtime_ms) not in _INTACT:
                found.append((status, self._codec_of(status.path)))
        return found

    def note_intact(self, status: FileStatus) -> None:
        """Record that the state file `status` describes decoded whole, by other means than
        `read` (a clean plan decoded in shares by Spark executors), so that `ensure_intact`
        does not decode it again while its size and modification time are unchanged."""
        if len(_INTACT) >= _INTACT_MAX:
            _INTACT.clear()
        _INTACT.add(self._intact_key(status.path, status.size, status.mtime_ms))

    def _intact_key(self, path: str, size: int, mtime_ms: int) -> str:
        storage = self.storage
        where = f"{id(storage)}:{path}" if storage.private_namespace else storage.uri(path)
        return f"{where}|{size}|{mtime_ms}"

    def new_instant_time(self, *, after: str = "") -> str:
        """A fresh instant time in the table's timeline zone, later than every time on the
        timeline (requested and completed) and than `after`, as Hudi's time generator makes
        them: the clock, or one millisecond past the latest time if the clock is behind. While
        the table's lock is held (`clock_skew_ms`), the clock is read and then the skew waited
        out before the time is returned, as `SkewAdjustingTimeGenerator` does (a metadata
        table's times: its data table's lock and skew, `lock_owner`)."""
        timeline = self.reload().timeline
        latest = max([after, *(i.requested_time for i in timeline), *(i.completion_time or "" for i in timeline)])
        now = format_instant_time(datetime.now(UTC).astimezone(zone_of(self.config.timezone)))
        skew_ms = (self.lock_owner or self).clock_skew_ms
        if skew_ms > 0:
            # SkewAdjustingTimeGenerator.generateTime: under the lock, read the clock, then wait the
            # max expected clock skew, so no other host's writer can later take an earlier time.
            time.sleep(skew_ms / 1000)
        if now > latest:
            return now
        return f"{int(latest[:17].ljust(17, '0')) + 1:017d}"

    def path(self, *parts: str) -> str:
        return Storage.join(self.base, *parts)

    # Instant contents

    def read(self, instant: Instant, kind: type[R], state: State | None = None, *,
             fields: Collection[str] | None = None) -> R:
        """The typed record (`timeline.metadata.records`) of an instant in `state` (its own
        state by default): an empty `kind` when the file is empty. `fields` names the record
        attributes to read (Avro content is then read only for those). Raises
        CorruptInstantError naming the file, TypeError when the file holds another record."""
        wanted = instant.state if state is None else state
        path = self.timeline.path_of(instant, wanted)
        raw = self.read_state_file(path, fields=None if fields is None else hudi_fields(kind, fields))
        status = self.timeline.files_of(instant).get(wanted)
        if fields is None and status is not None:
            _INTACT.add(self._intact_key(status.path, status.size, status.mtime_ms))  # it decoded whole
        return kind() if raw is None else expect(self.record_of(path, raw), kind)

    def read_record_file(self, path: str) -> Record | None:
        """The typed record of one state file, by its path; None when the file is empty."""
        raw = self.read_state_file(path)
        return None if raw is None else self.record_of(path, raw)

    def record_of(self, path: str, raw: Mapping[str, Any]) -> Record:
        """The typed record of a payload decoded from the state file at `path`."""
        parsed = parse_file_name(path.rsplit("/", 1)[-1], self.config.layout_version)
        return to_record(raw, action=parsed.action, state=parsed.state)

    def read_instant(self, instant: Instant, state: State | None = None, *,
                     fields: Collection[str] | None = None) -> dict[str, Any] | None:
        """The decoded payload of an instant in `state` as Hudi wrote it (for the JSON view;
        code reads typed records with `read`); None when the file is empty. `fields` reads
        only those top-level fields of Avro content. Raises CorruptInstantError naming the file."""
        wanted = instant.state if state is None else state
        return self.read_state_file(self.timeline.path_of(instant, wanted), fields=fields)

    def read_state_file(self, path: str, *, fields: Collection[str] | None = None) -> dict[str, Any] | None:
        """The decoded payload of one instant state file, by its path."""
        return metadata.decode(self.storage.read(path), path=path, **self._codec_of(path), fields=fields)

    def streams_write_stats(self, path: str) -> bool:
        """Whether the state file at `path` is commit metadata whose write stats
        `stream_write_stats` reads as a stream (v6 JSON or v8+ Avro)."""
        with self.storage.reader(path) as stream:
            head = stream.read(64)
        return metadata.streams_write_stats(head, **self._codec_of(path))

    @contextmanager
    def stream_write_stats(self, path: str) -> Iterator[Iterator[tuple[str, WriteStat | None]] | None]:
        """The write stats of the commit metadata at `path` (`streams_write_stats`), read
        while the context is open: `(partition, None)` as each partition begins, then
        `(partition, stat)` for each stat (`timeline.metadata.stream_write_stats`)."""
        with self.storage.reader(path) as stream:
            yield metadata.stream_write_stats(stream, path=path)

    def check_state_file(self, path: str, size: int) -> None:
        """Raise CorruptInstantError unless the state file at `path` (`size` bytes) decodes
        (`read_state_file` would succeed); large JSON is read and checked as a stream."""
        check_state_file_at(self.storage, path, size, self._codec_of(path))

    def _codec_of(self, path: str) -> dict[str, Any]:
        """How a state file is decoded: its action and state (by its name), the layout, and
        whether it is a layout-2 file carried over from a v6 table (still JSON)."""
        layout = self.config.layout_version
        parsed = parse_file_name(path.rsplit("/", 1)[-1], layout)  # a completed compaction's plan is "compaction"
        legacy = layout >= 2 and parsed.is_completed and parsed.completion_time is None
        return {"action": parsed.action, "state": parsed.state, "layout": layout, "legacy": legacy}

    def state_files(self, instant: Instant) -> dict[State, str]:
        """The state files of one instant found by name, without loading the timeline (a page
        about one instant of a 100,000-instant table should not list them all)."""
        folder = self.path(self.config.timeline_folder)
        layout = self.config.layout_version
        actions = [instant.action, *(p for p, done in COMPLETED_ACTION.items() if done == instant.action)]
        found: dict[State, str] = {}
        for state in State:
            for action in actions:
                for completion in ({instant.completion_time, None} if state is State.COMPLETED else {None}):
                    candidate = Instant(instant.requested_time, action, state, completion)
                    if state is State.COMPLETED:
                        candidate = candidate.at(State.COMPLETED, completion)
                    path = Storage.join(folder, candidate.file_name(layout))
                    if state not in found and self.storage.exists(path):
                        found[state] = path
        return found

    # File-system view

    def replaced_file_groups(self, timeline: Timeline) -> dict[FileGroupId, str]:
        """File groups replaced by the completed replacecommits of `timeline`."""
        replaced: dict[FileGroupId, str] = {}
        for instant in timeline.completed().with_actions({"replacecommit"}):
            for partition, file_ids in self.read(instant, CommitMetadata).replaced_file_ids.items():
                for file_id in file_ids:
                    replaced[(partition, file_id)] = instant.requested_time
        return replaced

    def pending_compaction_plans(self, action: str) -> Iterator[tuple[Instant, SliceInfo]]:
        """Every operation of the pending compaction (or log compaction) plans, with its plan's
        instant, in timeline order."""
        for instant in self.timeline.filter(lambda i: i.is_pending and i.action == action):
            for op in self.read(instant, CompactionPlan, State.REQUESTED).operations:
                yield instant, op

    def pending_operations(self, action: str) -> dict[FileGroupId, str]:
        """File groups in a pending compaction or log compaction plan -> the plan's instant."""
        return {(op.partition, op.file_id): instant.requested_time
                for instant, op in self.pending_compaction_plans(action)}

    def list_partitions(self) -> TableListing:
        with paused_gc():
            return list_partitions(self.storage, self.base)

    def view_inputs(self, *, as_of: str | None = None) -> ViewInputs:
        """What a file-system view needs from the timeline: the visible instants, completion
        times, replaced file groups and pending compactions."""
        writes = self.timeline.writes()
        if as_of is None:
            visible = writes.completed_and_compaction()
        else:
            visible = writes.completed().before_or_on(as_of)
        # CompletionTimeQueryViewV2: `getWriteTimeline().getFirstNonSavepointCommit()` (a write
        # timeline holds no savepoint instants, so its first instant): an older clean or
        # rollback on the active timeline does not move it.
        first = writes.first()
        return ViewInputs(
            visible=visible,
            table_version=self.version,
            completion_times={i.requested_time: i.completion_time for i in self.timeline.completed()
                              if i.completion_time},
            completion_cursor=first.requested_time if first is not None else None,
            archived_completion_times=self.archived_completion_times() if self.version >= 8 else {},
            base_file_extensions=self.config.base_file_extensions,
            replaced=self.replaced_file_groups(visible),
            pending_compactions=self.pending_operations(COMPACTION) if as_of is None else {},
            pending_log_compactions=self.pending_operations(LOG_COMPACTION) if as_of is None else {},
        )

    def archived_completion_times(self) -> dict[str, str]:
        """Requested -> completion time of every instant in the archived (LSM) timeline, read
        once per table object (what CompletionTimeQueryViewV2 loads for instants older than
        the active timeline)."""
        if self._archived_completion is None:
            self._archived_completion = {i.requested_time: i.completion_time for i in load_archived_timeline(self)
                                         if i.completion_time}
        return self._archived_completion

    def file_system_view(self, *, as_of: str | None = None, listing: TableListing | None = None,
                         sizes: bool = True) -> FileSystemView:
        """The file-system view Hudi readers see now, or as of a completed instant (time
        travel: slices based on completed writes up to `as_of`). As in Hudi, a slice's log
        files are those of every completed delta commit, also later ones: readers skip their
        blocks by instant time. Without `sizes`, file sizes may be -1 (unknown) where the
        storage would have to ask for each (a local disk: `Storage.list_unsized`); the slices
        are the same."""
        inputs = self.view_inputs(as_of=as_of)
        with paused_gc():  # one pause for listing and building: see timeline/perf.py
            return build_view(listing or list_partitions(self.storage, self.base, sizes=sizes), inputs)


def check_state_file_at(storage: Storage, path: str, size: int, codec: Mapping[str, Any], *,
                        stream_above: int = metadata.STREAM_CHECK_BYTES) -> None:
    """`HudiTable.check_state_file` with the storage and the codec (`unchecked_state_files`)
    given: what a worker that holds no HudiTable runs. JSON above `stream_above` bytes is
    checked as a stream (`metadata.check`)."""
    with storage.reader(path) as stream:
        metadata.check(stream, size, path=path, stream_above=stream_above, **codec)
