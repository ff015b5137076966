"""Compaction and clustering as Prometheus figures (issue 41), read at every scrape from what each
table's last sync kept (`Table.services`: console/services/compaction.py) and yielded by
console/metrics.py's collector: a merge-on-read table's compaction backlog (delta commits since
its last compaction, log bytes a snapshot read merges) and the age of its oldest inflight table
service of each kind. The alert rules on them (console/alerts_services.py) read the same."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from console.models import Table
from console.selectors.table_services import backlog_of, inflight_services


def service_metrics() -> Iterator[Metric]:
    tables = list(Table.objects.only("pk", "name", "properties", "services").order_by("pk"))
    commits = GaugeMetricFamily(
        "cleanline_table_compaction_backlog_delta_commits", "Delta commits since the merge-on-read table's last "
        "compaction (what its compaction trigger counts), at the last sync", labels=["table_id", "table"])
    log_bytes = GaugeMetricFamily(
        "cleanline_table_compaction_backlog_log_bytes", "Bytes of the log files a snapshot read of the merge-on-read "
        "table merges onto their base files, at the last listing", labels=["table_id", "table"])
    inflight = GaugeMetricFamily(
        "cleanline_table_service_oldest_inflight_age_seconds", "Age (by its instant time) of the table's oldest "
        "inflight table service of the kind (compaction, logcompaction, clustering); absent when none is inflight",
        labels=["table_id", "table", "kind"])
    for table in tables:
        labels = [str(table.pk), table.name]
        backlog = backlog_of(table)
        if backlog is not None and backlog.delta_commits is not None:
            commits.add_metric(labels, backlog.delta_commits)
        if backlog is not None and backlog.log_bytes is not None:
            log_bytes.add_metric(labels, backlog.log_bytes)
        oldest: dict[str, float] = {}
        for service in inflight_services(table):
            oldest[service.kind] = max(oldest.get(service.kind, 0.0), service.age_seconds)
        for kind, age in sorted(oldest.items()):
            inflight.add_metric([*labels, kind], age)
    yield from (commits, log_bytes, inflight)
