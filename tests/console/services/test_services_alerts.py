"""Compaction and clustering figures the sync keeps (issue 41), as Prometheus gauges (backlog delta
commits and log bytes per table, the oldest inflight table service's age per table and kind) and
as the alert rules on them (CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS, CLEANLINE_ALERT_BACKLOG_BYTES,
CLEANLINE_ALERT_SERVICE_INFLIGHT_HOURS; a table's own threshold on the alerts page), on a copy of a
real merge-on-read table with a compaction left inflight."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from console import services
from console.alerts import check_alerts
from console.models import Alert, AlertKind, AlertRule, Table
from tests.doctor.helpers import OLD, stuck_compaction
from timeline import HudiTable
from timeline.instant import moment_of

pytestmark = pytest.mark.django_db

MOR = "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle"  # log files, a metadata table


def samples() -> dict[tuple[str, str | None, str | None], float]:
    return {(s.name, s.labels.get("table_id"), s.labels.get("kind")): s.value for family in
            text_string_to_metric_families(Client().get("/metrics").content.decode()) for s in family.samples}


def test_services_gauges_and_alert_rules(console_table, settings) -> None:
    table: Table = console_table(MOR)
    stuck_compaction(Path(table.path.removeprefix("file:")), OLD)
    services.table_sync(table=table)
    table.refresh_from_db()
    lake = HudiTable.open(table.path)
    shown = lake.inspect.table_services()
    commits = shown.since_compaction.count  # type: ignore[union-attr]
    assert commits > 0 and shown.backlog.log_bytes > 0
    before = timezone.now()
    found = samples()
    key = str(table.pk)
    assert found[("cleanline_table_compaction_backlog_delta_commits", key, None)] == commits
    assert found[("cleanline_table_compaction_backlog_log_bytes", key, None)] == shown.backlog.log_bytes
    age = found[("cleanline_table_service_oldest_inflight_age_seconds", key, "compaction")]
    expected = (before - moment_of(OLD, lake.config.timezone)).total_seconds()
    assert expected - 5 < age < expected + 60
    assert ("cleanline_table_service_oldest_inflight_age_seconds", key, "clustering") not in found

    assert settings.CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS == 30 and settings.CLEANLINE_ALERT_SERVICE_INFLIGHT_HOURS == 6
    settings.CLEANLINE_ALERT_BACKLOG_BYTES = shown.backlog.log_bytes  # not above: no alert
    check_alerts()
    assert set(Alert.objects.filter(table=table).values_list("kind", flat=True)) >= {AlertKind.SERVICE_INFLIGHT}
    assert not Alert.objects.filter(kind__in=[AlertKind.BACKLOG_COMMITS, AlertKind.BACKLOG_BYTES]).exists()
    inflight = Alert.objects.get(kind=AlertKind.SERVICE_INFLIGHT, resolved_at=None)
    assert inflight.key == f"compaction:{OLD}" and "has been inflight for" in inflight.message
    assert f"/tables/{table.pk}/services" in inflight.message

    settings.CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS = commits - 1
    settings.CLEANLINE_ALERT_BACKLOG_BYTES = shown.backlog.log_bytes - 1
    check_alerts()
    over = Alert.objects.get(kind=AlertKind.BACKLOG_COMMITS, resolved_at=None)
    assert f"{commits} delta commits since the last compaction" in over.message
    assert Alert.objects.get(kind=AlertKind.BACKLOG_BYTES, resolved_at=None).message.startswith(
        f"{shown.backlog.log_bytes} bytes in ")
    # a table's own thresholds: above the figures, the alerts resolve
    AlertRule.objects.filter(table=table, kind=AlertKind.BACKLOG_COMMITS).update(threshold=commits, custom=True)
    AlertRule.objects.filter(table=table, kind=AlertKind.SERVICE_INFLIGHT).update(threshold=24 * 3650, custom=True)
    check_alerts()
    assert Alert.objects.get(pk=over.pk).resolved_at is not None
    assert Alert.objects.get(pk=inflight.pk).resolved_at is not None
    assert Alert.objects.filter(kind=AlertKind.BACKLOG_BYTES, resolved_at=None).exists()

    # a table synced before the figures were kept gets the timeline's at its next sync, changed or not
    Table.objects.filter(pk=table.pk).update(services={})
    assert not services.table_sync(table=table).changed
    kept = Table.objects.get(pk=table.pk).services
    assert kept["delta_commits"] == commits and kept["backlog"] is None and len(kept["pending"]) == 1
