"""The write-stats index (issue 38): the sync hands every completed commit file larger than
CLEANLINE_INSTANT_INLINE_MAX_BYTES to a `WriteStatsIndexer`, which writes its write stats as rows
(`IndexedWriteStat`) while the library sums them, in the one pass the sync already makes over
the file (`timeline.inspect.WriteStatsSink`). The instant page then reads any page of them, or
any partition's, from the database (`console.selectors.instants.write_stats_page`)."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from console.models import WRITE_ACTIONS, Table
from console.models_write_stats import IndexedWriteStat, WriteStatsIndex
from timeline import Instant as LakeInstant
from timeline import State, Timeline
from timeline.metadata.records import WriteStat

BATCH = 5000  # rows written at a time: memory stays that of one batch however large the commit


class WriteStatsIndexer:
    """Indexes the completed commit file of one instant (`WriteStatsSink`): an index already
    complete for the same file name and size is kept, another is replaced."""

    def __init__(self, table: Table, instant: LakeInstant) -> None:
        self.table = table
        self.instant = instant
        self.file = ""
        self.size = 0
        self.index: WriteStatsIndex | None = None
        self.batch: list[IndexedWriteStat] = []
        self.count = 0
        self.longest = 0
        self.in_partition: dict[str, int] = {}

    def wants(self, path: str, size: int) -> bool:
        self.file, self.size = path.rsplit("/", 1)[-1], size
        return size > settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES and not WriteStatsIndex.objects.filter(
            table=self.table, file=self.file, size=size, complete=True).exists()

    def add(self, partition: str, stat: WriteStat) -> None:
        index = self.index or self._start()
        place = self.in_partition.get(partition, 0)
        self.in_partition[partition] = place + 1
        self.batch.append(IndexedWriteStat(
            index=index, ordinal=self.count, partition=partition, partition_ordinal=place, file_id=stat.file_id,
            path=stat.path, prev_commit=stat.prev_commit, num_writes=stat.num_writes, num_inserts=stat.num_inserts,
            num_update_writes=stat.num_update_writes, num_deletes=stat.num_deletes,
            total_write_bytes=stat.total_write_bytes, file_size=stat.file_size))
        self.count += 1
        self.longest = max(self.longest, len(partition))
        if len(self.batch) >= BATCH:
            self._flush()

    def done(self) -> None:
        index = self.index or self._start()
        self._flush()
        WriteStatsIndex.objects.filter(pk=index.pk).update(count=self.count, longest_partition=self.longest,
                                                           complete=True)

    def _start(self) -> WriteStatsIndex:
        """The file's index, begun empty (one left by an earlier read of it, or of an older
        file of that name, goes)."""
        WriteStatsIndex.objects.filter(table=self.table, file=self.file).delete()
        self.index = WriteStatsIndex.objects.create(table=self.table, requested_time=self.instant.requested_time,
                                                    action=self.instant.action, file=self.file, size=self.size)
        return self.index

    def _flush(self) -> None:
        IndexedWriteStat.objects.bulk_create(self.batch)
        self.batch = []


class Unindexed:
    """Which instants a sync reads again although their rows are as the lake says, to index
    them: completed writes whose completed file is above CLEANLINE_INSTANT_INLINE_MAX_BYTES and
    has no complete index (synced before the index existed, or before the limit was lowered).
    Only a full sync's timeline holds every instant's files, so only a full sync finds them."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.indexed: set[tuple[str, int]] | None = None

    def __call__(self, instant: LakeInstant, timeline: Timeline | None) -> bool:
        files_of = getattr(timeline, "files_of", None)  # the active timeline's state files; the archived has none
        if files_of is None or instant.action not in WRITE_ACTIONS or not instant.is_completed:
            return False
        status = files_of(instant).get(State.COMPLETED)
        if status is None or status.size <= settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES:
            return False
        if self.indexed is None:  # read once a sync, and only when a file above the limit is met
            self.indexed = set(WriteStatsIndex.objects.filter(table=self.table, complete=True)
                               .values_list("file", "size"))
        return (status.path.rsplit("/", 1)[-1], status.size) not in self.indexed


def write_stats_index_forget(*, table: Table, instants: Iterable[tuple[str, str]]) -> None:
    """Drop the indexes of instants (requested time, action) that left the active timeline
    (their rows go with them); a table has few indexes, so they are matched here."""
    gone = set(instants)
    if not gone:
        return
    found = WriteStatsIndex.objects.filter(table=table).values_list("pk", "requested_time", "action")
    WriteStatsIndex.objects.filter(pk__in=[pk for pk, time, action in found if (time, action) in gone]).delete()
