"""Compaction and clustering alert rules (issue 41), wired into console/alerts.py's CONDITIONS and
read from what each table's last sync kept (`Table.services`), as the metrics of
console/metrics_services.py are:

- `backlog_commits`: a merge-on-read table with more delta commits since its last compaction than
  the threshold (CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS): nothing is compacting it, and every
  snapshot read merges more log files;
- `backlog_bytes`: more log bytes a snapshot read merges than the threshold
  (CLEANLINE_ALERT_BACKLOG_BYTES);
- `service_inflight`: a compaction, log compaction or clustering inflight for longer than the
  threshold (CLEANLINE_ALERT_SERVICE_INFLIGHT_HOURS), one alert per instant: a job that died
  leaves it inflight and blocks every later one (the doctor's stuck-table-service finding
  repairs it).

Each message names the Table services page, which says why nothing compacts."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from console.models import Table
from console.selectors.table_services import backlog_of, inflight_services


def _page(table: Table) -> str:
    return f"{settings.CLEANLINE_URL}{reverse('console:table_services', args=[table.pk])}"


def backlog_commits(table: Table, threshold: float | None, figures: object) -> dict[str, str]:
    """More delta commits since the table's last compaction than the threshold."""
    backlog = backlog_of(table)
    if backlog is None or backlog.delta_commits is None or backlog.delta_commits <= (threshold or 0):
        return {}
    since = f" (counted from {backlog.counted_from})" if backlog.counted_from else ""
    return {"backlog": f"{backlog.delta_commits} delta commits since the last compaction{since}, threshold "
                       f"{threshold:g}: nothing has compacted the table; why: {_page(table)}"}


def backlog_bytes(table: Table, threshold: float | None, figures: object) -> dict[str, str]:
    """More log bytes a snapshot read merges than the threshold."""
    backlog = backlog_of(table)
    if backlog is None or backlog.log_bytes is None or backlog.log_bytes <= (threshold or 0):
        return {}
    return {"backlog": f"{backlog.log_bytes} bytes in {backlog.log_files or 0} log files over "
                       f"{backlog.file_groups or 0} file groups wait for compaction (threshold {threshold:.0f} "
                       f"bytes); every snapshot read merges them; why: {_page(table)}"}


def service_inflight(table: Table, threshold: float | None, figures: object) -> dict[str, str]:
    """Table services inflight for longer than the threshold (hours), one alert per instant."""
    limit = (threshold or 0) * 3600
    return {f"{s.kind}:{s.instant}": f"{s.kind} {s.instant} has been inflight for {s.age_seconds / 3600:.1f} "
                                     f"hours (threshold {threshold:g} hours): a compaction or clustering left "
                                     "inflight blocks later ones; see the doctor's stuck-table-service finding "
                                     f"and {_page(table)}"
            for s in inflight_services(table) if s.age_seconds > limit}
