"""The write-stats index (issue 38): a huge commit's write stats, read once by the sync as it
sums them (`console.services.write_stats`), so that its instant page and the API answer any
page of them, or any partition's, from the database in time independent of the file's size
(the file itself is never read in a request). Imported by console/models.py."""

from __future__ import annotations

from django.db import models


class WriteStatsIndex(models.Model):
    """The index of one completed state file of commit metadata larger than
    CLEANLINE_INSTANT_INLINE_MAX_BYTES, by its name and size (a file of another size is not the
    one indexed). `complete` once the sync has added its last stat; a file read only in part
    (the sync failed) is not used."""

    table = models.ForeignKey("console.Table", related_name="write_stats_indexes", on_delete=models.CASCADE)
    requested_time = models.CharField(max_length=32)
    action = models.CharField(max_length=32)
    file = models.CharField(max_length=255, help_text="the state file's name in the timeline folder")
    size = models.BigIntegerField(help_text="the state file's size in bytes when it was indexed")
    count = models.IntegerField(default=0, help_text="write stats indexed")
    longest_partition = models.IntegerField(default=0, help_text="the longest partition path's length")
    complete = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["table", "file"], name="write_stats_index_unique_per_file")]
        indexes = [models.Index(fields=["table", "requested_time", "action"])]

    def __str__(self) -> str:
        return f"{self.file} ({self.count} write stats)"


class IndexedWriteStat(models.Model):
    """One write stat of an indexed file: its place in the file (`ordinal`) and in its
    partition (`partition_ordinal`), and the fields the instant page shows (`WriteStat`'s)."""

    index = models.ForeignKey(WriteStatsIndex, related_name="stats", on_delete=models.CASCADE)
    ordinal = models.IntegerField()
    partition = models.TextField()
    partition_ordinal = models.IntegerField()
    file_id = models.TextField()
    path = models.TextField()
    prev_commit = models.TextField()
    num_writes = models.BigIntegerField()
    num_inserts = models.BigIntegerField()
    num_update_writes = models.BigIntegerField()
    num_deletes = models.BigIntegerField()
    total_write_bytes = models.BigIntegerField()
    file_size = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["index", "ordinal"], name="indexed_write_stat_unique_ordinal")]
        indexes = [models.Index(fields=["index", "partition", "partition_ordinal"])]

    def __str__(self) -> str:
        return self.path
