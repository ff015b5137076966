"""History over time (issue 30): the sync task keeps a snapshot of each table's figures (files,
bytes, reclaimable bytes, bytes reclaimed, active timeline) when they changed and at least
daily, old ones deleted after CLEANLINE_HISTORY_DAYS; the History pages chart them per table and
lake-wide (a point a day, the last figures up to that day, summed over tables), and the API
answers the same."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console import services, tasks
from console.models import Table
from console.models_history import TableSnapshot
from console.services.history import snapshot_record
from tests.console.helpers import SHORT_RETENTION, completed_commits, login, person
from tests.helpers import FIXTURES, unzip_table

pytestmark = pytest.mark.django_db

TABLE = "sample_table/cow/v9_txns_simple_nometa"


@pytest.fixture
def registered(settings, tmp_path, monkeypatch: pytest.MonkeyPatch) -> Table:
    """A registered table not synced yet; Celery tasks run here."""
    from console.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    path = unzip_table(FIXTURES / f"{TABLE}.zip", tmp_path / "sales")
    return services.table_register(path=str(path), user=None, enqueue=False)


def figures(table: Table) -> list[dict[str, Any]]:
    return [s.figures() for s in TableSnapshot.objects.filter(table=table).order_by("at", "pk")]


def test_history_the_sync_task_records_a_snapshot_when_something_changed_and_daily(registered: Table,
                                                                                  settings) -> None:
    tasks.sync_table.delay(registered.pk)  # the first sync changes everything
    table = Table.objects.get(pk=registered.pk)
    (first,) = figures(table)
    assert first == {"files": table.total_files, "bytes": table.total_bytes,
                     "reclaimable_bytes": table.reclaimable["bytes"], "reclaimed_bytes": 0,
                     "active_instants": table.active_instants, "backlog_delta_commits": None,
                     "backlog_log_bytes": None}  # a copy-on-write table has no compaction backlog
    assert first["files"] > 0 and first["bytes"] > 0 and first["active_instants"]
    tasks.sync_table.delay(table.pk)  # nothing changed: no snapshot
    assert len(figures(table)) == 1
    services.savepoint_create(table=table, user=None, instant_time=completed_commits(table)[-1], comment="")
    tasks.sync_table.delay(table.pk)  # the savepoint's instant: one more on the active timeline
    assert [f["active_instants"] for f in figures(table)] == [first["active_instants"], first["active_instants"] + 1]

    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION,
                                                          enqueue=False))
    plan = services.plan_run(plan=services.plan_approve(plan=plan, user=None))
    assert plan.progress_bytes > 0
    tasks.sync_table.delay(table.pk)
    last = figures(table)[-1]
    assert last["reclaimed_bytes"] == plan.progress_bytes and last["files"] < first["files"]

    latest = TableSnapshot.objects.filter(table=table).latest("at")
    assert snapshot_record(table=table, changed=False, now=latest.at + timedelta(hours=23)) is None
    daily = snapshot_record(table=table, changed=False, now=latest.at + timedelta(hours=25))
    assert daily is not None and daily.figures() == last  # at least one a day, unchanged figures
    settings.CLEANLINE_HISTORY_DAYS = 2
    later = snapshot_record(table=table, changed=False, now=daily.at + timedelta(days=5))
    assert list(TableSnapshot.objects.filter(table=table)) == [later]  # kept 2 days: the older ones went
    TableSnapshot.objects.filter(pk=later.pk).update(files=0)  # as if the figures had changed since
    settings.CLEANLINE_HISTORY_DAYS = 0
    assert snapshot_record(table=table, changed=False, now=later.at + timedelta(minutes=1)) is not None
    assert TableSnapshot.objects.filter(table=table).count() == 1  # the newest always stays


def test_history_pages_and_api_chart_each_table_and_the_lake_a_point_a_day(console_table, settings) -> None:
    one, two = console_table(TABLE), console_table("sample_table/cow/v8_nonpartitioned")
    viewer = login("viewer")
    assert 'id="history-empty"' in viewer.get(reverse("console:table_history", args=[one.pk])).content.decode()
    now = timezone.now()
    snapshot_record(table=one, now=now - timedelta(days=3))
    Table.objects.filter(pk=one.pk).update(total_files=one.total_files + 10,
                                           layout_summary=one.layout_summary | {"reclaimable": {"bytes": 12345}})
    snapshot_record(table=one, now=now - timedelta(days=1))
    snapshot_record(table=two, now=now - timedelta(days=2))
    one.refresh_from_db()

    page = viewer.get(reverse("console:table_history", args=[one.pk]), {"days": "7"})
    assert page.status_code == 200
    history = page.context["history"]
    series = [None, None, None, one.total_files - 10, one.total_files - 10, one.total_files, one.total_files]
    assert history.series["files"] == series  # the last figures up to each day; nothing before the first snapshot
    chart = page.context["charts"]["files"]
    assert chart["datasets"][0]["data"] == series[3:] and chart["labels"] == history.days[3:]  # from the first
    html = page.content.decode()
    assert 'data-chart="history-bytes"' in html and 'id="history-files"' in html and html.count("<tr>") == 3

    lake = viewer.get(reverse("console:history"), {"days": "7"}).context["history"]
    assert lake.series["files"][-1] == one.total_files + two.total_files
    assert lake.series["files"][-3] == one.total_files - 10 + two.total_files  # two's first day
    assert lake.series["files"][-4] == one.total_files - 10  # before two's first snapshot: one's alone
    assert lake.series["bytes"][-1] == one.total_bytes + two.total_bytes
    assert lake.series["reclaimable_bytes"][-1] == 12345 + two.reclaimable["bytes"]
    assert lake.series["active_instants"][-1] == one.active_instants + two.active_instants
    assert 'id="history-link"' in viewer.get(reverse("console:home")).content.decode()

    admin = person("ada", "admin")
    token = services.token_create(actor=admin, owner=admin, name="ci")[1]
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    answer = Client().get(f"/api/v1/tables/{one.pk}/history", {"days": 7}, **bearer)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["files"] == series and len(body["days"]) == 7 and len(body["snapshots"]) == 2
    assert body["snapshots"][1]["files"] == one.total_files
    assert Client().get("/api/v1/history", {"days": 7}, **bearer).json()["files"] == lake.series["files"]
    assert len(Client().get("/api/v1/history", **bearer).json()["days"]) == 90
    settings.CLEANLINE_HISTORY_DAYS = 30
    assert len(Client().get("/api/v1/history", **bearer).json()["days"]) == 30  # every day kept
    bad = Client().get("/api/v1/history", {"days": 0}, **bearer)
    assert bad.status_code == 400 and "query.days" in bad.json()["detail"]
    assert Client().get("/api/v1/history").status_code == 401
    nobody = Client()
    nobody.force_login(User.objects.create_user("nobody"))  # no role
    assert nobody.get(reverse("console:history")).status_code == 404
