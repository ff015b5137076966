"""One time zone, every page (issue 43): a viewer in Europe/Berlin walks every page of the
console (each URL pattern, its ids filled from a seeded database with a real fixture table:
a clean plan, a savepoint, a failed write, a rollback job, a repair, an archival, an alert, a
lock refusal, a token) and every time on it is in Berlin's zone with the zone named, the label
agreeing with the value; a raw instant number stands only beside a readable time; the flash
messages, the plan's CSV and the alert e-mails too."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils import timezone

from console import alerts, services
from console.models import Alert, AlertKind, Archival, AuditEvent, Job, Table, TableLock
from console.models_approvals import ApprovalStatus
from console.models_compaction import Compaction
from console.models_health import Repair, TableHealth
from console.models_versions import VersionChange
from console.services.locks import _busy as busy
from console.urls import console_patterns
from tests.console.helpers import SHORT_RETENTION, person
from tests.helpers import fake_failed_write
from timeline.instant import instant_time_of

pytestmark = pytest.mark.django_db

BERLIN = ZoneInfo("Europe/Berlin")  # CET in winter, CEST in summer: a label must agree with its date
LABELS = ("CET", "CEST")

_TIME = re.compile(r'<time\b([^>]*)>(.*?)</time>', re.S)
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
# A time in text: a date and time of day, or a time of day alone (HH:MM:SS), then what follows it.
_DATE_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d(?::\d\d)?)( (?:UTC[+-]\d+|[A-Z]{2,5}))?")
_TIME_OF_DAY = re.compile(r"(?<![\d:-])(\d\d:\d\d:\d\d)(?![\d:])( [A-Z]{2,5})?")
_INSTANT = re.compile(r"(?<![\w.])\d{14,17}(?![\w.])")


def label_of(naive: datetime) -> str:
    return naive.replace(tzinfo=BERLIN).tzname() or ""


def problems(page: str) -> list[str]:
    """What is wrong with the times of one page (empty when every one is right)."""
    found = []
    # Not checked: what runs or styles, the tab's title, and <pre>: a state file as Hudi wrote it.
    body = re.sub(r"<(script|style|head|pre)\b.*?</\1>", "", page, flags=re.S)
    for attributes, text in _TIME.findall(body):
        attrs = dict(_ATTR.findall(attributes))
        moment = datetime.fromisoformat(attrs["datetime"]).astimezone(BERLIN)
        text = html.unescape(text)
        if attrs.get("data-local", "datetime") == "datetime":
            want = f"{moment:%Y-%m-%d %H:%M:%S} {moment.tzname()}"
            if text != want:
                found.append(f"<time> {attrs['datetime']} shown as {text!r}, not {want!r}")
        elif not (attrs.get("title", "").endswith(f" {moment.tzname()}") or attrs.get("title", "").endswith(" UTC")):
            found.append(f"<time> {attrs['datetime']} ({text!r}) without its zone in its title")
    # Every <time> is checked: what is left is the text the helper did not write as one.
    text = html.unescape(re.sub(r"<[^>]+>", " ", _TIME.sub(" [time] ", body)))
    text = re.sub(r"[ \t]+", " ", text)
    for match in _DATE_TIME.finditer(text):
        day, clock, label = match.group(1), match.group(2), (match.group(3) or "").strip()
        naive = datetime.fromisoformat(f"{day} {clock}")
        if label not in LABELS:
            found.append(f"{match.group(0)!r}: no zone, or another zone than the viewer's")
        elif label != label_of(naive):
            found.append(f"{match.group(0)!r}: the label disagrees with the date ({label_of(naive)})")
    for match in _TIME_OF_DAY.finditer(_DATE_TIME.sub(" ", text)):
        if (match.group(2) or "").strip() not in LABELS:
            found.append(f"{match.group(0)!r}: a time of day without the viewer's zone")
    for line in text.splitlines():
        for match in _INSTANT.finditer(line):
            if "[time]" not in line and not _DATE_TIME.search(line):
                found.append(f"raw instant {match.group(0)} with no readable time beside it: {line.strip()[:120]!r}")
    return found


def route_names(pattern: URLPattern) -> list[str]:
    return list(pattern.pattern.converters)


@pytest.fixture
def seeded(console_table, settings, tmp_path: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """One table with something on every page: a plan, a savepoint, a failed write, a
    rollback job, health with a repair, an archival, an alert, a lock refusal in the audit."""
    settings.CLEANLINE_ALERT_EMAILS = ["ada@example.com", "ops@example.com"]
    table: Table = console_table("sample_table/cow/v9_txns_simple_nometa")
    ada, bob = person("ada", "admin"), person("bob", "admin")
    ada.email = "ada@example.com"
    ada.save()
    services.preference_time_zone(user=ada, time_zone="Europe/Berlin")
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("-requested_time")[0].requested_time
    services.savepoint_create(table=table, user=ada, instant_time=commit, comment="before the test",
                              writers_stopped=True)
    failed = instant_time_of(datetime.now(UTC) - timedelta(hours=3), "LOCAL")
    fake_failed_write(Path(table.path.removeprefix("file:")), failed, markers=True)
    services.table_sync(table=table)
    plan = services.plan_build(plan=services.plan_request(table=table, user=bob, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    job = Job.objects.create(table=table, kind=Job.Kind.ROLLBACK, target=failed, requested_by=ada)
    TableHealth.objects.update_or_create(table=table, defaults={"checked_at": timezone.now(), "findings": []})
    repair = Repair.objects.create(table=table, kind="orphan_files", changes=1, requested_by=bob,
                                   decided_by=ada, decided_at=timezone.now(), status=ApprovalStatus.APPROVED)
    archival = Archival.objects.create(table=table, instants=[{"requested_time": commit, "action": "commit"}],
                                       requested_by=bob, decided_by=ada, decided_at=timezone.now(),
                                       status=ApprovalStatus.REJECTED)
    alert = Alert.objects.create(table=table, kind=AlertKind.APPROVAL_WAITING, key=f"plan:{plan.pk}",
                                 message=f"clean plan #{plan.pk} waits, requested at "
                                         f"{plan.requested_at:%Y-%m-%d %H:%M} UTC; about {commit}")
    lock = TableLock.objects.create(table=table, holder="clean:1", token="t", acquired_at=timezone.now(),
                                    heartbeat_at=timezone.now(), expires_at=timezone.now() + timedelta(hours=1))
    services.audit(user=ada, action="lock.refused", table=table,
                   result=str(busy(table, lock)))  # a sentence the console wrote in UTC
    lock.delete()
    token, _ = services.token_create(actor=ada, owner=ada, name="laptop")
    compaction = Compaction.objects.create(table=table, requested_by=bob, plan={})
    change = VersionChange.objects.create(table=table, requested_by=bob, from_version=9, target=8, plan={})
    return {"table": table, "ada": ada, "failed": failed, "commit": commit, "plan": plan, "job": job,
            "repair": repair, "archival": archival, "alert": alert, "token": token, "compaction": compaction,
            "version_change": change}


def test_every_page_shows_every_time_in_the_viewers_zone_named(seeded: dict[str, Any]) -> None:
    table, ada = seeded["table"], seeded["ada"]
    written = table.instants.get(requested_time=seeded["commit"], action="commit")
    ids = {"pk": table.pk, "instant_id": written.pk, "state": "completed",
           "plan_id": seeded["plan"].pk, "change_id": seeded["plan"].pk, "instant": seeded["commit"],
           "savepoint": seeded["commit"], "archival_id": seeded["archival"].pk, "job_id": seeded["job"].pk,
           "kind": "orphan_files", "repair_id": seeded["repair"].pk, "channel_id": 1,
           "token_id": seeded["token"].pk, "user_id": ada.pk, "grant_id": 1, "link_id": 1,
           "index": "column_stats", "action": "rebuild", "compaction_id": seeded["compaction"].pk}
    own = {"rollback_preview": {"instant": seeded["failed"]},
           **{name: {"change_id": seeded["version_change"].pk}
              for name in ("version_change", "version_change_approve", "version_change_reject")}}
    client = Client()
    client.force_login(ada)
    walked, wrong = [], {}
    for pattern in console_patterns:
        unknown = [name for name in route_names(pattern) if name not in ids]
        assert not unknown, f"{pattern.name}: seed a row and give an id for {unknown} above, to walk its page too"
        kwargs = {name: own.get(str(pattern.name), {}).get(name, ids[name]) for name in route_names(pattern)}
        url = reverse(f"console:{pattern.name}", kwargs=kwargs)
        response = client.get(url)
        if response.status_code == 405:  # an action (POST only): its message is checked below
            continue
        assert response.status_code in (200, 302), (url, response.status_code)
        if response.status_code == 302 or "html" not in response.get("Content-Type", ""):
            continue
        walked.append(pattern.name)
        if found := problems(response.content.decode()):
            wrong[url] = found
    assert not wrong, wrong
    assert len(walked) >= 30, walked  # every page, not a few
    # A flash message naming an instant: the raw number only beside its readable time.
    page = client.post(reverse("console:savepoint_delete", args=[table.pk, seeded["commit"]]), {"confirm": "no"},
                       follow=True).content.decode()
    assert "to delete it" in page and not problems(page)
    # The plan's CSV: an instant time in a reason keeps its readable Berlin time beside it.
    csv = b"".join(client.get(reverse("console:plan_csv", args=[table.pk, seeded["plan"].pk])).streaming_content)
    for number in set(_INSTANT.findall(csv.decode())):
        assert re.search(rf"{number} \(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d CES?T\)", csv.decode()), number


def test_the_checker_finds_a_time_without_its_zone_or_with_another() -> None:
    """The walk's checker itself: what it must refuse."""
    winter, summer = "2024-01-15 10:00:00", "2024-07-15 10:00:00"
    assert problems(f"<p>{winter} CET</p><p>{summer} CEST</p>") == []
    assert problems(f"<p>{winter}</p>")  # no zone
    assert problems(f"<p>{winter} UTC</p>")  # another zone than the viewer's
    assert problems(f"<p>{summer} CET</p>")  # CET on a summer date
    assert problems("<p>last heartbeat 10:00:00</p>")
    assert problems("<p>Savepoint 20240115100000000 deleted.</p>")
    assert problems('<time datetime="2024-01-15T10:00:00+00:00" data-local="datetime">2024-01-15 10:00:00 CET</time>')
    assert problems('<time datetime="2024-01-15T10:00:00+00:00" data-local="datetime">2024-01-15 11:00:00 CET</time>'
                    ) == []


def test_alert_emails_show_times_in_each_readers_zone(seeded: dict[str, Any]) -> None:
    mail.outbox.clear()
    alerts.send_email(seeded["alert"])
    by_reader = {tuple(m.to): m.body for m in mail.outbox}
    assert set(by_reader) == {("ada@example.com",), ("ops@example.com",)}  # one e-mail per zone
    ada_reads, ops_reads = by_reader[("ada@example.com",)], by_reader[("ops@example.com",)]
    fired = seeded["alert"].fired_at
    assert f"Fired: {fired.astimezone(BERLIN):%Y-%m-%d %H:%M:%S} {fired.astimezone(BERLIN).tzname()}" in ada_reads
    assert f"Fired: {fired.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" in ops_reads  # the console's TIME_ZONE
    requested = seeded["plan"].requested_at.astimezone(BERLIN)
    assert f"requested at {requested:%Y-%m-%d %H:%M}:00 {requested.tzname()}" in ada_reads
    assert re.search(rf"{seeded['commit']} \(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d CES?T\)", ada_reads)
    assert not any(p for p in problems(f"<p>{ada_reads}</p>") if "instant" not in p)
    assert AuditEvent.objects.filter(action="lock.refused").exists()
