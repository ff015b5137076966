"""The metadata table's own compaction: its pending compactions, the delta commits since its
last compaction, and what holds its next one back, as `HoodieBackedTableMetadataWriter.
performTableServices` decides after every data-table write: `validateTimelineBeforeSchedulingCompaction`
refuses while any data-table instant at or before the metadata table's latest completed delta
commit is pending (requested or inflight: a compacted base file at T must hold every data-table
action up to T; apache/hudi #11535) or while a compaction or log compaction of the metadata table
itself is pending; then `compactIfNecessary` schedules one with the metadata table's write config
(NUM_COMMITS over `hoodie.metadata.compact.max.delta.commits`). Reads only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from timeline.instant import COMMIT, DELTA_COMMIT, Instant
from timeline.mdt.reader import metadata_table
from timeline.services.pending import PendingService, pending_services
from timeline.services.trigger import delta_commits_since_compaction
from timeline.table import Table


@dataclass(frozen=True, slots=True)
class MetadataTableCompaction:
    """The metadata table's compaction state: its last completed compaction (None: none yet),
    the delta commits since (what its next compaction's NUM_COMMITS trigger counts, against
    `max_delta_commits`), its latest completed delta commit, its pending compactions and log
    compactions, and the data-table instants pending at or before that delta commit, which hold
    its compaction back."""

    last_compaction: str | None
    delta_commits: int
    max_delta_commits: int
    latest_delta_commit: str | None
    pending: tuple[PendingService, ...]
    blocking_instants: tuple[Instant, ...]

    @property
    def due(self) -> bool:
        """Whether its trigger holds (it compacts at the next data-table write unless blocked)."""
        return self.delta_commits >= self.max_delta_commits

    @property
    def blocked(self) -> bool:
        return bool(self.blocking_instants or self.pending)


def metadata_table_compaction(table: Table, max_delta_commits: int, *,
                              now: datetime | None = None) -> MetadataTableCompaction | None:
    """The compaction state of `table`'s metadata table; None when it has none."""
    mdt = metadata_table(table)
    if mdt is None:
        return None
    timeline = mdt.mdt.timeline
    counted = delta_commits_since_compaction(timeline, mdt.mdt.version)
    last = timeline.with_actions({COMMIT}).completed().last()
    latest = timeline.with_actions({DELTA_COMMIT}).completed().last()
    pending = pending_services(mdt.mdt, mdt.mdt.list_partitions(), now=now)
    blocking: tuple[Instant, ...] = ()
    if latest is not None:
        blocking = table.timeline.pending().before_or_on(latest.requested_time).instants
    return MetadataTableCompaction(None if last is None else last.requested_time,
                                   0 if counted is None else counted.count, max_delta_commits,
                                   None if latest is None else latest.requested_time, pending, blocking)


__all__ = ["MetadataTableCompaction", "metadata_table_compaction"]
