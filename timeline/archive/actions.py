"""What both archived-timeline writers share: the actions to archive with all their state files
(Hudi's `ActiveAction`, grouped as `getInstantsToArchive` groups the raw active timeline), the
left-over markers removed before an action is written (`deleteAnyLeftOverMarkers`), and the
removal of the archived state files from the active timeline in Hudi's order
(`deleteArchivedInstants` / `deleteArchivedActions`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from timeline import transition
from timeline.exceptions import CleanlineError, FileNotFound
from timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    Instant,
    State,
    comparable_action,
)
from timeline.storage import FileStatus

if TYPE_CHECKING:
    from timeline.table import Table

# What Hudi's archivers ever move: the completed commits timeline (commit, deltacommit,
# replacecommit; a compaction completes as a commit, a log compaction as a deltacommit, a v8
# clustering as a replacecommit) and completed cleans and rollbacks (`getInstantsToArchive`).
# Savepoints, restores, indexing and schema commits stay on the active timeline.
ARCHIVABLE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLEAN, ROLLBACK})
_PENDING_NAMES = {COMMIT: (COMMIT, COMPACTION), DELTA_COMMIT: (DELTA_COMMIT, LOG_COMPACTION),
                  REPLACE_COMMIT: (REPLACE_COMMIT, CLUSTERING)}


class ArchiveRefused(CleanlineError):
    """An archival that Hudi's archiver would never make (a pending or unarchivable instant);
    nothing was written or deleted. Names the table and the instant."""

    def __init__(self, table: str, instant: str, reason: str) -> None:
        super().__init__(f"{table}: refused, nothing was archived: {instant} {reason}")
        self.table = table
        self.instant = instant
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ActiveAction:
    """`ActiveAction`: one completed action and every state file it has on the active timeline
    (requested, inflight, completed), each with the instant it names (a pending compaction's
    files keep the name `compaction`)."""

    instant: Instant
    files: Mapping[State, tuple[Instant, FileStatus]] = field(default_factory=dict)

    @property
    def time(self) -> str:
        return self.instant.requested_time

    def pending(self) -> list[tuple[Instant, FileStatus]]:
        """`getPendingInstants`: the requested, then the inflight file."""
        return [self.files[s] for s in (State.REQUESTED, State.INFLIGHT) if s in self.files]

    def pending_action(self) -> str | None:
        """`getPendingAction`: the requested file's action, else the inflight one's."""
        found = self.pending()
        return found[0][0].action if found else None


def active_actions(table: Table, instants: Iterable[Instant]) -> tuple[list[ActiveAction], list[Instant]]:
    """The actions of `instants` (completed instants of the active timeline, one per action)
    with all their state files, oldest first (`ActiveAction` order: requested time), and the
    instants no longer on the active timeline (archived already, or by another archiver: Hudi
    skips them). Raises ArchiveRefused, before anything changes, for an instant that is pending
    or of an action Hudi never archives."""
    timeline = table.reload().timeline
    by_key = {(i.requested_time, comparable_action(i.action)): i for i in timeline}
    found: list[ActiveAction] = []
    gone: list[Instant] = []
    for wanted in sorted(set(instants), key=lambda i: i.sort_key):
        if wanted.action not in ARCHIVABLE_ACTIONS and comparable_action(wanted.action) not in ARCHIVABLE_ACTIONS:
            raise ArchiveRefused(table.uri, str(wanted), f"is a {wanted.action}, which Hudi's archiver never moves")
        current = by_key.get((wanted.requested_time, comparable_action(wanted.action)))
        if current is None:
            gone.append(wanted)
            continue
        if not current.is_completed:
            raise ArchiveRefused(table.uri, str(current), "is not completed; Hudi archives completed actions only")
        statuses = timeline.files_of(current)
        files: dict[State, tuple[Instant, FileStatus]] = {}
        for state, status in statuses.items():
            files[state] = (_named(current, state, status.name, table.config.layout_version), status)
        found.append(ActiveAction(current, files))
    return found, gone


def _named(completed: Instant, state: State, name: str, layout: int) -> Instant:
    """The instant a state file of `completed` names (its own action: `compaction` for a pending
    compaction's files of a completed `commit`)."""
    if state is State.COMPLETED:
        return completed
    for action in _PENDING_NAMES.get(completed.action, (completed.action,)):
        candidate = Instant(completed.requested_time, action, state)
        if candidate.file_name(layout) == name:
            return candidate
    return Instant(completed.requested_time, completed.action, state)


class LeftoverMarkers:
    """`deleteAnyLeftOverMarkers`: the marker folder `.hoodie/.temp/<time>` of an action about
    to be archived, removed if a writer left it (direct and timeline-server markers live there
    alike). The marker folders are listed once per archival, not asked for one by one."""

    def __init__(self, table: Table) -> None:
        self.table = table
        temp = table.containment.meta_path(".temp")
        try:
            self.present = {s.name for s in table.storage.list(temp) if s.is_dir}
        except FileNotFound:
            self.present = set()

    def delete(self, time: str) -> bool:
        """Remove the marker folder of `time`; False when there is none."""
        if time not in self.present:
            return False
        path = self.table.containment.meta_path(".temp", time)
        transition.fence(self.table)
        self.present.discard(time)
        return self.table.storage.delete_dir(path)


def delete_archived_instants(table: Table, actions: Iterable[ActiveAction]) -> list[str]:
    """`deleteArchivedInstants` / `deleteArchivedActions`: every state file of the archived
    actions, the requested and inflight files of all of them first, then the completed files
    oldest first. A completed file removed before its pending files would make the action look
    pending to other services (compaction, clustering); removing completed files in order leaves
    no hole in the timeline at any moment (HUDI-7207). Returns the paths deleted (a file
    already gone is skipped, as `deleteInstantFileIfExists` does)."""
    ordered = list(actions)
    pending = [status.name for action in ordered for _, status in action.pending()]
    completed = [found[1].name for action in ordered if (found := action.files.get(State.COMPLETED))]
    return transition.delete_states(table, pending) + transition.delete_states(table, completed)
