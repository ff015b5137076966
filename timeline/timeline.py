"""The active timeline (and the archived one through `timeline.archive`): loading, ordering
and the filters Hudi's code relies on."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from timeline.config import BACKUP_FILE, PROPERTIES_FILE, TableConfig
from timeline.exceptions import InvalidInstantError
from timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    COMPLETED_ACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    comparable_action,
    instant_time_from_epoch_ms,
    split_file_name,
    zone_of,
)
from timeline.storage import FileStatus, Storage

log = logging.getLogger(__name__)

COMMIT_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING})
COMMITS_AND_COMPACTION_ACTIONS = COMMIT_ACTIONS | {COMPACTION}
WRITE_ACTIONS = COMMIT_ACTIONS | {COMPACTION, LOG_COMPACTION}

_NOT_INSTANTS = frozenset({PROPERTIES_FILE, BACKUP_FILE})


@dataclass(frozen=True, slots=True)
class Timeline:
    """An ordered, immutable sequence of instants with Hudi's filters."""

    instants: tuple[Instant, ...] = ()

    @classmethod
    def of(cls, instants: Iterable[Instant]) -> Timeline:
        return cls(tuple(sorted(instants, key=lambda i: i.sort_key)))

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def __bool__(self) -> bool:
        return bool(self.instants)

    def filter(self, predicate: Callable[[Instant], bool]) -> Timeline:
        return Timeline(tuple(i for i in self.instants if predicate(i)))

    def with_actions(self, actions: Iterable[str]) -> Timeline:
        wanted = frozenset(actions)
        return self.filter(lambda i: i.action in wanted)

    # States
    def completed(self) -> Timeline:
        return self.filter(lambda i: i.is_completed)

    def pending(self) -> Timeline:
        return self.filter(lambda i: i.is_pending)

    def completed_and_compaction(self) -> Timeline:
        """Hudi's `filterCompletedAndCompactionInstants`: what a file-system view sees."""
        return self.filter(lambda i: i.is_completed or i.action == COMPACTION)

    # Actions
    def commits(self) -> Timeline:
        """`getCommitsTimeline`: commit, deltacommit, replacecommit, clustering."""
        return self.with_actions(COMMIT_ACTIONS)

    def commits_and_compaction(self) -> Timeline:
        """`getCommitsAndCompactionTimeline`, the cleaner's input for the retained window."""
        return self.with_actions(COMMITS_AND_COMPACTION_ACTIONS)

    def writes(self) -> Timeline:
        """`getWriteTimeline`: every action that writes data files."""
        return self.with_actions(WRITE_ACTIONS)

    def cleans(self) -> Timeline:
        return self.with_actions({CLEAN})

    def savepoints(self) -> Timeline:
        return self.with_actions({SAVEPOINT})

    def rollbacks(self) -> Timeline:
        return self.with_actions({ROLLBACK})

    def restores(self) -> Timeline:
        return self.with_actions({RESTORE})

    def pending_compactions(self) -> Timeline:
        return self.filter(lambda i: i.is_pending and i.action == COMPACTION)

    def pending_log_compactions(self) -> Timeline:
        return self.filter(lambda i: i.is_pending and i.action == LOG_COMPACTION)

    # Positions
    def first(self) -> Instant | None:
        return self.instants[0] if self.instants else None

    def last(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    def find(self, requested_time: str, action: str | None = None) -> Instant | None:
        """The instant at `requested_time` (of the comparable `action`, if given)."""
        for instant in self.instants:
            if instant.requested_time == requested_time and (
                action is None or comparable_action(instant.action) == comparable_action(action)
            ):
                return instant
        return None

    def contains(self, requested_time: str) -> bool:
        return any(i.requested_time == requested_time for i in self.instants)

    def before_or_on(self, requested_time: str) -> Timeline:
        return self.filter(lambda i: i.requested_time <= requested_time)

    def after(self, requested_time: str) -> Timeline:
        return self.filter(lambda i: i.requested_time > requested_time)

    def first_non_savepoint(self) -> Instant | None:
        """`getFirstNonSavepointCommit`: where the active timeline really starts when
        archival left savepointed commits behind."""
        savepointed = {i.requested_time for i in self.instants if i.action == SAVEPOINT}
        for instant in self.instants:
            if instant.requested_time not in savepointed:
                return instant
        return None

    def is_before_start(self, requested_time: str) -> bool:
        """`isBeforeTimelineStarts`: older than the first non-savepoint instant."""
        first = self.first_non_savepoint()
        return first is not None and requested_time < first.requested_time

    def contains_or_before_start(self, requested_time: str) -> bool:
        return self.contains(requested_time) or self.is_before_start(requested_time)


@dataclass(frozen=True, slots=True)
class ActiveTimeline(Timeline):
    """The active timeline of a table as loaded from storage, with the state files behind
    every instant so that any state's content can be read."""

    folder: str = ""
    layout: int = 1
    state_files: Mapping[tuple[str, str], Mapping[State, FileStatus]] = field(default_factory=dict)

    def files_of(self, instant: Instant) -> Mapping[State, FileStatus]:
        """The state files present for an instant (requested, inflight, completed)."""
        return self.state_files.get((instant.requested_time, comparable_action(instant.action)), {})

    def path_of(self, instant: Instant, state: State | None = None) -> str:
        """The file holding `instant` in `state` (its own state by default). Pending compaction
        files keep the compaction name; completed ones are commits."""
        wanted = instant.state if state is None else state
        status = self.files_of(instant).get(wanted)
        if status is not None:
            return status.path
        return Storage.join(self.folder, instant.at(wanted, instant.completion_time).file_name(self.layout))


def load_active_timeline(storage: Storage, base: str, config: TableConfig) -> ActiveTimeline:
    """List the timeline folder once and build the active timeline as Hudi does: names that
    are not instants are skipped with a warning; per (time, comparable action) the highest
    state wins; completion times of layout-1 and legacy files come from modification times."""
    folder = Storage.join(base, config.timeline_folder)
    return assemble_timeline(storage.list(folder), folder=folder, config=config)


def assemble_timeline(statuses: Iterable[FileStatus], *, folder: str, config: TableConfig) -> ActiveTimeline:
    """The active timeline of these state files of the timeline folder `folder` (all of them:
    `load_active_timeline`; those of some instant times only: `timeline.changes`), by the rules
    `load_active_timeline` states. A completed layout-1 file's status must carry its
    modification time (its completion time)."""
    layout = config.layout_version
    zone = zone_of(config.timezone)
    files: dict[tuple[str, str], dict[State, FileStatus]] = {}
    top: dict[tuple[str, str], tuple[str, str, State, str | None, FileStatus]] = {}
    for status in statuses:
        name = status.name
        if status.is_dir or name in _NOT_INSTANTS or name[0] == ".":
            continue
        try:
            requested, action, state, completion = split_file_name(name, layout)
        except InvalidInstantError as exc:
            log.warning("%s: skipped: %s", folder, exc)
            continue
        key = (requested, COMPLETED_ACTION.get(action, action))
        states = files.get(key)
        if states is None:
            files[key] = states = {}
        states[state] = status
        best = top.get(key)
        if best is None or state > best[2]:
            top[key] = (requested, action, state, completion, status)
    instants = [
        Instant(requested, action, state, completion if completion or state is not State.COMPLETED
                else instant_time_from_epoch_ms(status.mtime_ms, zone))
        for requested, action, state, completion, status in top.values()
    ]
    instants.sort(key=lambda i: i.sort_key)
    return ActiveTimeline(tuple(instants), folder=folder, layout=layout, state_files=files)
