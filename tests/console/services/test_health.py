"""The table doctor in the console (console/services/health.py, console/selectors/health.py,
console/api/health.py): findings checked at sync time and stored, the same on the page, in the API
and from `cleanline doctor --json`; repairs requested, approved by a second admin, run under the
table lock, stale when the table asks for more than the preview; every step audited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, TestCase

from console import services
from console.models import AuditEvent, Table
from console.models_approvals import ApprovalStatus
from console.models_health import Repair, TableHealth
from console.selectors import health as selectors
from console.services import health
from console.tasks import sync_table
from tests.console.helpers import leave_markers, login, person
from tests.doctor.helpers import OLD, age_tree
from tests.helpers import fake_failed_write
from timeline import HudiTable
from timeline.cli import main
from timeline.rollback import rollback

pytestmark = pytest.mark.django_db

V9_COW = "sample_table/cow/v9_txns_simple_nometa"


@pytest.fixture(autouse=True)
def every_sync_checks(settings) -> None:
    """Every sync runs the doctor (CLEANLINE_HEALTH_INTERVAL_SECONDS=0) unless a test says otherwise."""
    settings.CLEANLINE_HEALTH_INTERVAL_SECONDS = 0


def folder(table: Table) -> Path:
    """A registered local table's folder (its path is a file: URI)."""
    return Path(table.path.removeprefix("file:"))


