"""History over time: after each sync a snapshot of the table's figures (`TableSnapshot`), taken
from the Table's fields as the sync left them (a merge-on-read table's compaction backlog with
them, from `Table.services`): one when they changed or the sync changed the
timeline, and at least one a day; snapshots older than CLEANLINE_HISTORY_DAYS are deleted (the
newest of a table always stays)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from console.models import CleanPlan, Job, JobStatus, Table
from console.models_approvals import ApprovalStatus
from console.models_history import TableSnapshot

# A table whose figures did not change still gets a snapshot once its last is this old.
AT_LEAST_EVERY = timedelta(days=1)


def reclaimed_bytes(table: Table) -> int:
    """Bytes Cleanline's cleans of `table` reclaimed in all: its completed plans' and the
    completed runs of pending cleans found on its timeline (Hudi's clean metadata records no
    sizes, so cleans Hudi's writers ran count nothing)."""
    plans = CleanPlan.objects.filter(table=table, status=ApprovalStatus.COMPLETED).aggregate(
        b=Sum("progress_bytes"))["b"]
    jobs = Job.objects.filter(table=table, kind=Job.Kind.CLEAN, status=JobStatus.COMPLETED).values_list("result",
                                                                                                      flat=True)
    return int(plans or 0) + sum(int((r or {}).get("bytes") or 0) for r in jobs)


def backlog_of(table: Table) -> dict[str, int | None]:
    """A merge-on-read table's compaction backlog as its last sync kept it (`Table.services`):
    delta commits since the last compaction and log bytes; None for a copy-on-write table or
    before the first sync that kept them."""
    kept = table.services or {}
    backlog = kept.get("backlog") or {}
    commits, log_bytes = kept.get("delta_commits"), backlog.get("log_bytes")
    if kept.get("table_type") != "MERGE_ON_READ":
        commits = log_bytes = None
    return {"backlog_delta_commits": None if commits is None else int(commits),
            "backlog_log_bytes": None if log_bytes is None else int(log_bytes)}


def snapshot_record(*, table: Table, changed: bool = True, now: datetime | None = None) -> TableSnapshot | None:
    """Record the table's figures as its sync left them (read again from the database), unless
    the sync changed nothing (`changed` false), the figures equal the last snapshot's and that
    one is younger than a day. Returns the new snapshot, or None. Then deletes the table's
    snapshots older than CLEANLINE_HISTORY_DAYS, except its newest."""
    now = now or timezone.now()
    current = Table.objects.filter(pk=table.pk).first()
    if current is None:
        return None
    figures = {"files": current.total_files, "bytes": current.total_bytes,
               "reclaimable_bytes": int(current.reclaimable.get("bytes") or 0),
               "reclaimed_bytes": reclaimed_bytes(current), "active_instants": current.active_instants,
               **backlog_of(current)}
    last = TableSnapshot.objects.filter(table=current).order_by("-at", "-pk").first()
    made = None
    if last is None or changed or last.figures() != figures or now - last.at >= AT_LEAST_EVERY:
        made = TableSnapshot.objects.create(table=current, at=now, **figures)
    newest = made or last
    old = TableSnapshot.objects.filter(table=current, at__lt=now - timedelta(days=settings.CLEANLINE_HISTORY_DAYS))
    if newest is not None:
        old = old.exclude(pk=newest.pk)
    old.delete()
    return made
