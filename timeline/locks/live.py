"""The live-writer rule: never change a table beside a live writer that takes no lock Cleanline
can take.

A writer is live when, as Hudi's `HoodieHeartbeatClient.isHeartbeatExpired` sees it, a heartbeat
file under `.hoodie/.heartbeat/` (named by the write's instant time, touched every
`hoodie.client.heartbeat.interval_in_ms`) was touched within interval x
`hoodie.client.heartbeat.tolerable.misses` (60 s x 2 by default); or when a pending write
(commit, deltacommit, replacecommit, compaction, log compaction, clustering) was requested
within that interval of now, before or after (a writer that has not yet touched its heartbeat,
or writes none; a time further ahead is no evidence of a running writer, only of a wrong clock).

When no lock is known (`LockDiscovery.shared` is false: no provider, or one inside a writer's
process) and a writer is live, every change is refused with `LiveWriterUnlocked`, naming the
live instant and saying how to configure the writers' lock. The override is explicit: the
caller says the writers are stopped (`writers_stopped=True`, `--writers-stopped`), and the
decision (`LockDecision`) records it for the plan, job and audit row."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from timeline.exceptions import FileNotFound, InvalidInstantError
from timeline.instant import moment_of
from timeline.locks.base import LockError
from timeline.locks.discovery import LockDiscovery
from timeline.storage import FileStatus, Storage
from timeline.timeline import ActiveTimeline, assemble_timeline

if TYPE_CHECKING:
    from timeline.table import Table

HEARTBEAT_FOLDER = ".hoodie/.heartbeat"  # HoodieTableMetaClient.HEARTBEAT_FOLDER_NAME
HEARTBEAT_INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"  # HoodieWriteConfig, default 60,000
HEARTBEAT_TOLERABLE_MISSES = "hoodie.client.heartbeat.tolerable.misses"  # default 2
DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000
DEFAULT_HEARTBEAT_TOLERABLE_MISSES = 2
WRITE_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit", "compaction", "logcompaction", "clustering"})


@dataclass(frozen=True, slots=True)
class LiveWriter:
    """One write a writer is running now: its instant time, its action ("" when the heartbeat
    has no instant on the timeline yet), the evidence ("heartbeat" or "pending") and its age in
    seconds (since the heartbeat was touched, or since it was requested)."""

    requested_time: str
    action: str
    evidence: str
    age_seconds: int

    def describe(self) -> str:
        what = f"{self.action} {self.requested_time}" if self.action else f"write {self.requested_time}"
        if self.evidence == "heartbeat":
            return f"{what} (heartbeat touched {self.age_seconds} s ago)"
        return f"{what} (pending, requested {self.age_seconds} s ago)"


@dataclass(frozen=True, slots=True)
class LockDecision:
    """What one change was taken with, for the plan, job and audit row: the lock found, the
    live writers seen, whether the caller said the writers are stopped, and whether the
    table's lock was held."""

    discovery: LockDiscovery
    live_writers: tuple[LiveWriter, ...]
    writers_stopped: bool
    locked: bool

    @property
    def overridden(self) -> bool:
        """The change went on beside live writers because the caller said they are stopped."""
        return not self.locked and self.writers_stopped and bool(self.live_writers)

    def describe(self) -> str:
        if self.locked:
            return f"under the table's lock: {self.discovery.detail}"
        if self.overridden:
            return (f"no lock ({self.discovery.detail}); the caller said the writers are stopped, beside "
                    + ", ".join(w.describe() for w in self.live_writers))
        return f"no lock ({self.discovery.detail}); no live writer seen"


class LiveWriterUnlocked(LockError):
    """A writer is live on the table and no lock it shares with Cleanline is known: the change is
    refused. Names the live instant, the lock found and how to configure the writers' lock."""

    def __init__(self, table_uri: str, writers: list[LiveWriter], discovery: LockDiscovery) -> None:
        first = writers[0]
        more = f" and {len(writers) - 1} more" if len(writers) > 1 else ""
        super().__init__(
            f"{table_uri}: a writer is live ({first.describe()}{more}) and no lock it shares with Cleanline is known "
            f"({discovery.detail}); nothing was changed. Configure the lock the writers use "
            "(hoodie.write.concurrency.mode=optimistic_concurrency_control and hoodie.write.lock.provider with its "
            "settings) in the call's options (--hoodie-conf), the table's settings in the console, the root's "
            "CLEANLINE_HUDI_OPTIONS or hoodie.properties; or, once the writers are stopped, say so "
            "(--writers-stopped, writers_stopped=True)")
        self.table_uri = table_uri
        self.writers = tuple(writers)
        self.discovery = discovery


