"""What changed on a table's active timeline since an earlier look, read without loading the whole
timeline: the console's sync mirrors only the instants whose state files came or went.

Hudi writes each state file of an instant once under its own name (`HoodieActiveTimeline`'s
`createNewInstant`, `transitionState`, `saveAsComplete`: a state change is a new file, written
after the earlier states' files; a rollback or archival removes files), so the set of names in
the timeline folder says which instants changed: an instant time with a name added or removed
since the last look is read again, by the rules of `load_active_timeline`
(`timeline.timeline.assemble_timeline`), from its state files only (from its new completed file
alone when that came and nothing of it went: the highest state wins). Listing the names costs
one listing of the folder that asks no file's size; only the changed instants' files are
stat'ed, checked as `HudiTable.ensure_intact` checks them, and read.
A state file rewritten in place under the same name (which Hudi does not do: a truncated or
damaged file) is seen among the newest state files, whose sizes and modification times are kept
from look to look; an older one by a full look (`Inspect.timeline_changes(previous=None)`)."""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from timeline.exceptions import FileNotFound, InvalidInstantError
from timeline.instant import COMPLETED_ACTION, Instant, State, split_file_name
from timeline.storage import FileStatus, Storage
from timeline.table import PLANNED_ACTIONS, Table, check_state_file_at
from timeline.timeline import ActiveTimeline, assemble_timeline

# More changed instant times than this: their state files are found by one pass that splits
# every name, and stat'ed by one sized listing of the folder, instead of one request each.
_FEW = 1000


@dataclass(frozen=True, slots=True)
class TimelineChanges:
    """The active timeline now against the `previous` names given. `names` are the timeline
    folder's file names now (keep them for the next look); `times` the instant times whose state
    files changed (every time, on a full look); `timeline` their instants now, with their state
    files (an instant time in `times` without an instant here left the active timeline: rolled
    back, restored away or archived). `full` is true when there was nothing to compare with."""

    names: frozenset[str]
    times: frozenset[str]
    timeline: ActiveTimeline
    full: bool
    added: frozenset[str] = field(default=frozenset())
    removed: frozenset[str] = field(default=frozenset())
    watched: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.times) or self.full

    def digest(self, previous: str = "") -> str:
        """A hash of the names, chained from the `previous` look's digest by what came and went
        (every name, on a full look): equal digests in one chain, same names."""
        digest = hashlib.sha256(previous.encode())
        for mark, group in (("+", self.names if self.full else self.added), ("-", self.removed)):
            for name in sorted(group):
                digest.update(f"{mark}{name}\n".encode())
        return digest.hexdigest()


def timeline_folder_names(table: Table) -> frozenset[str]:
    """The names in the table's timeline folder now (its folders' too: they are no instant),
    from one listing that asks no file's size."""
    return frozenset(table.storage.list_names(table.path(table.config.timeline_folder)))


def timeline_changes(table: Table, previous: Collection[str] | None,
                     known: Callable[[frozenset[str]], Collection[str]] | None = None,
                     watched: Mapping[str, Sequence[int]] | None = None) -> TimelineChanges:
    """What changed since the timeline folder held the names `previous` (None: read it all, as
    `HudiTable.timeline` does). The changed instants' state files are checked as
    `HudiTable.ensure_intact` checks them (CorruptInstantError names the file).

    `known(times)` says which of the changed instant times had an instant at the earlier look
    (the caller's mirror of it): a time that had none and whose completed file came is read from
    the names that came alone, without going through the folder's names for the rest of its
    files. Without it every changed time's names are looked for.

    `watched` are the newest state files' sizes and modification times at the earlier look
    (`TimelineChanges.watched`): one of them rewritten in place (a truncated latest commit) makes
    its instant changed too. Older files rewritten in place are seen by a full look."""
    names = timeline_folder_names(table)
    folder = table.path(table.config.timeline_folder)
    if previous is None:
        timeline = table.timeline
        table.ensure_intact()
        return TimelineChanges(names, frozenset(i.requested_time for i in timeline), timeline, True,
                               watched=_newest(table, folder, names))
    # hidden names (`.temp`, `.aux`, `.heartbeat`: writers make and remove them, no instant has
    # one) are no change, as loading the timeline skips them
    came: Collection[str]
    went: Collection[str]
    if isinstance(previous, (set, frozenset)):
        came, went = names - previous, previous - names
    else:  # a list (as a mark decodes it) is compared without a set of its own: one hash per name
        came, went = names.difference(previous), [n for n in previous if n not in names]
    newest = _newest(table, folder, _newest_candidates(names, came, went, watched))
    added = frozenset(n for n in came if n[:1] != ".")
    removed = frozenset(n for n in went if n[:1] != ".")
    layout = table.config.layout_version
    kept = watched or {}
    rewritten = {n for n, status in newest.items() if n in kept and list(kept[n]) != list(status)}
    parsed = {n: _split(n, layout) for n in added | removed | rewritten}
    times = frozenset(p[0] for p in parsed.values() if p is not None)
    # an instant time new since the last look whose completed file came is read from what came
    # (Hudi writes the completed file last); any other changed time from all its names
    done = {p[0] for n, p in parsed.items() if p is not None and n in added and p[2] is State.COMPLETED}
    done -= {p[0] for n, p in parsed.items() if p is not None and n in removed}
    done -= set(known(frozenset(done)) if known is not None and done else done)
    wanted = [n for n, p in parsed.items() if p is not None and n in added and p[0] in done]
    if times - done:
        wanted += _names_at(names, times - done, layout)
    statuses = _statuses(table, folder, wanted) if times else []
    timeline = assemble_timeline(statuses, folder=folder, config=table.config)
    _check(table, timeline)
    return TimelineChanges(names, times, timeline, False, frozenset(added), frozenset(removed), newest)


