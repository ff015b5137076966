"""History over time (issue 30): a snapshot of each table's figures, kept by the sync
(`console.services.history.snapshot_record`) when they changed, and at least daily; older ones
go after CLEANLINE_HISTORY_DAYS. Imported by console/models.py."""

from __future__ import annotations

from django.db import models


class TableSnapshot(models.Model):
    """One table's figures as a sync left them: files, bytes, reclaimable bytes (what a clean
    under its own settings would free), the bytes Cleanline's cleans reclaimed so far, the
    active timeline's length, and a merge-on-read table's compaction backlog (delta commits
    since the last compaction, log bytes; None for copy-on-write tables and older snapshots)."""

    table = models.ForeignKey("console.Table", related_name="snapshots", on_delete=models.CASCADE)
    at = models.DateTimeField(help_text="when the sync that recorded it ended")
    files = models.BigIntegerField(default=0)
    bytes = models.BigIntegerField(default=0)
    reclaimable_bytes = models.BigIntegerField(default=0, help_text="what a clean under the table's settings "
                                                                    "would free, at the sync")
    reclaimed_bytes = models.BigIntegerField(default=0, help_text="bytes Cleanline's cleans of the table reclaimed "
                                                                  "up to then, in all")
    active_instants = models.IntegerField(null=True, blank=True, help_text="instants on the active timeline")
    backlog_delta_commits = models.IntegerField(null=True, blank=True, help_text="delta commits since the last "
                                                                                 "compaction (merge-on-read)")
    backlog_log_bytes = models.BigIntegerField(null=True, blank=True, help_text="bytes of log files a snapshot "
                                                                               "read merges (merge-on-read)")

    class Meta:
        ordering = ["table", "at", "pk"]
        indexes = [models.Index(fields=["table", "at"]), models.Index(fields=["at"])]

    FIGURES = ("files", "bytes", "reclaimable_bytes", "reclaimed_bytes", "active_instants", "backlog_delta_commits",
               "backlog_log_bytes")

    def figures(self) -> dict[str, int | None]:
        return {f: getattr(self, f) for f in self.FIGURES}
