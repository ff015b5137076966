"""The table doctor's Prometheus figures (issue 28), read from each table's stored health at every
scrape (console/metrics.py's collector yields them): findings per table and kind, the tables with
each kind, each table's worst severity. The alert rules per severity (console/alerts.py) read the
same rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from console.models_health import SEVERITY_RANK, TableHealth
from timeline.doctor import KINDS


def health_metrics() -> Iterator[Metric]:
    rows = list(TableHealth.objects.select_related("table").only(
        "table__name", "findings", "worst", "error", "checked_at"))
    per_table = GaugeMetricFamily(
        "cleanline_table_findings", "The table doctor's findings of each kind on the table, at its last check "
        "(0 when none)", labels=["table_id", "table", "kind"])
    tables = GaugeMetricFamily("cleanline_tables_with_finding", "Tables whose last check found a finding of the "
                               "kind, by the finding's severity", labels=["kind", "severity"])
    worst = GaugeMetricFamily("cleanline_table_health_worst", "The worst severity the table doctor found on the "
                              "table: 0 healthy, 1 info, 2 warning, 3 error, 4 could not be checked",
                              labels=["table_id", "table"])
    checked = GaugeMetricFamily("cleanline_table_health_checked_timestamp_seconds", "When the table doctor last "
                                "checked the table (Unix time)", labels=["table_id", "table"])
    per_index = GaugeMetricFamily(
        "cleanline_index_findings", "The index-drift findings about each index partition of the table (column "
        "stats, partition stats, record index, secondary indexes), at its last check", labels=["table_id", "table",
                                                                                                  "index"])
    with_kind: Counter[tuple[str, str]] = Counter()
    for health in sorted(rows, key=lambda h: h.table_id):
        labels = [str(health.table_id), health.table.name]
        found = Counter(str(f.get("kind")) for f in health.findings)
        for kind in sorted(set(KINDS) | set(found)):
            per_table.add_metric([*labels, kind], found.get(kind, 0))
        for kind, severity in {(str(f.get("kind")), str(f.get("severity"))) for f in health.findings}:
            with_kind[(kind, severity)] += 1
        indexes = Counter(str((f.get("evidence") or {}).get("index")) for f in health.findings
                          if f.get("kind") == "index-drift" and (f.get("evidence") or {}).get("index"))
        for index, count in sorted(indexes.items()):
            per_index.add_metric([*labels, index], count)
        worst.add_metric(labels, health.rank)
        checked.add_metric(labels, health.checked_at.timestamp())
    for kind in KINDS:
        for severity in (s for s in SEVERITY_RANK if s):
            with_kind.setdefault((kind, severity), 0)
    for (kind, severity), count in sorted(with_kind.items()):
        tables.add_metric([kind, severity], count)
    yield from (per_table, tables, worst, checked, per_index)
