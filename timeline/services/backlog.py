"""The compaction backlog of a merge-on-read table: per file group and per partition, the log
files and bytes a snapshot query merges onto the latest base file (Hudi's
`HoodieMergeOnReadSnapshotReader` reads the latest file slice: its base file and every log file
of it), and how many delta commits wrote them since that base file was written (the read
amplification compaction removes). Computed from one listing, the file-system view Hudi's
readers see (`FileSystemView.latest_slices`: on table versions 8 and 9 only the log files of
completed delta commits) and the write stats of the completed delta commits on the active
timeline. Reads only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from timeline.fsview import FileGroupId, FileSlice, FileSystemView
from timeline.instant import DELTA_COMMIT, Instant
from timeline.metadata.raw import file_name_of
from timeline.metadata.records import CommitMetadata
from timeline.table import Table


@dataclass(frozen=True, slots=True)
class GroupBacklog:
    """One file group whose latest slice has log files: the slice's base instant and base file
    (None: a log-only slice), its log files and their bytes, and the completed delta commits
    that wrote them (each is one more set of blocks a snapshot read merges)."""

    partition: str
    file_id: str
    base_instant_time: str
    base_file: str | None
    log_files: int
    log_bytes: int
    delta_commits: int

    @property
    def file_group(self) -> FileGroupId:
        return (self.partition, self.file_id)


@dataclass(frozen=True, slots=True)
class PartitionBacklog:
    """A partition's backlog: its file groups with log files, their log files and bytes, and
    the most delta commits any of them carries."""

    partition: str
    file_groups: int
    log_files: int
    log_bytes: int
    max_delta_commits: int


@dataclass(frozen=True, slots=True)
class Backlog:
    """The backlog of every file group with log files and of every partition holding one."""

    groups: tuple[GroupBacklog, ...] = ()
    partitions: tuple[PartitionBacklog, ...] = ()

    @property
    def log_files(self) -> int:
        return sum(g.log_files for g in self.groups)

    @property
    def log_bytes(self) -> int:
        return sum(g.log_bytes for g in self.groups)

    @property
    def max_delta_commits(self) -> int:
        return max((g.delta_commits for g in self.groups), default=0)


def compaction_backlog(table: Table, view: FileSystemView) -> Backlog:
    """The backlog of `table` as `view` (its file-system view now) shows it. A copy-on-write
    table has none."""
    slices = [s for s in view.latest_slices() if s.log_files]
    if not slices:
        return Backlog()
    writers = log_writers(table, min(s.base_instant_time for s in slices))
    groups = tuple(group_backlog(s, writers) for s in sorted(slices, key=lambda s: (s.partition, s.file_id)))
    partitions: dict[str, list[GroupBacklog]] = {}
    for group in groups:
        partitions.setdefault(group.partition, []).append(group)
    return Backlog(groups, tuple(
        PartitionBacklog(p, len(gs), sum(g.log_files for g in gs), sum(g.log_bytes for g in gs),
                         max(g.delta_commits for g in gs)) for p, gs in sorted(partitions.items())))


def log_writers(table: Table, since: str) -> dict[tuple[str, str], set[str]]:
    """(partition, log file name) -> the completed delta commits whose write stats name it, of
    those requested or completed at or after `since` (a table-version-6 log file is appended to
    by every delta commit of its slice; from version 8 each delta commit writes its own)."""
    found: dict[tuple[str, str], set[str]] = {}
    for instant in relevant_delta_commits(table.timeline.completed().with_actions({DELTA_COMMIT}), since):
        for stat in table.read(instant, CommitMetadata).stats():
            name = file_name_of(stat.path)
            if ".log." in name:
                found.setdefault((stat.partition, name), set()).add(instant.requested_time)
    return found


def relevant_delta_commits(completed: Iterable[Instant], since: str) -> list[Instant]:
    return [i for i in completed if i.requested_time >= since or (i.completion_time or "") >= since]


def group_backlog(piece: FileSlice, writers: Mapping[tuple[str, str], set[str]]) -> GroupBacklog:
    """A slice's backlog. A log file no write stat names (its delta commit archived) counts the
    delta commit its name carries (exact from table version 8 on; on version 6 the slice's base
    instant, one commit at least)."""
    commits: set[str] = set()
    for log in piece.log_files:
        commits |= writers.get((piece.partition, log.name)) or {log.instant_time}
    return GroupBacklog(piece.partition, piece.file_id, piece.base_instant_time,
                        piece.base_file.name if piece.base_file else None, len(piece.log_files),
                        sum(max(0, log.size) for log in piece.log_files), len(commits))


__all__ = ["Backlog", "GroupBacklog", "PartitionBacklog", "compaction_backlog", "group_backlog", "log_writers"]
