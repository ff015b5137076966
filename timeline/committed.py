"""Which base and log files on storage are committed: the one definition the metadata-table drift
check (`timeline/doctor/mdt_drift.py`, and `cleanline mdt validate`, `timeline/mdt/validate.py`)
and the orphan check (`timeline/doctor/orphans.py`) share, so that no file is both a drift and an
orphan.

A file is committed when
- the write stats of a completed write name it. Hudi fills the metadata table's `files`
  partition from commit metadata alone (`HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords`,
  one entry per write stat): a file no write stat names is never committed, whatever file id
  or completed instant its name carries; or
- its instant is older than every instant the timelines know. The file-system view counts a
  slice whose instant is before the timeline starts as committed
  (`HoodieFileGroup.isFileSliceCommitted` with `HoodieDefaultTimeline.containsOrBeforeTimelineStarts`):
  the write that made it left the timelines (archived, and the archive gone) and nothing that
  could say otherwise can be read. Such a file is committed but no commit metadata names it.

A file of an instant pending on the active timeline is a write in flight: neither committed nor
an orphan. Every other file (a completed instant's that no write stat names, a rolled-back
instant's, an instant's on no timeline) is not committed: the metadata table must not list it,
and the orphan check decides whether it can be deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from timeline.exceptions import CleanlineError
from timeline.files import (
    BASE_FILE_EXTENSIONS,
    PARTITION_METADATA_PREFIX,
    is_base_file_name,
    parse_base_file,
    parse_log_file,
)
from timeline.instant import State
from timeline.metadata.references import references_of
from timeline.timeline import WRITE_ACTIONS

if TYPE_CHECKING:
    from timeline.table import Table


class Commitment(str, Enum):
    """Where a file on storage stands."""

    NAMED = "named"            # a completed write's write stats name it
    BEFORE_HISTORY = "before"  # its instant is older than every known instant (the file-system view's rule)
    PENDING = "pending"        # its instant is pending: a write in flight
    NOT_COMMITTED = "not committed"
    NOT_DATA = "not data"      # not a base or log file (FSUtils.isDataFile)

    @property
    def committed(self) -> bool:
        return self in (Commitment.NAMED, Commitment.BEFORE_HISTORY)


@dataclass(frozen=True, slots=True)
class CommittedFiles:
    """What decides whether a file is committed: the file names completed writes' write stats
    name, the earliest instant the timelines know (None: they know none), and the instants
    pending on the active timeline."""

    named: frozenset[str]
    earliest: str | None
    pending: frozenset[str]

    def of(self, name: str) -> Commitment:
        """Where the file `name` stands (a name with a base file's extension that carries no
        instant is a data file to Hudi, `FSUtils.isBaseFile`, and committed only if named)."""
        instant = instant_of(name)
        if instant is None and not is_data_file(name):
            return Commitment.NOT_DATA
        if name in self.named:
            return Commitment.NAMED
        if instant is None:
            return Commitment.NOT_COMMITTED
        if instant in self.pending:
            return Commitment.PENDING
        if self.before_history(instant):
            return Commitment.BEFORE_HISTORY
        return Commitment.NOT_COMMITTED

    def before_history(self, instant: str) -> bool:
        """Whether a file of `instant` that no write stat names is committed all the same: its
        instant is not pending and is older than every instant the timelines know (the
        file-system view's rule). What `of` answers BEFORE_HISTORY for, from an instant its
        caller parsed already (the orphan rule asks once per instant, not once per file)."""
        return instant not in self.pending and self.earliest is not None and instant < self.earliest

    def is_committed(self, name: str) -> bool:
        return self.of(name).committed


def instant_of(name: str) -> str | None:
    """The instant a base or log file's name carries (`FSUtils.getCommitTime`); None for any
    other file."""
    try:
        return parse_base_file(name).instant_time if is_base_file_name(name) else parse_log_file(name).instant_time
    except ValueError:
        return None


def is_data_file(name: str) -> bool:
    """`FSUtils.isDataFile`: a base file by its extension, or a log file by its name's pattern;
    never a partition metadata file (`HoodieBackedTableMetadataWriter`'s `DirectoryInfo` takes
    those for partition markers before it asks `isDataFile`)."""
    if name.startswith(PARTITION_METADATA_PREFIX):
        return False
    return name[name.rfind("."):] in BASE_FILE_EXTENSIONS or instant_of(name) is not None


def committed_files(named: Iterable[str], known: Iterable[str], pending: Iterable[str]) -> CommittedFiles:
    """The definition over what the caller read: file names completed writes name, every
    instant the timelines know, the pending instants."""
    return CommittedFiles(frozenset(named), min(known, default=None), frozenset(pending))


def active_committed_files(table: Table) -> CommittedFiles:
    """The definition over the active timeline alone (`cleanline mdt validate`, which does not read
    the archived timeline): what its completed writes name, and its first instant as the
    earliest (the file-system view's own reading). A completed write whose metadata cannot be
    read names nothing. The doctor reads the archived timeline too (`Survey.committed`)."""
    timeline = table.timeline
    named: set[str] = set()
    for instant in timeline.completed():
        if instant.action not in WRITE_ACTIONS:
            continue
        try:
            raw = table.read_instant(instant)
        except CleanlineError:
            continue
        named |= references_of(raw, action=instant.action, state=State.COMPLETED).names
    return committed_files(named, (i.requested_time for i in timeline),
                           (i.requested_time for i in timeline.pending()))


__all__ = ["Commitment", "CommittedFiles", "active_committed_files", "committed_files", "instant_of", "is_data_file"]
