"""Alerts set up in the console (issue 30): admins edit the lake-wide default of every rule and
the channels (e-mail addresses, webhooks) with a "send a test" button per channel; the settings
are the defaults and the console's values override them; each table's rules follow the lake
unless set for that table; every change audited. Delivered to a real SMTP server and a real
webhook receiver on 127.0.0.1 (the `sinks` fixture)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from console import services
from console.alerts import check_alerts, rules_of, threshold_of
from console.models import Alert, AlertKind, AuditEvent, Table
from console.models_alerts import AlertChannel
from tests.console.helpers import SHORT_RETENTION, Sinks, login, person

pytestmark = pytest.mark.django_db

TABLE = "sample_table/cow/v9_txns_simple_nometa"
SETUP = reverse("console:alerts_setup")


def lake_form(**overrides: Any) -> dict[str, Any]:
    """Every rule on (info findings too) with no threshold of its own, then `overrides`."""
    return {**{f"enabled_{k}": "on" for k in AlertKind.values}, **overrides}


def test_alerts_setup_channels_replace_the_settings_and_each_takes_a_test(console_table, sinks: Sinks,
                                                                        settings) -> None:
    table = console_table(TABLE)
    admin = login("admin")
    page = admin.get(SETUP).content.decode()
    assert 'data-channel="settings:webhook:1"' in page and "ops@cleanline.test" in page
    assert "secret-part" not in page  # a webhook shows its host only
    admin.post(reverse("console:alert_channel_test"), {"channel": "settings:webhook:1"})
    (hook,) = sinks.hooks
    assert hook["cleanline"]["test"] is True and "test: alerts reach this webhook" in hook["text"]

    receiver = settings.CLEANLINE_ALERT_WEBHOOKS[0].rsplit("/hooks/", 1)[0]
    console_hook = f"{receiver}/hooks/console/another-secret"
    admin.post(reverse("console:alert_channel_add"), {"kind": "webhook", "target": console_hook})
    admin.post(reverse("console:alert_channel_add"), {"kind": "email", "target": "oncall@cleanline.test"})
    refused = admin.post(reverse("console:alert_channel_add"), {"kind": "webhook", "target": "ftp://x"}, follow=True)
    assert "A webhook is an http:// or https:// URL." in refused.content.decode()
    hook_row, mail_row = AlertChannel.objects.get(kind="webhook"), AlertChannel.objects.get(kind="email")
    page = admin.get(SETUP).content.decode()
    assert f'data-channel="console:{hook_row.pk}"' in page and 'data-channel="settings:' not in page  # replaced
    for row in (hook_row, mail_row):
        answer = admin.post(reverse("console:alert_channel_test"), {"channel": f"console:{row.pk}"}, follow=True)
        assert "A test was sent to" in answer.content.decode()
    assert len(sinks.hooks) == 2 and sinks.hooks[1]["cleanline"]["test"] is True
    ((recipients, mail),) = sinks.mails
    assert recipients == ["oncall@cleanline.test"] and "test of an alert channel" in mail["Subject"]

    services.plan_build(plan=services.plan_request(table=table, user=person("bob", "operator"),
                                                   overrides=SHORT_RETENTION, enqueue=False))
    check_alerts()  # a real alert: the plan waits for approval
    alert = Alert.objects.get(table=table, kind=AlertKind.APPROVAL_WAITING)
    assert sinks.hooks_of(alert) and [r for r, m in sinks.mails if m in sinks.mails_of(alert)] == [
        ["oncall@cleanline.test"]]  # the console's channels, not the settings' ops@ and lead@
    assert {n: d["outcome"] for n, d in alert.deliveries.items()} == {
        "email": "sent", f"webhook #{hook_row.pk} (127.0.0.1)": "sent"}

    admin.post(reverse("console:alert_channel_off", args=[hook_row.pk]))
    failing = admin.post(reverse("console:alert_channel_test"), {"channel": "console:999"}, follow=True)
    assert "No such channel." in failing.content.decode()
    events = list(AuditEvent.objects.filter(action__startswith="alert.channel.").order_by("pk"))
    assert [e.action for e in events] == ["alert.channel.tested", "alert.channel.added", "alert.channel.added",
                                          "alert.channel.tested", "alert.channel.tested", "alert.channel.changed"]
    assert events[1].parameters["shown"] == "127.0.0.1" and events[-1].parameters["enabled"] is False
    assert "secret" not in json.dumps([e.parameters for e in events])
    for row in (hook_row, mail_row):
        admin.post(reverse("console:alert_channel_remove", args=[row.pk]))
    assert 'data-channel="settings:webhook:1"' in admin.get(SETUP).content.decode()  # the settings' again


def test_alerts_setup_lake_defaults_reach_every_table_that_follows_them(console_table, sinks: Sinks,
                                                                       settings) -> None:
    one, two = console_table(TABLE), console_table("sample_table/cow/v9_txns_simple_meta")
    for table in (one, two):
        rules_of(table)
    reclaimable = AlertKind.RECLAIMABLE
    assert threshold_of(rules_of(one)[reclaimable]) == settings.CLEANLINE_ALERT_RECLAIMABLE_BYTES
    admin = login("admin")
    admin.post(SETUP, {k: v for k, v in lake_form(**{f"threshold_{reclaimable}": "1000"}).items()
                       if k != f"enabled_{AlertKind.SAVEPOINT_OLD}"})
    rules = rules_of(one)
    assert threshold_of(rules[reclaimable]) == 1000 and not rules[AlertKind.SAVEPOINT_OLD].enabled
    assert rules[AlertKind.HEALTH_INFO].enabled  # the lake turned info findings on

    own = {"table": two.pk, **{f"enabled_{k}": "on" for k in AlertKind.values}, f"threshold_{reclaimable}": "5e12"}
    admin.post(reverse("console:alerts"), own)  # two's own rules
    admin.post(SETUP, lake_form(**{f"threshold_{reclaimable}": "2000", f"enabled_{AlertKind.PLAN_STALE}": ""}))
    ones, twos = rules_of(one), rules_of(two)
    assert threshold_of(ones[reclaimable]) == 2000 and ones[AlertKind.SAVEPOINT_OLD].enabled
    assert not ones[AlertKind.PLAN_STALE].enabled
    assert threshold_of(twos[reclaimable]) == 5e12 and twos[AlertKind.PLAN_STALE].enabled  # its own stay

    for table in (one, two):
        plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION,
                                                              enqueue=False))
        assert plan.bytes_to_delete > 2000, (table.name, plan.bytes_to_delete)
    check_alerts()
    alert = Alert.objects.get(kind=reclaimable, resolved_at=None)
    assert alert.table_id == one.pk and "(threshold 2000 bytes)" in alert.message and sinks.hooks_of(alert)
    admin.post(reverse("console:alerts"), {"table": two.pk, **{f"lake_{k}": "on" for k in AlertKind.values}})
    assert threshold_of(rules_of(two)[reclaimable]) == 2000  # follows the lake again
    check_alerts()
    assert set(Alert.objects.filter(kind=reclaimable, resolved_at=None).values_list("table_id", flat=True)) == {
        one.pk, two.pk}
    as_shown = {"table": one.pk, **{f"lake_{k}": "on" for k in AlertKind.values},  # the form as a browser sends it
                **{f"enabled_{k}": "on" for k, rule in rules_of(one).items() if rule.enabled}}
    admin.post(reverse("console:alerts"), {**as_shown, f"threshold_{reclaimable}": "3000"})  # one threshold edited
    ones = rules_of(one)
    assert ones[reclaimable].custom and threshold_of(ones[reclaimable]) == 3000  # the table's own now
    assert not any(r.custom for k, r in ones.items() if k != reclaimable)  # the others follow the lake still
    admin.post(reverse("console:alerts"), as_shown)  # "as the lake" ticked again: it follows again
    assert threshold_of(rules_of(one)[reclaimable]) == 2000 and not rules_of(one)[reclaimable].custom
    (first, second) = AuditEvent.objects.filter(action="alert.defaults.changed").order_by("pk")
    assert first.parameters[reclaimable] == {"enabled": True, "threshold": 1000}
    assert second.parameters[AlertKind.PLAN_STALE]["enabled"] is False


def test_alerts_setup_is_changed_by_admins_only_with_csrf(db) -> None:
    viewer = login("viewer")
    page = viewer.get(SETUP)
    assert page.status_code == 200 and b"Only admins change the set-up." in page.content
    assert b'id="channel-add"' not in page.content
    assert viewer.post(SETUP, lake_form()).status_code == 403
    operator = login("operator")
    assert operator.post(reverse("console:alert_channel_add"), {"kind": "email", "target": "a@b.c"}).status_code == 403
    assert operator.post(reverse("console:alert_channel_test"), {"channel": "settings:email:1"}).status_code == 403
    admin = login("admin")
    assert admin.get(reverse("console:alert_channel_add")).status_code == 405
    assert admin.get(reverse("console:alert_channel_test")).status_code == 405
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(person("csrf-admin", "admin"))
    assert guarded.post(reverse("console:alert_channel_add"), {"kind": "email", "target": "a@b.c"}).status_code == 403
    assert not AlertChannel.objects.exists() and not AuditEvent.objects.filter(action="alert.defaults.changed")
    assert Client().get(SETUP).status_code == 302  # to the login page
    channel = AlertChannel.objects.create(kind="email", target="kept@cleanline.test")
    for change in ("on", "off", "remove"):
        assert operator.post(reverse(f"console:alert_channel_{change}", args=[channel.pk])).status_code == 403
    outsider = Client()
    outsider.force_login(User.objects.create_user("outsider"))  # no role: sees nothing
    assert outsider.get(SETUP).status_code == 404
    assert outsider.post(reverse("console:alert_channel_remove", args=[channel.pk])).status_code == 404
    assert AlertChannel.objects.filter(pk=channel.pk, enabled=True).exists()
    assert Table.objects.count() == 0