# How many of the newest names are stat'ed at each look, to see one rewritten in place: the
# state files of the latest instants, which readers (and Hudi's) read first.
WATCHED = 64


def _newest(table: Table, folder: str, names: Collection[str]) -> dict[str, tuple[int, int]]:
    """The newest instant state files' sizes and modification times (names sort by instant time)."""
    found = {}
    for name in _largest_instant_names(names, WATCHED):
        try:
            status = table.storage.status(Storage.join(folder, name))
        except FileNotFound:  # gone since the listing: the next look sees it removed
            continue
        found[name] = (status.size, status.mtime_ms)
    return found


def _newest_candidates(names: frozenset[str], came: Collection[str], went: Collection[str],
                       watched: Mapping[str, Sequence[int]] | None) -> Collection[str]:
    """Where the newest instant names are now: among the last look's newest and the names that
    came, when the last look watched a full WATCHED and none of them went (every other name was
    older than those, which are all still here); else among all the names."""
    if watched is None or len(watched) < WATCHED or any(n in watched for n in went):
        return names
    return {*watched, *(n for n in came if n[:1].isdigit())}


def _largest_instant_names(names: Collection[str], count: int) -> list[str]:
    """The `count` largest names that start with a digit (instant files), without a Python step
    per name: names starting with a letter sort after digits, so the largest few of all names
    are taken, widening until `count` instant names are among them or every name was."""
    wanted = count + 16
    while True:
        largest = heapq.nlargest(wanted, names)
        found = [n for n in largest if n[:1].isdigit()]
        if len(found) >= count or wanted >= len(names):
            return found[:count]
        wanted *= 4


def _split(name: str, layout: int) -> tuple[str, str, State, str | None] | None:
    try:
        return split_file_name(name, layout)
    except (InvalidInstantError, ValueError, IndexError):
        return None


def _time_of(name: str, layout: int) -> str | None:
    found = _split(name, layout)
    return None if found is None else found[0]


def _names_at(names: frozenset[str], times: frozenset[str], layout: int) -> list[str]:
    """The names (now) of the instant times `times`: an instant's file names start with its
    requested time and a "." or "_", so a name is tried only when a prefix of one of the
    times' lengths is one of them."""
    found: list[str] = []
    for n in sorted({len(t) for t in times}):
        found += [name for name in names if name[:n] in times and name[n:n + 1] in (".", "_")]
    return [name for name in found if _time_of(name, layout) in times]


def _statuses(table: Table, folder: str, names: list[str]) -> list[FileStatus]:
    if len(names) <= _FEW:
        found = []
        for name in names:
            try:
                found.append(table.storage.status(Storage.join(folder, name)))
            except FileNotFound:  # gone since the listing: the next look sees it removed
                continue
        return found
    wanted = set(names)
    return [s for s in table.storage.list(folder) if s.name in wanted]


def _check(table: Table, timeline: ActiveTimeline) -> None:
    """`HudiTable.ensure_intact` for these instants only: a completed instant's metadata and a
    pending planned instant's non-empty plan must decode."""
    for instant in timeline:
        if not instant.is_completed and instant.action not in PLANNED_ACTIONS:
            continue
        state = State.COMPLETED if instant.is_completed else State.REQUESTED
        status = timeline.files_of(instant).get(state)
        if status is None or status.size == 0:
            continue
        check_state_file_at(table.storage, status.path, status.size, table._codec_of(status.path))
        table.note_intact(status)


def instant_key(instant: Instant) -> tuple[str, str]:
    """(requested time, comparable action): one instant of the active timeline."""
    return instant.requested_time, COMPLETED_ACTION.get(instant.action, instant.action)


__all__ = ["TimelineChanges", "instant_key", "timeline_changes", "timeline_folder_names"]