def _setting(properties: Mapping[str, str], key: str, default: int) -> int:
    raw = (properties.get(key) or "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def liveness_window_ms(properties: Mapping[str, str]) -> int:
    """Heartbeat interval x tolerable misses (`HoodieHeartbeatClient.isHeartbeatExpired`)."""
    return (_setting(properties, HEARTBEAT_INTERVAL_MS, DEFAULT_HEARTBEAT_INTERVAL_MS)
            * _setting(properties, HEARTBEAT_TOLERABLE_MISSES, DEFAULT_HEARTBEAT_TOLERABLE_MISSES))


def _requested_ms(table: Table, requested_time: str) -> int | None:
    try:
        return int(moment_of(requested_time[:17], table.config.timezone).timestamp() * 1000)
    except InvalidInstantError:
        return None


def live_writers(table: Table, properties: Mapping[str, str] | None = None, *,
                 now_ms: int | None = None) -> list[LiveWriter]:
    """The writes running on `table` now, newest first (see the module's docstring).
    `properties` are the writers' settings (the heartbeat interval and misses; the table's
    `hoodie.properties` when None). The timeline is read again: its folder's names, and only
    the instants that could be live writes (those with a requested or inflight state file, and
    those a fresh heartbeat names) are assembled from them, by the rules of
    `load_active_timeline`; a page showing the writers of a 100,000-instant table builds a few
    instants, not all. The table's loaded timeline is dropped, to be read afresh by its next use."""
    props = table.config.props if properties is None else properties
    window = liveness_window_ms(props)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    beats = [s for s in _heartbeats(table) if not s.is_dir and s.name[:1].isdigit() and now - s.mtime_ms <= window]
    timeline = _candidates(table, {s.name for s in beats})
    actions = {i.requested_time: i.action for i in timeline}
    pending = {i.requested_time: i for i in timeline.pending() if i.action in WRITE_ACTIONS}
    completed = {i.requested_time for i in timeline.completed()} - set(pending)
    found: dict[str, LiveWriter] = {}
    for status in beats:
        age = now - status.mtime_ms
        if status.name in completed:  # a finished write whose heartbeat file was not deleted yet
            continue
        found[status.name] = LiveWriter(status.name, actions.get(status.name, ""), "heartbeat", max(0, age) // 1000)
    for t, instant in pending.items():
        if t in found:
            continue
        requested = _requested_ms(table, t)
        if requested is not None and abs(now - requested) <= window:  # a writer's clock may run ahead a little
            found[t] = LiveWriter(t, instant.action, "pending", max(0, now - requested) // 1000)
    return sorted(found.values(), key=lambda w: w.requested_time, reverse=True)


def _heartbeats(table: Table) -> list[FileStatus]:
    folder = table.path(HEARTBEAT_FOLDER)
    try:
        return table.storage.list(folder) if table.storage.exists(folder) else []
    except FileNotFound:
        return []


_PENDING_SUFFIXES = (".requested", ".inflight")
_COMPLETED_WRITES = frozenset({"commit", "deltacommit", "replacecommit"})  # what every write action completes as


def _candidates(table: Table, beating: set[str]) -> ActiveTimeline:
    """The active timeline's instants that could be live writes: every instant time with a
    requested or inflight state file and no completed write's file (a compaction, log
    compaction or clustering completes as a commit, deltacommit or replacecommit of its own
    time), and the times a fresh heartbeat names, each assembled from all its state files (the
    highest state wins, as `load_active_timeline` has it)."""
    config = table.reload().config
    folder = table.path(config.timeline_folder)
    names = table.storage.list_names(folder)
    pending, written = set(), set()
    for name in names:
        if name.endswith(_PENDING_SUFFIXES):
            pending.add(_time_of(name))
        elif name.rsplit(".", 1)[-1] in _COMPLETED_WRITES:
            written.add(_time_of(name))
    times = beating | (pending - written)  # a completed write keeps its requested and inflight files
    statuses = [FileStatus(Storage.join(folder, n), n, -1, -1) for n in names if _time_of(n) in times]
    return assemble_timeline(statuses, folder=folder, config=config)


def _time_of(name: str) -> str:
    """The instant time a state file's name starts with (`<t>.<action>...` or, completed on
    table version 8+, `<t>_<completion time>.<action>`)."""
    return name.split(".", 1)[0].split("_", 1)[0]