def cli_findings(path: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    main(["doctor", path, "--json"])
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return found


def synced(table: Table) -> TableHealth:
    """The sync task, as beat or a request sends it (run here, eagerly), and the health it stored."""
    sync_table.apply(args=[table.pk])
    return TableHealth.objects.get(table=table)


def api(user: Any, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    secret = services.token_create(actor=user, owner=user, name=f"t-{method}-{path}"[:90])[1]
    client, headers = Client(), {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        if method == "GET":
            return client.get("/api/v1" + path, **headers)
        return client.post("/api/v1" + path, json.dumps(body or {}), content_type="application/json", **headers)


def test_health_sync_stores_the_doctors_findings_as_the_cli_prints_them(console_table, capsys) -> None:
    table = console_table(V9_COW)
    assert synced(table).findings == [] and TableHealth.objects.get(table=table).worst == ""
    leave_markers(folder(table))
    stored = synced(table)
    cli = cli_findings(table.path, capsys)
    assert [f["kind"] for f in cli] == ["leftover-markers"]
    assert stored.findings == cli and stored.worst == "info" and not stored.error
    viewer = person("v", "viewer")
    answer = api(viewer, "GET", f"/tables/{table.pk}/health").json()
    assert answer["findings"] == cli and answer["healthy"] is False and answer["worst"] == "info"
    page = login("viewer").get(f"/tables/{table.pk}/").content.decode()
    assert 'id="health-findings"' in page and cli[0]["summary"] in page and "leftover-markers" in page
    assert f"/tables/{table.pk}/health/leftover-markers/repair" in page  # repairable: its preview is offered
    dashboard = login("operator").get("/").content.decode()
    assert 'id="lake-health-list"' in dashboard and "leftover-markers" in dashboard


def test_health_unchanged_timeline_checked_again_after_the_interval_or_when_asked(console_table, settings) -> None:
    table = console_table(V9_COW)
    settings.CLEANLINE_HEALTH_INTERVAL_SECONDS = 3600
    assert synced(table).findings == []
    leave_markers(folder(table))  # no instant file changes: the fingerprint stays
    assert synced(table).findings == []
    with TestCase.captureOnCommitCallbacks(execute=True):  # a sync someone asks for checks again at once
        services.table_sync_request(table=table, user=None)
    assert [f["kind"] for f in TableHealth.objects.get(table=table).findings] == ["leftover-markers"]
    shutil.rmtree(folder(table) / ".hoodie" / ".temp")
    assert synced(table).findings != []  # checked less than the interval ago
    settings.CLEANLINE_HEALTH_INTERVAL_SECONDS = 0
    assert synced(table).findings == []


def test_health_a_changed_timeline_is_checked_at_each_sync_and_listed_once_an_interval(console_table, settings) -> None:
    """A table that commits every few minutes is not listed at every sync: before the interval,
    a changed timeline runs only the checks that read the timeline (leftover markers found at
    once), keeping the listing checks' findings and time (an orphan waits); after it, the whole
    diagnosis runs (the orphan found)."""
    table = console_table(V9_COW)
    settings.CLEANLINE_HEALTH_INTERVAL_SECONDS = 3600
    first = synced(table)
    assert first.findings == []
    partition = next(p for p in folder(table).iterdir() if p.is_dir() and not p.name.startswith("."))
    orphan = partition / "orphan_0-0-0_20261102000000000.parquet"
    shutil.copy(next(partition.glob("*.parquet")), orphan)
    age_tree(folder(table))  # the orphan 10 days old
    leave_markers(folder(table))
    lake = HudiTable.open(table.path)
    newest = lake.timeline.commits().completed().last()
    assert newest is not None
    lake.maintenance().create_savepoint(newest.requested_time, user="t", comment="")
    changed = synced(table)
    assert changed.fingerprint != first.fingerprint and changed.checked_at == first.checked_at
    assert [f["kind"] for f in changed.findings] == ["leftover-markers"]
    settings.CLEANLINE_HEALTH_INTERVAL_SECONDS = 0
    listed = synced(table)
    assert {f["kind"] for f in listed.findings} == {"leftover-markers", "orphan-files"}
    assert listed.checked_at > first.checked_at


def copy_of(table: Table, where: Path) -> Table:
    """Another registered copy of a registered table's folder, synced."""
    copied = shutil.copytree(folder(table), where / folder(table).name)
    other = services.table_register(path=str(copied), user=None, enqueue=False)
    services.table_sync(table=other)
    return other


def test_health_lake_list_worst_first_and_an_unreadable_table_first(console_table, tmp_path: Path) -> None:
    healthy = console_table(V9_COW)
    info, warned, broken = (copy_of(healthy, tmp_path / name) for name in ("info", "warned", "broken"))
    leave_markers(folder(info))
    fake_failed_write(folder(warned), OLD, markers=False)
    age_tree(folder(warned))
    for table in (healthy, info, warned, broken):
        synced(table)
    shutil.rmtree(folder(broken) / ".hoodie")
    health.health_check(table=broken, force=True)
    rows = selectors.lake_health()
    assert [r.table.pk for r in rows] == [broken.pk, warned.pk, info.pk, healthy.pk]
    assert rows[0].health is not None and rows[0].health.error and rows[0].health.rank == 4
    assert [r.health.worst for r in rows[1:] if r.health] == ["warning", "info", ""]


def test_health_repair_requested_previewed_approved_by_a_second_admin_and_run(console_table, capsys,
                                                                             settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    table = console_table(V9_COW)
    instant = leave_markers(folder(table))
    synced(table)
    operator, admin, second = person("op", "operator"), person("a1", "admin"), person("a2", "admin")
    preview = api(operator, "GET", f"/tables/{table.pk}/health/leftover-markers/repair").json()["plan"]
    assert [(c["action"], c["target"].rsplit("/", 1)[-1]) for c in preview["changes"]] == [("delete folder", instant)]
    assert api(person("v", "viewer"), "POST", f"/tables/{table.pk}/health/leftover-markers/repair").status_code == 403
    asked = api(operator, "POST", f"/tables/{table.pk}/health/leftover-markers/repair")
    assert asked.status_code == 201, asked.content
    repair = Repair.objects.get(pk=asked.json()["id"])
    assert repair.status == ApprovalStatus.DRAFT and repair.plan["changes"] == preview["changes"]
    again = api(admin, "POST", f"/tables/{table.pk}/health/leftover-markers/repair")
    assert again.status_code == 409 and "already" in again.json()["detail"]
    operator.groups.set(second.groups.all())  # the requester, made an admin, still may not approve their own
    refused = api(operator, "POST", f"/tables/{table.pk}/repairs/{repair.pk}/approve")
    assert refused.status_code == 409 and "must differ" in refused.json()["detail"]
    done = api(second, "POST", f"/tables/{table.pk}/repairs/{repair.pk}/approve")  # run eagerly on commit
    assert done.status_code == 202, done.content
    repair.refresh_from_db()
    assert repair.status == ApprovalStatus.COMPLETED, repair.error
    assert [c["action"] for c in repair.result["done"]] == ["delete folder"]
    assert not (folder(table) / ".hoodie" / ".temp" / instant).exists()
    assert TableHealth.objects.get(table=table).findings == [] == cli_findings(table.path, capsys)
    assert synced(table).findings == []
    actions = list(AuditEvent.objects.filter(table=table, action__startswith="repair.").order_by("pk")
                   .values_list("action", flat=True))
    assert actions == ["repair.requested", "repair.refused", "repair.approval.refused", "repair.approved",
                       "repair.completed"]
    assert f"/tables/{table.pk}/repairs/{repair.pk}" in login("viewer").get("/audit").content.decode()


def test_health_repair_turns_stale_when_the_table_asks_for_more_than_the_preview(console_table) -> None:
    table = console_table(V9_COW)
    table.write_options = {"hoodie.clean.failed.writes.policy": "LAZY"}  # the writers' policy: the commit is offered
    table.save(update_fields=["write_options"])
    written = fake_failed_write(folder(table), OLD, markers=False)
    age_tree(folder(table))
    finding = next(f for f in synced(table).findings if f["kind"] == "stale-pending")
    assert finding["repairable"]
    repair = health.repair_request(table=table, user=person("op", "operator"), kind="stale-pending")
    late = written[0].with_name(written[0].name.replace("9-9-9", "7-7-7"))
    shutil.copy(written[0], late)  # a file the rollback would now delete that the preview never listed
    with TestCase.captureOnCommitCallbacks(execute=True):
        health.repair_approve(repair=repair, user=person("a", "admin"))
    repair.refresh_from_db()
    assert repair.status == ApprovalStatus.STALE and "did not preview" in repair.error
    assert all(f.exists() for f in [*written, late])  # nothing changed
    assert AuditEvent.objects.filter(table=table, action="repair.stale").exists()
    page = login("viewer").get(f"/tables/{table.pk}/repairs/{repair.pk}").content.decode()
    assert 'id="repair-stale"' in page and "did not preview" in page


def test_health_repair_refused_for_a_kind_without_a_finding_and_pages_answer_by_role(console_table) -> None:
    table = console_table(V9_COW)
    synced(table)
    with pytest.raises(Exception, match="no leftover-markers finding"):
        health.repair_request(table=table, user=None, kind="leftover-markers")
    assert AuditEvent.objects.filter(table=table, action="repair.refused").exists()
    viewer, operator = login("viewer"), login("operator")
    preview = viewer.get(f"/tables/{table.pk}/health/leftover-markers/repair")
    assert preview.status_code == 200 and 'id="repair-unavailable"' in preview.content.decode()
    url = f"/tables/{table.pk}/health/leftover-markers/repair/request"
    assert operator.get(url).status_code == 405
    assert viewer.post(url).status_code == 403
    assert Client().post(url).status_code == 302  # to the login page
    outsider = Client()
    outsider.force_login(User.objects.create_user("outsider", password="pw"))  # no role
    assert outsider.get(f"/tables/{table.pk}/health/leftover-markers/repair").status_code == 404
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(person("op2", "operator"))
    assert csrf.post(url).status_code == 403


def scrape() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    response = Client().get("/metrics")
    assert response.status_code == 200
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.content.decode()) for s in family.samples}


def info_and_warning(console_table: Any, tmp_path: Path) -> tuple[Table, Table]:
    """Two synced copies of a table: one with leftover markers (info), one with a stale write
    (warning)."""
    table = console_table(V9_COW)
    other = copy_of(table, tmp_path / "other")
    leave_markers(folder(table))
    fake_failed_write(folder(other), OLD, markers=False)
    age_tree(folder(other))
    synced(table), synced(other)
    return table, other


def test_health_metrics_a_gauge_per_finding_kind(console_table, tmp_path: Path) -> None:
    table, other = info_and_warning(console_table, tmp_path)
    samples = scrape()

    def findings(of: Table, kind: str) -> float | None:
        return samples.get(("cleanline_table_findings", frozenset({("table_id", str(of.pk)), ("table", of.name),
                                                                   ("kind", kind)})))

    assert findings(table, "leftover-markers") == 1 and findings(table, "stale-pending") == 0
    assert findings(other, "stale-pending") == 1 and findings(other, "leftover-markers") == 0
    assert samples[("cleanline_tables_with_finding", frozenset({("kind", "leftover-markers"),
                                                               ("severity", "info")}))] == 1
    assert samples[("cleanline_tables_with_finding", frozenset({("kind", "orphan-files"), ("severity", "error")}))] == 0
    worst = {of.pk: samples[("cleanline_table_health_worst", frozenset({("table_id", str(of.pk)), ("table", of.name)}))]
             for of in (table, other)}
    assert worst == {table.pk: 1, other.pk: 2}


def test_health_alerts_one_rule_per_severity_info_off_by_default(console_table, tmp_path: Path) -> None:
    from console.alerts import check_alerts, rules_of
    from console.models import Alert, AlertKind

    table, other = info_and_warning(console_table, tmp_path)
    rules = rules_of(table)
    assert rules[AlertKind.HEALTH_ERROR].enabled and rules[AlertKind.HEALTH_WARNING].enabled
    assert not rules[AlertKind.HEALTH_INFO].enabled  # info findings are listed, not paged
    check_alerts()
    opened = {(a.table_id, a.kind, a.key) for a in Alert.objects.filter(resolved_at=None)}
    assert (other.pk, AlertKind.HEALTH_WARNING, "finding:stale-pending") in opened
    assert not any(kind.startswith("health_") for table_id, kind, _ in opened if table_id == table.pk)
    rules[AlertKind.HEALTH_INFO].enabled = True
    rules[AlertKind.HEALTH_INFO].save()
    check_alerts()
    alert = Alert.objects.get(table=table, kind=AlertKind.HEALTH_INFO, resolved_at=None)
    assert alert.key == "finding:leftover-markers" and "leftover-markers" in alert.message
    shutil.rmtree(folder(table) / ".hoodie" / ".temp")
    synced(table)
    check_alerts()
    alert.refresh_from_db()
    assert alert.resolved_at is not None


def test_health_repair_never_approved_by_an_account_its_requester_made(console_table, settings) -> None:
    from django.core.exceptions import ValidationError

    from console.models import RoleGrant

    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    table = console_table(V9_COW)
    leave_markers(folder(table))
    synced(table)
    ann, sock = person("ann", "admin"), person("sock", "admin")
    RoleGrant.objects.create(user=sock, role="admin", account_created=True, status="granted", requested_by=ann)
    repair = health.repair_request(table=table, user=ann, kind="leftover-markers")
    with pytest.raises(ValidationError, match="created or given its role by the requester"):
        health.repair_approve(repair=repair, user=sock)
    page = Client()
    page.force_login(sock)
    shown = page.get(f"/tables/{table.pk}/repairs/{repair.pk}").content.decode()
    assert "Approve and run" not in shown and "another admin must approve" in shown
    settings.CLEANLINE_APPROVER_MUST_DIFFER = False  # one admin may approve their own once the rule is off
    with TestCase.captureOnCommitCallbacks(execute=False):
        assert health.repair_approve(repair=repair, user=ann).status == ApprovalStatus.APPROVED


def test_health_repair_waits_for_a_busy_table_and_fails_when_its_approver_is_gone(console_table) -> None:
    from console.services import TableBusy, table_lock
    from console.tasks import run_repair

    table = console_table(V9_COW)
    instant = leave_markers(folder(table))
    synced(table)
    repair = health.repair_request(table=table, user=None, kind="leftover-markers")
    approver = person("a", "admin")
    with TestCase.captureOnCommitCallbacks(execute=False):  # run below, by hand
        health.repair_approve(repair=repair, user=approver)
    with table_lock(table, "clean-plan:1"), pytest.raises(TableBusy):
        health.repair_run(repair=Repair.objects.get(pk=repair.pk))
    assert Repair.objects.get(pk=repair.pk).status == ApprovalStatus.APPROVED  # untouched: the task retries
    assert (folder(table) / ".hoodie" / ".temp" / instant).exists()
    approver.is_active = False
    approver.save()
    assert run_repair.apply(args=[repair.pk]).get() == "refused"
    repair.refresh_from_db()
    assert repair.status == ApprovalStatus.FAILED and "approver" in repair.error
    assert (folder(table) / ".hoodie" / ".temp" / instant).exists()
    assert AuditEvent.objects.filter(table=table, action="repair.failed").exists()


def test_health_thresholds_from_the_doctor_settings(console_table, settings) -> None:
    table = console_table(V9_COW)
    fake_failed_write(folder(table), OLD, markers=False)
    orphan = folder(table) / "region=eu" / "orphan_0-0-0_20261102000000000.parquet"
    shutil.copy(next((folder(table) / "region=eu").glob("*.parquet")), orphan)
    age_tree(folder(table))  # 10 days old
    assert [f["kind"] for f in synced(table).findings] == ["stale-pending"]  # the pending write holds orphans back
    settings.CLEANLINE_DOCTOR_STALE_AFTER_MINUTES = 10 * 365 * 24 * 60  # ten years
    assert synced(table).findings == []
    assert selectors.repair_preview(table, "stale-pending")[0] is None  # the preview uses the same thresholds
    rollback(HudiTable.open(table.path), OLD)
    age_tree(folder(table))
    assert [f["kind"] for f in synced(table).findings] == ["orphan-files"]
    settings.CLEANLINE_DOCTOR_ORPHAN_MIN_AGE_HOURS = 11 * 24
    assert synced(table).findings == [] and orphan.exists()
    settings.CLEANLINE_DOCTOR_CLEAN_LAG_COMMITS = 7
    assert selectors.doctor_settings(table).clean_lag_commits == 7
