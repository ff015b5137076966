"""The one place an instant moves through its states and is published (HoodieActiveTimeline's
createNewInstant / transitionRequestedToInflight / saveAsComplete).

Every action Cleanline writes (clean, savepoint, rollback, restore) goes through these three
functions: a new requested instant with a fresh time, the inflight state, and the completed
state with its metadata. Layout 2 (table version 8+) names a completed file with its
completion time, a fresh time later than every time on the timeline; layout 1 has none (Hudi
reads it from the file's modification time). Each write is create-if-absent, so a re-run after
a crash finds what it wrote and goes on (idempotent)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from timeline import metadata
from timeline.instant import Instant, State
from timeline.storage import Storage

if TYPE_CHECKING:
    from timeline.table import Table


def fence(table: Table) -> None:
    """Right before any file is written to the table (a state file, a log file, a rollback
    block; on the metadata table too, whose check is its data table's): while a state change
    holds the table's lock, confirm it is still held with a margin left (LockLost otherwise:
    publish nothing more)."""
    if table.publish_check is not None:
        table.publish_check()


def state_path(table: Table, instant: Instant) -> str:
    return Storage.join(table.path(table.config.timeline_folder), instant.file_name(table.config.layout_version))


def write_state(table: Table, instant: Instant, content: Mapping[str, Any] | bytes | None) -> None:
    """Write one state file unless it is there already: Avro or JSON as the table's layout
    wants (`bytes` are written as they are, e.g. a copy of the requested plan)."""
    path = state_path(table, instant)
    if table.storage.exists(path):
        return
    fence(table)
    if isinstance(content, bytes):
        data = content
    elif content is None:
        data = b""
    else:
        data = metadata.encode(dict(content), action=instant.action, state=instant.state,
                               layout=table.config.layout_version)
    table.storage.write(path, data)


def delete_states(table: Table, names: Iterable[str]) -> list[str]:
    """HoodieActiveTimeline.deleteInstantFileIfExists for each state file named, in order: each
    removed from the table's timeline folder right after the held-lock check. The folder is
    `.hoodie` itself (layout 1) or must resolve inside it (Containment.meta_path, resolved once),
    and each name be a plain file name in it. Returns the paths deleted (a file already gone is
    skipped)."""
    parts = table.config.timeline_folder.split("/")[1:]  # the timeline folder below `.hoodie`
    containment = table.containment
    folder = containment.meta_path(*parts) if parts else containment.meta
    deleted = []
    for name in names:
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"{table.uri}: {name!r} is not a state file name")
        path = Storage.join(folder, name)
        fence(table)
        if table.storage.delete(path):
            deleted.append(path)
    return deleted


def request(table: Table, action: str, content: Mapping[str, Any] | None, *,
            before_write: Callable[[str], None] | None = None) -> Instant:
    """createNewInstant: a requested instant at a fresh time. `before_write` is told the time
    before anything is written (a caller that must find the instant again after a crash
    records it there; if it raises, nothing is written)."""
    instant = Instant(table.new_instant_time(), action, State.REQUESTED)
    if before_write is not None:
        before_write(instant.requested_time)
    write_state(table, instant, content)
    return instant


def start(table: Table, instant: Instant, content: Mapping[str, Any] | bytes | None = None) -> Instant:
    """transitionRequestedToInflight."""
    inflight = Instant(instant.requested_time, instant.action, State.INFLIGHT)
    write_state(table, inflight, content)
    return inflight


def complete(table: Table, instant: Instant, content: Mapping[str, Any] | bytes | None, *,
             after: str = "") -> Instant:
    """saveAsComplete: the completed state with its metadata, named with a completion time on
    layout 2 (later than `after` too: the metadata table's deltacommit completes first). The
    table's timeline is reloaded."""
    completion = (table.new_instant_time(after=max(instant.requested_time, after))
                  if table.config.layout_version >= 2 else None)
    done = instant.at(State.COMPLETED, completion)  # a compaction completes as a commit
    write_state(table, done, content)
    table.reload()
    return done
