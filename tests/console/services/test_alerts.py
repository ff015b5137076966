"""Alert rules fired by real conditions on fixture tables (a clean that failed, a plan gone
stale, a write left inflight, an old savepoint, reclaimable bytes, a metadata table out of
sync), delivered to a real SMTP server (aiosmtpd) and a real HTTP webhook receiver, both on
127.0.0.1 and started by the test: once each, not again at the next check, and resolved (with
the audit log saying so) once the condition is gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from console import services, tasks
from console.alerts import check_alerts
from console.metrics import timeline_zone
from console.models import Alert, AlertKind, AlertRule, AuditEvent, CleanPlan, Table
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from console.zones import text_in_zone
from tests.console.helpers import SHORT_RETENTION, Sinks, login, person
from timeline import HudiTable

pytestmark = pytest.mark.django_db


def base(table: Table) -> Path:
    return Path(table.path.removeprefix("file:"))


def open_alert(table: Table, kind: str) -> Alert:
    return Alert.objects.get(table=table, kind=kind, resolved_at=None)


def assert_delivered_once(alert: Alert, sinks: Sinks) -> None:
    """One e-mail to every recipient and one webhook POST, saying what the alert says."""
    (mail,) = sinks.mails_of(alert)
    assert mail["Subject"] == f"[Cleanline] {alert.table.name}: {AlertKind(alert.kind).label}"
    # the message as its readers read it: an instant time with its readable time beside it (issue 43)
    read = text_in_zone(alert.message, ZoneInfo(settings.TIME_ZONE), timeline_zone(alert.table))
    assert mail["From"] == "alerts@cleanline.test" and read in mail.get_content()
    assert [r for r, m in sinks.mails if m is mail] == [["ops@cleanline.test", "lead@cleanline.test"]]
    (hook,) = sinks.hooks_of(alert)
    assert hook["text"] == f"[Cleanline] {alert.table.name}: {AlertKind(alert.kind).label}: {alert.message}"
    assert (hook["cleanline"]["kind"], hook["cleanline"]["key"], hook["cleanline"]["table"]) == (
        alert.kind, alert.key, alert.table.name)
    alert.refresh_from_db()
    assert {name: d["outcome"] for name, d in alert.deliveries.items()} == {
        "email": "sent", "webhook 1 (127.0.0.1)": "sent"}
    assert "secret-part" not in json.dumps(alert.deliveries)


def audited(alert: Alert, action: str) -> list[AuditEvent]:
    return [e for e in AuditEvent.objects.filter(action=action, table=alert.table) if e.parameters["alert"] == alert.pk]


def fires_once(table: Table, kind: str, sinks: Sinks) -> Alert:
    """A check fires the alert and delivers it once; the next check delivers nothing more."""
    check_alerts()
    alert = open_alert(table, kind)
    assert_delivered_once(alert, sinks)
    (fired,) = audited(alert, "alert.fired")
    assert fired.username == "system" and fired.result == alert.message
    before = sinks.counts()
    check_alerts()
    assert sinks.counts() == before
    assert open_alert(table, kind).pk == alert.pk
    return alert


def resolves(alert: Alert, sinks: Sinks, why: str = "the condition is gone") -> None:
    before = sinks.counts()
    check_alerts()
    alert.refresh_from_db()
    assert alert.resolved_at is not None
    (event,) = audited(alert, "alert.resolved")
    assert event.username == "system" and event.result == why
    assert sinks.counts() == before  # nothing is sent on resolution


def drafted(table: Table, **overrides: object) -> CleanPlan:
    plan = services.plan_request(table=table, user=person(f"op{CleanPlan.objects.count()}", "operator"),
                                 overrides={**SHORT_RETENTION, **overrides})
    return services.plan_build(plan=plan)


def cleaned(table: Table) -> CleanPlan:
    plan = services.plan_approve(plan=drafted(table), user=None)
    plan = services.plan_run(plan=plan)
    assert plan.status == ApprovalStatus.COMPLETED
    return plan


def test_alerts_a_failed_clean_fires_once_through_the_task_and_resolves_when_a_clean_completes(
        console_table, sinks: Sinks) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    plan = services.plan_approve(plan=drafted(table), user=None)
    lake = HudiTable.open(table.path)
    (pending,) = lake.timeline.cleans().pending()
    for status in lake.timeline.files_of(pending).values():
        Path(status.path).unlink()  # someone removed the requested clean: the run fails
    assert services.plan_run(plan=plan).status == ApprovalStatus.FAILED
    assert tasks.check_alerts.delay().get() == 1  # the periodic task (eager here)
    alert = fires_once(table, AlertKind.CLEAN_FAILED, sinks)
    assert alert.key == "cleans" and f"clean plan #{plan.pk} failed" in alert.message
    page = login("viewer").get(reverse("console:alerts"))
    # the page shows the message's instant time readable (issue 43): the raw one is its tooltip
    head, _, instant_time = alert.message.partition("; resolved")[0].rpartition(" ")
    assert page.status_code == 200 and head.encode() in page.content
    assert f'title="{instant_time}" data-local="datetime">'.encode() in page.content
    cleaned(table)
    resolves(alert, sinks)


def test_alerts_a_stale_plan_fires_and_resolves_once_a_new_plan_is_requested(console_table, sinks: Sinks) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    plan = drafted(table, policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1)
    doomed = next(f for f in stored_plan(plan).deletes() if not f.file_name.startswith("."))  # type: ignore[union-attr]
    assert doomed is not None
    HudiTable.open(table.path).maintenance().create_savepoint(doomed.base_instant)
    assert services.plan_approve(plan=plan, user=None).status == ApprovalStatus.STALE
    alert = fires_once(table, AlertKind.PLAN_STALE, sinks)
    assert alert.key == f"plan:{plan.pk}" and f"now kept (savepoint {doomed.base_instant})" in alert.message
    services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)
    resolves(alert, sinks)


def test_alerts_a_write_left_inflight_fires_counts_as_failed_once_its_heartbeat_stops_and_resolves(
        console_table, sinks: Sinks) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    lake = HudiTable.open(table.path)
    last = lake.timeline.commits().completed().last()
    assert last is not None
    completed = Path(lake.timeline.files_of(last)[max(lake.timeline.files_of(last))].path)
    kept = completed.read_bytes()
    completed.unlink()  # its writer is still at it: its heartbeat is alive, it is not a failed write
    heartbeat = base(table) / ".hoodie" / ".heartbeat" / last.requested_time
    heartbeat.parent.mkdir(exist_ok=True)
    heartbeat.write_bytes(b"")
    services.table_sync(table=table)
    table.refresh_from_db()
    assert table.instants.get(requested_time=last.requested_time, action="commit").state == "INFLIGHT"
    assert table.failed_writes == 0
    heartbeat.unlink()  # the writer died: the timeline is unchanged, the next sync still sees it
    services.table_sync(table=table)
    table.refresh_from_db()
    assert table.failed_writes == 1 == len(HudiTable.open(table.path).inspect.failed_writes())
    alert = fires_once(table, AlertKind.WRITE_PENDING, sinks)
    assert alert.key == f"commit:{last.requested_time}" and "inflight for" in alert.message
    assert "failed writes now: 1" in alert.message
    completed.write_bytes(kept)  # it completed after all
    services.table_sync(table=table)
    table.refresh_from_db()
    assert table.failed_writes == 0
    resolves(alert, sinks)


def test_alerts_an_old_savepoint_fires_a_failed_webhook_is_retried_alone_and_it_resolves(
        console_table, sinks: Sinks, settings) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    lake = HudiTable.open(table.path)
    first, second = [i.requested_time for i in lake.timeline.commits().completed()][:2]
    services.savepoint_create(table=table, user=None, instant_time=second, comment="")
    sinks.fail_hooks.append(500)  # the receiver fails the first POST
    check_alerts()
    alert = open_alert(table, AlertKind.SAVEPOINT_OLD)
    assert alert.key == f"savepoint:{second}" and "days old (threshold 30 days)" in alert.message
    assert alert.deliveries["webhook 1 (127.0.0.1)"]["outcome"] == "failed"
    assert alert.deliveries["webhook 1 (127.0.0.1)"]["error"] == "failed"  # the status only in the server log
    assert len(sinks.mails_of(alert)) == 1 and not sinks.hooks_of(alert)
    alert = fires_once(table, AlertKind.SAVEPOINT_OLD, sinks)  # the webhook again, not the e-mail
    assert alert.deliveries["webhook 1 (127.0.0.1)"]["attempts"] == 2
    # an earlier savepoint is now where archival stops: a new alert about it; the other resolves
    services.savepoint_create(table=table, user=None, instant_time=first, comment="")
    check_alerts()
    earlier = open_alert(table, AlertKind.SAVEPOINT_OLD)
    assert earlier.key == f"savepoint:{first}"
    assert_delivered_once(earlier, sinks)
    alert.refresh_from_db()
    assert alert.resolved_at is not None and audited(alert, "alert.resolved")
    settings.CLEANLINE_ALERT_SAVEPOINT_DAYS = 100000  # the default threshold, when the rule has none
    resolves(earlier, sinks)


def test_alerts_reclaimable_bytes_over_an_admins_threshold_rules_turned_off_and_on(
        console_table, sinks: Sinks) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    plan = drafted(table)
    assert plan.bytes_to_delete > 1000
    check_alerts()
    assert not Alert.objects.filter(kind=AlertKind.RECLAIMABLE).exists()  # below the 100 GiB default
    url = reverse("console:alerts")
    form = {"table": table.pk, **{f"enabled_{k}": "on" for k in AlertKind.values},
            f"threshold_{AlertKind.RECLAIMABLE}": "1000"}
    assert login("operator").post(url, form).status_code == 403
    assert login("viewer").post(url, form).status_code == 403
    admin = login("admin")
    assert admin.post(url, form).status_code == 302
    assert AlertRule.objects.get(table=table, kind=AlertKind.RECLAIMABLE).threshold == 1000
    (changed,) = AuditEvent.objects.filter(action="alert.rules.changed")
    assert changed.parameters[AlertKind.RECLAIMABLE] == {"enabled": True, "threshold": 1000}
    alert = fires_once(table, AlertKind.RECLAIMABLE, sinks)
    assert alert.message.startswith(f"{plan.bytes_to_delete} bytes in {plan.files_to_delete} files")
    rules_page = admin.get(url, {"table": table.pk})
    assert b'name="threshold_reclaimable"' in rules_page.content and b'value="1000.0"' in rules_page.content
    off = {k: v for k, v in form.items() if k != f"enabled_{AlertKind.RECLAIMABLE}"}
    admin.post(url, off)
    resolves(alert, sinks, "the rule was turned off")
    admin.post(url, form)
    again = fires_once(table, AlertKind.RECLAIMABLE, sinks)  # a new alert, delivered once more
    assert again.pk != alert.pk
    services.plan_run(plan=services.plan_approve(plan=plan, user=None))
    resolves(again, sinks)


def test_alerts_the_metadata_table_out_of_sync_fires_and_resolves_when_storage_agrees(
        console_table, sinks: Sinks) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_meta")
    assert table.metadata_table_enabled
    check_alerts()
    assert not Alert.objects.exists()  # in sync: nothing fires
    lake = HudiTable.open(table.path)
    piece = lake.file_system_view().latest_slices()[0]
    data = base(table) / piece.partition / piece.file_names[0]
    saved = data.with_suffix(".saved")
    shutil.move(data, saved)  # a data file deleted behind Hudi's back
    alert = fires_once(table, AlertKind.MDT_OUT_OF_SYNC, sinks)
    assert alert.key == "files" and "1 only in the metadata table" in alert.message
    shutil.move(saved, data)
    resolves(alert, sinks)


def test_alerts_page_roles(console_table) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    url = reverse("console:alerts")
    viewer = login("viewer").get(url, {"table": table.pk})
    assert viewer.status_code == 200 and b"Only admins change rules" in viewer.content
    assert b'name="threshold_' not in viewer.content
    assert Client().get(url).status_code == 302  # anonymous: to the login page
    outsider = Client()
    outsider.force_login(User.objects.create_user("no-role"))
    assert outsider.get(url).status_code == 404
    admin = login("admin")
    bad = admin.post(url, {"table": table.pk, f"threshold_{AlertKind.WRITE_PENDING}": "-1"})
    assert bad.status_code == 200 and b"threshold_write_pending" in bad.content
    assert not AlertRule.objects.filter(threshold=-1).exists()
