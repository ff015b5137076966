"""The archival figures the sync stores, as Prometheus gauges (active and archivable instants per
table) and as the alert on the active timeline's length (`CLEANLINE_ALERT_ACTIVE_INSTANTS`,
default 200; a table's own threshold on the alerts page), whose message names what holds
archival back."""

from __future__ import annotations

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from console import services
from console.alerts import check_alerts
from console.models import Alert, AlertKind, AlertRule, Table
from tests.console.helpers import completed_commits

pytestmark = pytest.mark.django_db


def test_archival_gauges_and_the_active_timeline_alert(archivable_table: Table, settings) -> None:
    table = archivable_table
    samples = {(s.name, s.labels.get("table_id")): s.value for family in text_string_to_metric_families(
        Client().get("/metrics").content.decode()) for s in family.samples}
    assert samples[("cleanline_table_active_instants", str(table.pk))] == 11
    assert samples[("cleanline_table_archivable_instants", str(table.pk))] == 9
    assert settings.CLEANLINE_ALERT_ACTIVE_INSTANTS == 200
    check_alerts()
    assert not Alert.objects.filter(kind=AlertKind.ACTIVE_TIMELINE).exists()  # 11 instants: below the default
    settings.CLEANLINE_ALERT_ACTIVE_INSTANTS = 10
    savepoint = completed_commits(table)[1]
    services.savepoint_create(table=table, user=None, instant_time=savepoint, comment="keep")
    check_alerts()
    alert = Alert.objects.get(kind=AlertKind.ACTIVE_TIMELINE, resolved_at=None)
    assert "holds 12 instants (threshold 10)" in alert.message
    assert f"savepoint {savepoint}" in alert.message and "would move 1 now" in alert.message
    AlertRule.objects.filter(table=table, kind=AlertKind.ACTIVE_TIMELINE).update(threshold=20)
    check_alerts()
    assert Alert.objects.get(pk=alert.pk).resolved_at is not None
